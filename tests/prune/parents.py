"""A trained tiny dense parent for the pruning-after-training tests (one-shot, prune-retrain)."""

import shutil

from tf_forget.train import population


def train_tiny_parent(run_dir):
  """Trains dense/0 of the `tiny` preset into `run_dir`; returns `run_dir`."""
  population.train_population(tiny_config(run_dir), log=lambda line: None)
  return run_dir


def tiny_config(run_dir):
  """The `tiny` one-member dense population config of `run_dir`."""
  return population.make_config(run_dir, "tiny", variants=["dense"], members=1)


def copy_of(parent_run, run_dir):
  """A copy of the trained parent run at `run_dir` (a test may change it); its config."""
  shutil.copytree(parent_run, run_dir)
  return tiny_config(run_dir)
