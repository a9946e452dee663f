"""The scheduling loop shared by the executors that run tasks in worker processes.

`PooledExecutor._run` keeps a window of tasks in flight (biggest `cost` first, as many as fit the
executor's capacity, always at least one; among equally costly tasks, one of the `affinity` of
the task that just freed a slot first — the pool's freed worker takes it —, else one of an
affinity no running task holds), collects their outcomes, retries the tasks whose
worker was lost, and on the first task failure stops submitting, lets the running tasks finish
and raises the failure (executor_api.py describes the semantics). A subclass provides:

  _capacity() -> {resource: amount}     e.g. {"slots": 2} or {"CPU": 2.0, "GPU": 0.0}
  _need(task) -> {resource: amount}     what one task occupies while it runs
  _submit(task) -> handle               starts the task (hashable handle)
  _wait(handles) -> [(handle, Outcome)] blocks until at least one handle has an outcome
  _abort(handles)                       best effort: stop those tasks (driver interrupted)
"""

import dataclasses

from tf_forget.artifacts import errors
from tf_forget.executor import executor_api

OK = "ok"
FAILED = "failed"
LOST = "lost"  # the task's worker died; the scheduler retries (counts the loss)
COLLATERAL = "collateral"  # lost with another task's worker; resubmitted without counting
EXHAUSTED = "exhausted"  # the worker was lost and the backend's own retries are used up


@dataclasses.dataclass
class Outcome:
  """What became of one submitted task.

  Attributes:
    status: OK, FAILED, LOST, COLLATERAL or EXHAUSTED.
    value: the task's return value (OK).
    error: the exception to raise in the driver (FAILED).
  """

  status: str
  value: object = None
  error: BaseException = None


def from_envelope(envelope):
  """The Outcome of a worker envelope (`worker.envelope`): OK, or FAILED with the envelope."""
  if envelope["ok"]:
    return Outcome(OK, value=envelope["value"])
  return Outcome(FAILED, error=envelope)


def _next(queue, freed, held):
  """The index in `queue` (biggest cost first) of the task to start next: among the tasks as
  costly as the first, one of the affinity `freed` (of the task whose slot is being filled),
  else one of an affinity no running task holds (`held`), else the first."""
  top = queue[0].cost
  same = [i for i, task in enumerate(queue) if task.cost == top]
  if freed:
    for i in same:
      if queue[i].affinity == freed:
        return i
  for i in same:
    if queue[i].affinity and queue[i].affinity not in held:
      return i
  return 0


def _fits(used, need, capacity):
  return all(used.get(r, 0) + amount <= capacity.get(r, 0) + 1e-9 for r, amount in need.items())


class PooledExecutor(executor_api.Executor):
  """An executor with worker processes: the window, retry and failure logic of every backend."""

  def __init__(self, max_retries=2):
    if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
      raise executor_api.ExecutorError(f"max_retries must be an integer >= 0, got {max_retries!r}")
    self.max_retries = max_retries

  def _capacity(self):
    raise NotImplementedError

  def _need(self, task):
    raise NotImplementedError

  def _submit(self, task):
    raise NotImplementedError

  def _wait(self, handles):
    raise NotImplementedError

  def _abort(self, handles):
    pass

  def _run(self, tasks, progress):
    queue = sorted(tasks, key=lambda t: -t.cost)  # stable: equal costs keep the caller's order
    capacity = self._capacity()
    losses = {task.key: 0 for task in tasks}
    in_flight = {}  # handle -> task
    used = {}
    results = {}
    failure = None
    freed = []  # the affinities of the tasks whose slots are free again
    try:
      while queue or in_flight:
        if failure is None:
          self._fill(queue, in_flight, used, capacity, freed)
        if not in_flight:
          break
        freed = []
        for handle, outcome in self._wait(list(in_flight)):
          task = in_flight.pop(handle)
          freed.append(task.affinity)
          for resource, amount in self._need(task).items():
            used[resource] -= amount
          failure = self._settle(
            task, outcome, losses, queue, results, progress, failure, len(in_flight)
          )
    except BaseException:
      self._abort(list(in_flight))
      raise
    if failure is not None:
      raise failure
    return results

  def _fill(self, queue, in_flight, used, capacity, freed=()):
    """Submits queued tasks while they fit (at least one task in flight): for each slot, the
    task `_next` picks if it fits, else the first that fits (biggest first)."""
    freed = list(freed)
    while queue:
      held = {task.affinity for task in in_flight.values()}
      for i in [_next(queue, freed.pop(0) if freed else "", held), *range(len(queue))]:
        need = self._need(queue[i])
        if not in_flight or _fits(used, need, capacity):
          break
      else:
        return
      task = queue.pop(i)
      in_flight[self._submit(task)] = task
      for resource, amount in need.items():
        used[resource] = used.get(resource, 0) + amount

  def _settle(self, task, outcome, losses, queue, results, progress, failure, running):
    """Records one outcome; returns the (first) failure so far."""
    key = task.key
    if outcome.status == OK:
      results[key] = outcome.value
      progress.done(task)
      return failure
    if outcome.status == FAILED:
      error = outcome.error
      if isinstance(error, dict):
        error = executor_api.failure_from_envelope(key, error)
      progress.note(
        f"{key} failed: {type(error).__name__}: {errors.one_line(error, 200)}"
        + (f"; waiting for {running} running task(s)" if running else "")
      )
      return failure or error
    if outcome.status == EXHAUSTED:
      error = executor_api.ExecutorError(f"task {key}: worker lost {self.max_retries + 1} times")
      progress.note(str(error))
      return failure or error
    if outcome.status == LOST:
      losses[key] += 1
      if losses[key] > self.max_retries:
        error = executor_api.ExecutorError(f"task {key}: worker lost {losses[key]} times")
        progress.note(str(error))
        return failure or error
      progress.note(f"{key}: worker lost, retry {losses[key]}/{self.max_retries}")
    elif outcome.status != COLLATERAL:
      raise AssertionError(f"unknown outcome status {outcome.status!r}")
    if failure is None:
      queue.insert(0, task)  # resubmitted first: it was started before the rest of the queue
    return failure
