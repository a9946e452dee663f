r"""The audit command (thin binary over `eval/audit_lib.py`).

  bazel run //eval:audit                       # embedded default: digits, offline
  bazel run //eval:audit -- --dataset=celeb_a  # the paper's protocol (needs the tfds data)
"""

import os
import sys

from absl import app
from absl import flags
from absl import logging

from tf_forget.compat import keras2

_DATASET = flags.DEFINE_string("dataset", "digits", "Data set to audit (tf_forget/data).")
_OUT = flags.DEFINE_string("out", None, "Run directory (default: runs/<dataset>).")
_PRESET = flags.DEFINE_string("preset", None, "Training protocol (default: the data set's).")
_MEMBERS = flags.DEFINE_integer("members", None, "Members per variant (K).", lower_bound=2)
_VARIANTS = flags.DEFINE_list("variants", None, "Trained variants, e.g. dense,prune_0.9.")
_STEPS = flags.DEFINE_integer("steps", None, "Override the preset's steps.", lower_bound=1)
_SEED = flags.DEFINE_integer("population_seed", 0, "Base seed of the population.", lower_bound=0)
_DATA_DIR = flags.DEFINE_string("data_dir", None, "tfds data directory.")
_IMAGE_SIZE = flags.DEFINE_list("image_size", None, "Resize inputs to H,W.")


def _resolve(path):
  """Relative paths are relative to where the user ran `bazel run` (not the runfiles)."""
  base = os.environ.get("BUILD_WORKING_DIRECTORY", os.getcwd())
  return path if os.path.isabs(path) else os.path.join(base, path)


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
  keras2.enable()
  logging.set_verbosity(logging.WARNING)
  from eval import audit_lib  # pylint: disable=g-import-not-at-top
  config = audit_lib.AuditConfig(
      dataset=_DATASET.value, out=_resolve(_OUT.value or os.path.join("runs", _DATASET.value)),
      preset=_PRESET.value, members=_MEMBERS.value, variants=_VARIANTS.value,
      steps=_STEPS.value, population_seed=_SEED.value, data_dir=_DATA_DIR.value,
      image_size=[int(v) for v in _IMAGE_SIZE.value] if _IMAGE_SIZE.value else None)
  try:
    audit_lib.run_audit(config)
  except ValueError as e:
    sys.exit(f"audit: error: {e}")


if __name__ == "__main__":
  app.run(main)
