"""Progress lines of one `Executor.run` call, with an ETA weighted by the tasks' `cost`.

  [train] 8 tasks on local process pool, 2 workers
    [train] 1/8 ETA 140 s (train dense/0)
    ...
    [train] 8/8 ETA 0 s (train dense/7)

A line is logged when the number of finished tasks crosses another tenth of the total (so at
most ~10 lines per stage, every task when there are fewer than 10) and after the last task. The
ETA is the elapsed time times (cost still to run / cost done).
"""

import time

from tf_forget.cli import status


class Progress:
  """Counts finished tasks of one stage and logs the progress lines."""

  def __init__(self, stage, tasks, log=print, clock=time.monotonic):
    """Progress of `tasks`.

    Args:
      stage: the stage's name in the lines.
      tasks: the stage's tasks (objects with `key` and `cost`).
      log: function called with each line.
      clock: seconds (monotonic); injectable for tests.
    """
    self.stage = stage
    self.total = len(tasks)
    self.total_cost = float(sum(task.cost for task in tasks))
    self.done_count = 0
    self.done_cost = 0.0
    self._log = log
    self._clock = clock
    self._start = clock()
    self._bucket = 0
    status.begin(stage, self.total)  # what an interrupted command says it was doing

  def start(self, description):
    """Logs "[<stage>] <n> tasks on <description>" and restarts the clock."""
    self._start = self._clock()
    self._log(f"[{self.stage}] {self.total} task{'' if self.total == 1 else 's'} on {description}")

  def eta(self):
    """Seconds left (rounded), from the cost done so far; None before the first task is done."""
    if self.done_cost <= 0:
      return None
    elapsed = self._clock() - self._start
    return int(round(elapsed * max(self.total_cost - self.done_cost, 0.0) / self.done_cost))

  def done(self, task):
    """Counts `task` as finished; logs a line if another tenth of the tasks is done."""
    self.done_count += 1
    self.done_cost += task.cost
    status.advance()
    bucket = (10 * self.done_count) // self.total
    if bucket > self._bucket or self.done_count == self.total:
      self._bucket = bucket
      self._log(f"  [{self.stage}] {self.done_count}/{self.total} ETA {self.eta()} s ({task.key})")

  def note(self, text):
    """Logs "  [<stage>] <text>" (retries, failures)."""
    self._log(f"  [{self.stage}] {text}")
