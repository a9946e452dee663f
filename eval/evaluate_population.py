r"""Evaluates every exported TFLite file of a population run (docs/artifacts/predictions.md).

    bazel run //eval:evaluate_population -- --run_dir=/path/to/run --batch_size=256 \
        --num_threads=2

Writes `<run>/predictions/<variant>/<k>/<split>.npz` per file and split (existing ones are
skipped), the Keras reference predictions and `<run>/eval/agreement/<split>.json` (top-1
agreement and logit error of every file against the float32 file of the same member and
against Keras), and prints the per-variant agreement table. Bad input (a truncated or
non-TFLite file, a model input shape that does not match the data set, an output directory
that cannot be written) is a one-line error and exit status 1. The flags and the body are
`tf_forget.commands.evaluate_population_command`'s.
"""

from tf_forget.cli import app as cli_app
from tf_forget.commands import evaluate_population_command

if __name__ == "__main__":
  cli_app.run_command(evaluate_population_command, __doc__)
