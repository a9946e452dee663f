"""The stage contract and its one driver, `run_stage` (docs/architecture.md).

The audit is a list of stages (`tf_forget.pipeline.stages.audit_stages`). A stage declares:
  * `units(ctx)`: its units of work for the run in `ctx` — each a `Unit` with the `Check`s of
    the artifacts it makes (what they are called in a "redo" line, and their `lineage.Status`:
    current, or stale with the reason) and the executor `Task` that makes the stale ones;
  * `finish(ctx, results)`: writes the stage-wide files (run.json, agreement tables) from the
    units' task results and returns what later stages read;
  * `name` (the executor's progress lines, e.g. "[train] 3/4 ETA 20 s") and `noun` (the
    "N of M <noun>" line), and optionally `describe(ctx, done, total)`, one line before the
    work starts.

`run_stage` asks every check once, prints "redo <what>: <why>" for each stale artifact that
exists, submits the units that have a stale artifact to the executor (inline, local pool or
Ray: the same tasks and bytes on each), which prints the progress lines with an ETA, and calls
`finish`. Adding a stage is one class and one entry in the stage list.
"""

import dataclasses
from typing import Callable, Sequence

from tf_forget.artifacts import errors
from tf_forget.executor import executor_api

TASKS = "tf_forget.pipeline.tasks"  # the members' and files' tasks
EVAL_TASKS = "tf_forget.pipeline.eval_tasks"  # the evaluation tasks
TASK_MODULES = (TASKS, EVAL_TASKS)


@dataclasses.dataclass(frozen=True)
class Check:
  """One artifact a unit makes.

  Attributes:
    what: its name in the redo line ("members dense/0", "prune_0.5/1 test").
    status: zero-argument callable returning its `lineage.Status`; an `errors.Error` (an
      input that cannot be read) counts as stale: the task raises the one-line error.
    item: what the unit's task is told to make when this artifact is stale (e.g. a variant).
  """

  what: str
  status: Callable[[], object]
  item: object = None


@dataclasses.dataclass(frozen=True)
class Unit:
  """One unit of work: the artifacts it makes and the task that makes the stale ones.

  Attributes:
    checks: its artifacts (`Check`); none means "always run" (a task that checks itself).
    task: callable([items of the stale checks]) -> `executor.Task`.
  """

  checks: Sequence[Check]
  task: Callable[[list], executor_api.Task]


class Stage:
  """A stage of the audit (see the module docstring); subclasses set `name` and `noun`."""

  name = "stage"
  noun = "units already made"

  def units(self, ctx):
    raise NotImplementedError

  def describe(self, ctx, done, total):
    """An optional line printed before the stage's work (None: nothing)."""
    return None

  def finish(self, ctx, results):
    """Writes the stage-wide files from {task key: result}; returns what later stages read."""
    return None


def task(key, fn, cost=1.0, num_gpus=0.0, affinity="", **kwargs):
  """The `executor.Task` `key` running `tf_forget.pipeline.tasks.<fn>(**kwargs)` ("module:function":
  that)."""
  return executor_api.Task(
    key=key,
    fn=fn if ":" in fn else f"{TASKS}:{fn}",
    kwargs=kwargs,
    cost=float(cost),
    num_gpus=num_gpus,
    affinity=affinity,
  )


def stale(check, log):
  """Whether `check`'s artifact must be (re)made; logs "  redo <what>: <why>" if it exists."""
  try:
    state = check.status()
  except errors.Error:
    return True
  if not state and state.reason != "missing":
    log(f"  redo {check.what}: {state.reason}")
  return not state


def run_stage(stage, ctx, executor, log):
  """Runs one stage: checks every unit once, runs the stale ones, then `stage.finish`.

  Args:
    stage: a `Stage`.
    ctx: the run's context (`tf_forget.pipeline.stages.Context`), passed to the stage.
    executor: a `tf_forget.executor.Executor` (inline, local or Ray).
    log: callable(str).

  Returns:
    What `stage.finish` returns.

  Raises:
    errors.Error: a task's one-line error (nothing further is submitted).
  """
  units = stage.units(ctx)
  todo = []
  for unit in units:
    items = [c.item for c in unit.checks if stale(c, log)]  # every check: every redo is said
    if items or not unit.checks:
      todo.append(unit.task(items))
  line = stage.describe(ctx, len(units) - len(todo), len(units))
  if line:
    log(line)
  if units:
    log(f"  {len(units) - len(todo)} of {len(units)} {stage.noun}")
  results = executor.run(todo, stage=stage.name, log=log) if todo else {}
  return stage.finish(ctx, results)
