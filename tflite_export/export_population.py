"""Exports every member of a population run to TFLite (docs/artifacts/tflite.md).

    bazel run //tflite_export:export_population -- --run_dir=/path/to/run \
        --formats=float32,float16,dynamic_int8,full_int8 --pruned_formats=float32 \
        --encodings=plain,sparse

Dense members get `--formats`; pruned members get `--pruned_formats` (SPEC §1.1: post-training
formats apply to dense members unless a combination such as `prune_0.9+full_int8` is asked for).
`--encodings=plain,sparse` adds a sparse-encoded twin of every file (issue #10); a sparse
conversion that fails is reported on one line and recorded, the plain file stays, and the exit
status is still 0. Finished exports are skipped on re-run. Bad input is a one-line error and
exit status 1.
"""

import os
import sys

from absl import app
from absl import flags
from absl import logging

from tf_forget.artifacts import errors
from tf_forget.compat import cpu_kernels
from tf_forget.compat import keras2
from tflite_export import formats  # no TensorFlow: flags are validated before TF loads

_RUN_DIR = flags.DEFINE_string("run_dir", None, "Population run directory (with members/).")
_FORMATS = flags.DEFINE_string("formats", "float32,float16,dynamic_int8,full_int8",
                               "Comma-separated TFLite formats for the dense members.")
_PRUNED_FORMATS = flags.DEFINE_string("pruned_formats", "float32",
                                      "Comma-separated TFLite formats for pruned members.")
_REPRESENTATIVE_SIZE = flags.DEFINE_integer(
    "representative_size", 100, "First N train examples used to calibrate full_int8 "
    "(SPEC §2.5; 000 appendix A).", lower_bound=1)
_ENCODINGS = flags.DEFINE_string("encodings", "plain",
                                 "Comma-separated weight encodings: plain, sparse (issue #10).")
_OVERWRITE = flags.DEFINE_bool("overwrite", False, "Re-export finished exports.")


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
  keras2.enable()
  cpu_kernels.configure()
  logging.set_verbosity(logging.WARNING)  # the converter logs every SavedModel it writes
  if not _RUN_DIR.value:
    raise app.UsageError("--run_dir is required")
  if not os.path.isdir(_RUN_DIR.value):
    raise app.UsageError(f"--run_dir {_RUN_DIR.value} is not a directory")
  try:
    dense = formats.parse_formats(_FORMATS.value)
    pruned = formats.parse_formats(_PRUNED_FORMATS.value)
    encodings = formats.parse_encodings(_ENCODINGS.value)
  except formats.FormatError as e:
    raise app.UsageError(str(e))
  # pylint: disable=g-import-not-at-top  (TensorFlow only after Keras 2 is selected)
  from tflite_export import export
  # pylint: enable=g-import-not-at-top
  try:
    export.export_population(_RUN_DIR.value, dense, pruned, _REPRESENTATIVE_SIZE.value,
                             overwrite=_OVERWRITE.value, log=print, encodings=encodings)
  except errors.Error as e:  # bad input or artifact: one line (a bug keeps its traceback)
    print(f"export_population: error: {errors.one_line(e, 1000)}", file=sys.stderr)
    return 1
  return 0


if __name__ == "__main__":
  app.run(main)
