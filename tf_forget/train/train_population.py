r"""Trains a population of dense and pruned members (thin binary over `population`).

  bazel run //tf_forget/train:train_population -- --run_dir=/tmp/run --dataset=digits

`--preset` defaults to the data set's protocol preset (`tf_forget.data.protocols`):
`--dataset=celeb_a` trains 004's CelebA protocol, not the digits one. With neither flag: digits;
with `--preset` only: the preset's data set.

Re-running skips finished members and resumes interrupted ones.
"""

import os
import sys

from absl import flags
from absl import logging

from tf_forget.artifacts import errors
from tf_forget.artifacts import filesystem
from tf_forget.cli import app as cli_app
from tf_forget.compat import cpu_kernels
from tf_forget.compat import keras2

_RUN_DIR = flags.DEFINE_string("run_dir", None, "Output directory of the population.")
_DATASET = flags.DEFINE_string("dataset", None,
                               "Data set (tf_forget/data; default: the --preset's if one is "
                               "given, else digits).")
_PRESET = flags.DEFINE_string("preset", None,
                              "Training protocol (tf_forget/data/protocols; default: the data "
                              "set's).")
_MODEL = flags.DEFINE_string("model", None, "Model (default: the preset's).")
_VARIANTS = flags.DEFINE_list(
    "variants", None, "Trained variants, e.g. dense,prune_0.5,prune_0.9 (default: the preset's).")
_MEMBERS = flags.DEFINE_integer("members", None, "Members per variant (K).", lower_bound=1)
_STEPS = flags.DEFINE_integer("steps", None, "Override the preset's steps.", lower_bound=1)
_SEED = flags.DEFINE_integer("population_seed", 0, "Base seed of the population.", lower_bound=0)
_IMAGE_SIZE = flags.DEFINE_list("image_size", None, "Resize inputs to H,W (e.g. CelebA).")
_DATA_DIR = flags.DEFINE_string("data_dir", None, "tfds data directory.")

flags.mark_flag_as_required("run_dir")
flags.register_validator("image_size", cli_app.image_size_ok, cli_app.IMAGE_SIZE_MESSAGE)


def main(argv):
  del argv  # stray arguments are refused by `cli_app.run`
  keras2.enable()
  cpu_kernels.configure()
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # TensorFlow's C++ INFO / WARNING lines
  logging.set_verbosity(logging.WARNING)
  from tf_forget.train import population  # pylint: disable=g-import-not-at-top
  from tf_forget.train import presets  # pylint: disable=g-import-not-at-top
  run_dir = filesystem.user_path(_RUN_DIR.value)
  dataset_options = {"data_dir": filesystem.user_path(_DATA_DIR.value)}
  if _IMAGE_SIZE.value:
    dataset_options["image_size"] = [int(v) for v in _IMAGE_SIZE.value]
  dataset_options = {k: v for k, v in dataset_options.items() if v is not None}
  try:
    dataset = _DATASET.value or (None if _PRESET.value else "digits")
    preset = _PRESET.value or presets.for_dataset(dataset)
    config = population.make_config(
        run_dir, preset, dataset=dataset, model=_MODEL.value,
        variants=_VARIANTS.value, members=_MEMBERS.value, dataset_options=dataset_options,
        population_seed=_SEED.value, steps=_STEPS.value)
    population.check_run_dir(config)
    with cli_app.locked_run_dir(run_dir, "train_population"):
      population.train_population(config)
  except (errors.Error, presets.PresetError) as e:  # bad flags, data or disk: one line
    sys.exit(f"train_population: error: {errors.one_line(e, 1000)}")


# --help, section by section (every flag of this file and --verbose under one title).
HELP_SECTIONS = (
    ("what to read and write", ["run_dir", "dataset", "data_dir", "image_size", "verbose"]),
    ("what to train", ["preset", "model", "variants", "members", "steps", "population_seed"]),
)


def _help():
  """`--help`: `HELP_SECTIONS` with each flag's help and default (`cli_app.sectioned_help`).

  Raises:
    AssertionError: a flag of this file or --verbose in no section (a bug here, said loudly).
  """
  return cli_app.sectioned_help(__doc__, HELP_SECTIONS, flags.FLAGS, __name__)


if __name__ == "__main__":
  cli_app.run(main, "train_population", _help)
