"""The `train_population` command: its flags and its body (`tf_forget/train/train_population.py`
is the thin binary; tests run `run` in-process without importing a binary).

`define(flag_values)` defines the flags on an absl `FlagValues`; `run(flag_values)` trains the
population (`tf_forget.train.population`), its preset defaulting to the data set's protocol
preset; `HELP_SECTIONS` orders `--help`.
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

NAME = "train_population"

# --help, section by section (every flag of `define` and --verbose under one title).
HELP_SECTIONS = (
  ("what to read and write", ["run_dir", "dataset", "data_dir", "image_size", "verbose"]),
  ("what to train", ["preset", "model", "variants", "members", "steps", "population_seed"]),
)


def define(flag_values):
  """Defines the command's flags on `flag_values` (an absl `FlagValues`)."""
  fv = {"flag_values": flag_values}
  flags.DEFINE_string("run_dir", None, "Output directory of the population.", **fv)
  flags.DEFINE_string(
    "dataset",
    None,
    "Data set (tf_forget/data; default: the --preset's if one is given, else digits).",
    **fv,
  )
  flags.DEFINE_string(
    "preset", None, "Training protocol (tf_forget/data/protocols; default: the data set's).", **fv
  )
  flags.DEFINE_string("model", None, "Model (default: the preset's).", **fv)
  flags.DEFINE_list(
    "variants",
    None,
    "Trained variants, e.g. dense,prune_0.5,prune_0.9 (default: the preset's).",
    **fv,
  )
  flags.DEFINE_integer("members", None, "Members per variant (K).", lower_bound=1, **fv)
  flags.DEFINE_integer("steps", None, "Override the preset's steps.", lower_bound=1, **fv)
  flags.DEFINE_integer("population_seed", 0, "Base seed of the population.", lower_bound=0, **fv)
  flags.DEFINE_list("image_size", None, "Resize inputs to H,W (e.g. CelebA).", **fv)
  flags.DEFINE_string("data_dir", None, "tfds data directory.", **fv)
  flags.mark_flag_as_required("run_dir", **fv)
  flags.register_validator("image_size", cli_app.image_size_ok, cli_app.IMAGE_SIZE_MESSAGE, **fv)


def run(fv):
  """The command over the parsed flags `fv`: trains, or exits with one line on bad input."""
  keras2.enable()
  cpu_kernels.configure()
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # TensorFlow's C++ INFO / WARNING lines
  logging.set_verbosity(logging.WARNING)
  from tf_forget.train import population
  from tf_forget.train import presets

  run_dir = filesystem.user_path(fv.run_dir)
  dataset_options = {"data_dir": filesystem.user_path(fv.data_dir)}
  if fv.image_size:
    dataset_options["image_size"] = [int(v) for v in fv.image_size]
  dataset_options = {k: v for k, v in dataset_options.items() if v is not None}
  try:
    dataset = fv.dataset or (None if fv.preset else "digits")
    preset = fv.preset or presets.for_dataset(dataset)
    config = population.make_config(
      run_dir,
      preset,
      dataset=dataset,
      model=fv.model,
      variants=fv.variants,
      members=fv.members,
      dataset_options=dataset_options,
      population_seed=fv.population_seed,
      steps=fv.steps,
    )
    population.check_run_dir(config)
    with cli_app.locked_run_dir(run_dir, NAME):
      population.train_population(config)
  except (errors.Error, presets.PresetError) as e:  # bad flags, data or disk: one line
    sys.exit(f"{NAME}: error: {errors.one_line(e, 1000)}")
