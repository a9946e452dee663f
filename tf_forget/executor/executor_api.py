"""The executor interface: run independent units of work (`Task`s) and collect their results.

The audit runs each unit of work (train one member, export one member's files,
evaluate one file on a chunk of splits, generate one corrupted split) as a `Task` named by an
import string ("package.module:function") and plain JSON-able keyword arguments, so the same
task runs in the driver (`InlineExecutor`), in a local process pool (`LocalExecutor`) or on Ray
(`RayExecutor`). `Executor.run` takes the tasks of one stage (independent of each other) and
returns `{task.key: return value}`.

Failure semantics shared by every executor:
  * a task that raises is not retried (tasks are deterministic): no further task is started,
    the tasks already running finish (their artifacts are written atomically and reused by the
    next run), and the error is raised in the driver: an `errors.Error` subclass as itself (class
    and one-line message), anything else as an `ExecutorError` "task <key>: <Type>: <message>";
    the remote traceback text is attached as `__cause__` (a `RemoteTraceback`).
  * a worker process that dies (signal, OOM kill, `os._exit`) is a lost worker: the task runs
    again on a fresh worker, up to `max_retries` times, then `ExecutorError`
    "task <key>: worker lost <n> times".

This package imports nothing of tf_forget but `tf_forget.artifacts.errors`, and no TensorFlow:
the task functions are resolved by import string in the worker (`worker.py`).
"""

import dataclasses
import json
import pickle
import re
import typing
from typing import Mapping

from tf_forget.artifacts import errors
from tf_forget.executor import progress as progress_lib

_FN = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


class RunProgress(typing.NamedTuple):
  """How far the current (or last) `Executor.run` got: `stage`, `done` of `total` tasks."""

  stage: str
  done: int
  total: int


class ExecutorError(errors.Error):
  """A task that failed in a way its own error class cannot carry (one line, names the task)."""


class RemoteTraceback(Exception):
  """The traceback text of an exception raised in a worker (attached as `__cause__`)."""

  def __str__(self):
    return "\n" + (self.args[0] if self.args else "")


@dataclasses.dataclass(frozen=True)
class Task:
  """One unit of work.

  Attributes:
    key: unique within one `Executor.run` call, e.g. "train dense/0" (logs, results).
    fn: "package.module:function", importable in the worker.
    kwargs: keyword arguments of `fn`: JSON-able plain values only (str, numbers, bools, None,
      lists and dicts of them), so that every executor can ship them.
    num_cpus: CPUs the task uses (Ray schedules by it; see each executor for the details).
    num_gpus: GPUs the task uses (Ray only).
    cost: relative cost (> 0): weights the ETA and schedules the biggest tasks first.
    affinity: tasks that share what a worker builds once (e.g. a compiled training step) share
      this name: among the tasks as costly as the next one, a worker that has just finished
      one is given another of them first, and a new name goes to a worker no running task of
      that name holds (`scheduler`). "" (default): none.
  """

  key: str
  fn: str
  kwargs: Mapping[str, object] = dataclasses.field(default_factory=dict)
  num_cpus: float = 1.0
  num_gpus: float = 0.0
  cost: float = 1.0
  affinity: str = ""

  def __post_init__(self):
    if not isinstance(self.key, str) or not self.key.strip():
      raise ExecutorError(f"task key must be a non-empty string, got {self.key!r}")
    if not isinstance(self.fn, str) or not _FN.match(self.fn):
      raise ExecutorError(f"task {self.key}: fn must be 'package.module:function', got {self.fn!r}")
    if not isinstance(self.kwargs, Mapping) or not all(isinstance(k, str) for k in self.kwargs):
      raise ExecutorError(f"task {self.key}: kwargs must be a mapping with string keys")
    try:
      json.dumps(dict(self.kwargs), allow_nan=False)
    except (TypeError, ValueError) as e:
      raise ExecutorError(f"task {self.key}: kwargs are not JSON-able: {errors.one_line(e, 200)}")
    object.__setattr__(self, "kwargs", dict(self.kwargs))
    for name in ("num_cpus", "num_gpus", "cost"):
      value = getattr(self, name)
      if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise ExecutorError(f"task {self.key}: {name} must be a number >= 0, got {value!r}")
    if not self.cost > 0:
      raise ExecutorError(f"task {self.key}: cost must be > 0, got {self.cost!r}")
    if not isinstance(self.affinity, str):
      raise ExecutorError(f"task {self.key}: affinity must be a string, got {self.affinity!r}")


