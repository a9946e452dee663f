"""`InlineExecutor`: runs the tasks in the driver process, one after the other, in order.

For tests, debugging (a task's exception keeps its real traceback; pdb works) and `--workers=0`.
No retries: a task that kills its process kills the driver.
"""

from tf_forget.artifacts import errors
from tf_forget.executor import executor_api
from tf_forget.executor import worker


class InlineExecutor(executor_api.Executor):
  """Runs each task with `worker.call` in this process, in the order given."""

  name = "inline"

  def describe(self):
    return "inline (driver process)"

  def _run(self, tasks, progress):
    results = {}
    for task in tasks:
      try:
        value = worker.call(task.fn, dict(task.kwargs))
        worker.check_result(value)
      except Exception as e:
        progress.note(f"{task.key} failed: {type(e).__name__}: {worker.message(e)[:200]}")
        if isinstance(e, errors.Error):
          raise
        raise executor_api.task_error(task.key, type(e).__name__, worker.message(e)) from e
      results[task.key] = value
      progress.done(task)
    return results
