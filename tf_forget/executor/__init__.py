"""Executors: run the audit's independent units of work inline, in local processes or on Ray.

  with executor.make("local", workers=2) as ex:
    task = executor.Task("train dense/0", "tf_forget.pipeline.tasks:train_member", {...})
    results = ex.run([task], stage="train")

`EXECUTORS` maps the names of `--executor` to the classes; `make` builds one from flag values;
`check_address` checks, in seconds, that a Ray cluster can be reached (call it before writing
anything); `Executor.progress()` says how far a `run` got when it was interrupted.
This package imports nothing of tf_forget but `tf_forget.artifacts.errors`, and no TensorFlow.
"""

from tf_forget.executor.address import check_address
from tf_forget.executor.executor_api import Executor
from tf_forget.executor.executor_api import ExecutorError
from tf_forget.executor.executor_api import RunProgress
from tf_forget.executor.executor_api import Task
from tf_forget.executor.inline import InlineExecutor
from tf_forget.executor.local import LocalExecutor
from tf_forget.executor.ray_executor import RayExecutor

__all__ = [
  "EXECUTORS",
  "Executor",
  "ExecutorError",
  "InlineExecutor",
  "LocalExecutor",
  "RayExecutor",
  "RunProgress",
  "Task",
  "check_address",
  "make",
]

EXECUTORS = {
  "inline": InlineExecutor,
  "local": LocalExecutor,
  "ray": RayExecutor,
}


def make(name, workers=None, address=None, max_retries=2, env=None):
  """The executor `name` built from flag values.

  Args:
    name: a key of EXECUTORS.
    workers: worker processes ("local": default os.cpu_count(), 0 means inline) or the CPUs
      of a local Ray ("ray" without address: default all); ignored by "inline".
    address: the Ray cluster ("auto", "ray://host:port"); "ray" only (None: a local Ray).
    max_retries: how many times a task whose worker died runs again.
    env: {name: value} environment variables of the workers.

  Returns:
    An `Executor` (use it as a context manager, or call `close()`).

  Raises:
    ExecutorError: an unknown name or bad arguments (one line).
  """
  if name not in EXECUTORS:
    raise ExecutorError(f"unknown executor {name!r} (known: {', '.join(sorted(EXECUTORS))})")
  if workers is not None and (
    isinstance(workers, bool) or not isinstance(workers, int) or workers < 0
  ):
    raise ExecutorError(f"workers must be an integer >= 0, got {workers!r}")
  if address is not None and name != "ray":
    raise ExecutorError(f"an address is for the ray executor only, not {name!r}")
  if name == "inline" or (name == "local" and workers == 0):
    return InlineExecutor()
  if name == "local":
    return LocalExecutor(workers=workers, max_retries=max_retries, env=env)
  if workers == 0:
    raise ExecutorError("the ray executor needs workers >= 1 (or none: all CPUs)")
  if address is not None and workers is not None:
    raise ExecutorError("workers sets the CPUs of a local Ray: not with an address")
  return RayExecutor(address=address, max_retries=max_retries, env=env, num_cpus=workers)
