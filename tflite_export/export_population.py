r"""Exports every member of a population run to TFLite (docs/artifacts/tflite.md).

    bazel run //tflite_export:export_population -- --run_dir=/path/to/run \
        --formats=float32,float16,dynamic_int8,full_int8 --pruned_formats=float32 \
        --encodings=plain,sparse

Dense members get `--formats`; pruned members get `--pruned_formats` (docs/spec.md §1.1:
post-training formats apply to dense members unless a combination such as `prune_0.9+full_int8` is
asked for). Unset, both come from the protocol of the run's data set (`run.json`'s or the members'
`dataset`; `tf_forget.data.protocols`): float32 plus its post-training formats for dense members
(docs/spec.md §2.3: CelebA dynamic_int8 and full_int8, the others also float16), float32 only for
pruned members. `--encodings=plain,sparse` adds a sparse-encoded twin of every file; a
sparse conversion that fails is reported on one line and recorded, the plain file stays, and the
exit status is still 0. Finished exports are skipped on re-run. Bad input is a one-line error and
exit status 1. The flags and the body are `tf_forget.commands.export_population_command`'s.
"""

from tf_forget.cli import app as cli_app
from tf_forget.commands import export_population_command

if __name__ == "__main__":
  cli_app.run_command(export_population_command, __doc__)
