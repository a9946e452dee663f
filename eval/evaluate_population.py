r"""Evaluates every exported TFLite file of a population run (docs/artifacts/predictions.md).

    bazel run //eval:evaluate_population -- --run_dir=/path/to/run --batch_size=256 \
        --num_threads=2

Writes `<run>/predictions/<variant>/<k>/<split>.npz` per file and split (existing ones are
skipped), the Keras reference predictions and `<run>/eval/agreement/<split>.json` (top-1
agreement and logit error of every file against the float32 file of the same member and
against Keras), and prints the per-variant agreement table. Bad input (a truncated or
non-TFLite file, a model input shape that does not match the data set, an output directory
that cannot be written) is a one-line error and exit status 1.
"""

from absl import app
from absl import flags
from absl import logging

from tf_forget.artifacts import errors
from tf_forget.artifacts import fileio
from tf_forget.artifacts import filesystem
from tf_forget.cli import app as cli_app
from tf_forget.cli import console
from tf_forget.compat import cpu_kernels
from tf_forget.compat import keras2

_RUN_DIR = flags.DEFINE_string("run_dir", None, "Population run directory (with tflite/).")
_DATASET = flags.DEFINE_string("dataset", None, "Registry data set; default: the members'.")
_SPLITS = flags.DEFINE_list("splits", None, "Data splits; default: the data set's eval split.")
_VARIANTS = flags.DEFINE_list("variants", None, "Audited variant names to evaluate; default "
                              "all exported (SPEC §1.1).")
_BATCH_SIZE = flags.DEFINE_integer("batch_size", 256, "Interpreter batch size B.",
                                   lower_bound=1)
_NUM_THREADS = flags.DEFINE_integer("num_threads", 2, "Interpreter threads.", lower_bound=1)
_SAVE_LOGITS = flags.DEFINE_bool("save_logits", True, "Store dequantized logits too.")
_CHECK_KERAS = flags.DEFINE_bool("check_keras", True, "Compare with the Keras models too.")
_OVERWRITE = flags.DEFINE_bool("overwrite", False, "Recompute existing predictions.")
_TAIL = flags.DEFINE_enum("tail", "resize", ["resize", "pad"],
                          "Last partial batch: resize the input once, or pad to B.")


def _table(summary, title):
  lines = [title, f"{'variant':28s} {'members':>7s} {'min top-1':>9s} {'mean top-1':>10s} "
           f"{'max |dlogit|':>12s} {'mean |dlogit|':>13s}"]
  for variant, s in summary.items():
    fmt = lambda v: "n/a" if v is None else f"{v:.3g}"
    lines.append(f"{variant:28s} {s['members']:7d} {s['min_top1_agreement']:9.4f} "
                 f"{s['mean_top1_agreement']:10.4f} {fmt(s['max_abs_logit_error']):>12s} "
                 f"{fmt(s['mean_abs_logit_error']):>13s}")
  return "\n".join(lines)


def main(argv):
  del argv  # stray arguments are refused by `cli_app.run`
  keras2.enable()
  cpu_kernels.configure()
  logging.set_verbosity(logging.WARNING)  # TensorFlow logs every SavedModel it writes
  if not _RUN_DIR.value:
    raise app.UsageError("--run_dir is required")
  run_dir = filesystem.user_path(_RUN_DIR.value)
  if not fileio.isdir(run_dir):
    raise app.UsageError(f"--run_dir {run_dir} is not a directory")
  # pylint: disable=g-import-not-at-top  (TensorFlow only after Keras 2 is selected)
  from tf_forget.evaluate import population_eval
  from tf_forget.data import registry
  # pylint: enable=g-import-not-at-top
  try:
    dataset = registry.get(_DATASET.value) if _DATASET.value else None
    with cli_app.locked_run_dir(run_dir, "evaluate_population", check_ours=False):
      tables = population_eval.evaluate_population(
          run_dir, dataset=dataset, splits=_SPLITS.value,
          batch_size=_BATCH_SIZE.value, num_threads=_NUM_THREADS.value,
          save_logits=_SAVE_LOGITS.value, check_keras=_CHECK_KERAS.value,
          variants=_VARIANTS.value, overwrite=_OVERWRITE.value, log=print, tail=_TAIL.value)
  except errors.Error as e:  # bad input or artifact: one line (a bug keeps its traceback)
    console.error(f"evaluate_population: error: {errors.one_line(e, 1000)}")
    return 1
  for split, table in tables.items():
    print(_table(table["summary_vs_float32_tflite"], f"[{split}] vs float32 TFLite"))
    if table["summary_vs_keras"]:
      print(_table(table["summary_vs_keras"], f"[{split}] vs Keras"))
  return 0


# --help, section by section (every flag of this file and --verbose under one title).
HELP_SECTIONS = (
    ("what to read and write", ["run_dir", "dataset", "splits", "variants", "overwrite",
                                "verbose"]),
    ("how the files run", ["batch_size", "num_threads", "tail"]),
    ("what is kept and compared", ["save_logits", "check_keras"]),
)


def _help():
  """`--help`: `HELP_SECTIONS` with each flag's help and default (`cli_app.sectioned_help`).

  Raises:
    AssertionError: a flag of this file or --verbose in no section (a bug here, said loudly).
  """
  return cli_app.sectioned_help(__doc__, HELP_SECTIONS, flags.FLAGS, __name__)


if __name__ == "__main__":
  cli_app.run(main, "evaluate_population", _help)