def check_tasks(tasks):
  """The tasks as a list, after checking that they are `Task`s with unique keys.

  Raises:
    ExecutorError: a non-Task or a duplicated key.
  """
  tasks = list(tasks)
  seen = set()
  for task in tasks:
    if not isinstance(task, Task):
      raise ExecutorError(f"not a Task: {task!r:.100}")
    if task.key in seen:
      raise ExecutorError(f"duplicate task key {task.key!r}")
    seen.add(task.key)
  return tasks


def task_error(key, type_name, message):
  """The `ExecutorError` "task <key>: <Type>: <message>" for a non-`errors.Error` exception."""
  return ExecutorError(f"task {key}: {type_name}: {message}")


def failure_from_envelope(key, envelope):
  """The exception to raise in the driver for a failed task's envelope (see `worker.envelope`).

  An `errors.Error` that the worker could pickle and unpickle comes back as itself; one that
  cannot be unpickled here becomes `ExecutorError` "task <key>: <message>"; anything else
  `ExecutorError` "task <key>: <Type>: <message>". The remote traceback is the `__cause__`.
  """
  exc = None
  if envelope.get("pickled") is not None:
    try:
      exc = pickle.loads(envelope["pickled"])
    except Exception:
      exc = None
    if not isinstance(exc, errors.Error):
      exc = None
  if exc is None and envelope.get("is_error"):
    exc = ExecutorError(f"task {key}: {envelope['message']}")
  if exc is None:
    exc = task_error(key, envelope["type"], envelope["message"])
  exc.__cause__ = RemoteTraceback(envelope.get("traceback") or "")
  return exc


class Executor:
  """Runs the independent tasks of one stage; abstract (`_run`, `describe`)."""

  name = "executor"
  _progress = None  # the progress_lib.Progress of the current or last run

  def describe(self):
    """One line for logs and run metadata, e.g. "local process pool, 2 workers"."""
    raise NotImplementedError

  def run(self, tasks, stage="tasks", log=print):
    """Runs `tasks` (independent of each other) and returns their results.

    Logs "[<stage>] <n> tasks on <describe()>", then "  [<stage>] <done>/<total> ETA <s> s
    (<key>)" at most every ~10% of the tasks and after the last one.

    Args:
      tasks: iterable of `Task` with unique keys.
      stage: name of the stage in the log lines.
      log: function called with each log line.

    Returns:
      {task.key: what task.fn returned}, in the order of `tasks`.

    Raises:
      errors.Error: a task raised it (its own class and message).
      ExecutorError: a task raised another exception, or its worker was lost too many times.
      KeyboardInterrupt: the driver was interrupted (Ctrl-C, or a KeyboardInterrupt subclass
        raised by a signal handler): re-raised once the workers are stopped;
        `progress()` says how many tasks were done.
    """
    tasks = check_tasks(tasks)
    if not tasks:
      return {}
    progress = progress_lib.Progress(stage, tasks, log)
    self._progress = progress
    progress.start(self.describe())
    results = self._run(tasks, progress)
    return {task.key: results[task.key] for task in tasks}

  def progress(self):
    """How far the current or last `run` got, e.g. to report an interrupt.

    Returns:
      RunProgress(stage, done, total): tasks finished with a result (`done`) of the run's
      `total`; None before the first `run` with tasks.
    """
    if self._progress is None:
      return None
    return RunProgress(self._progress.stage, self._progress.done_count, self._progress.total)

  def _run(self, tasks, progress):
    """Runs the checked, non-empty `tasks`; returns {key: value}; calls `progress.done(task)`."""
    raise NotImplementedError

  def close(self):
    """Releases the workers (idempotent)."""

  def __enter__(self):
    return self

  def __exit__(self, *exc_info):
    self.close()
    return False
