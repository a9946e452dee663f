"""A trained tiny dense parent for the pruning-after-training tests (one-shot, prune-retrain)."""

import shutil
import types

from tf_forget import executor as executor_lib
from tf_forget.pipeline import driver
from tf_forget.pipeline import member_stages
from tf_forget.pipeline import stages
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


def run_member_stages(
  pop, oneshot=(), oneshot_schedule=None, iterative=(), iterative_schedule=None
):
  """Runs the audit's member stages after training (g, one-shot, prune-retrain cycles) on the
  inline executor, as the audit does; returns the log lines, stripped."""
  plan = types.SimpleNamespace(
    population=pop,
    oneshot=list(oneshot),
    oneshot_schedule=oneshot_schedule,
    iterative=list(iterative),
    iterative_schedule=iterative_schedule,
  )
  lines = []
  ctx = stages.Context(
    plan=plan,
    run_dir=pop.run_dir,
    num_threads=1,
    workers=1,
    num_gpus=0,
    log=lambda line: lines.append(line.strip()),
  )
  with executor_lib.make("inline") as executor:
    for stage in member_stages.stages(plan)[1:]:  # the parents are trained
      driver.run_stage(stage, ctx, executor, ctx.log)
  return lines
