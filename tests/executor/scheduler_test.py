"""The scheduling loop's choice of the next task (`scheduler.PooledExecutor`), on a fake pool.

The fake runs no process: `_submit` notes the task, and `_wait` finishes the oldest task in
flight, so the order in which tasks start is the scheduler's alone.
"""

from tf_forget.executor import executor_api
from tf_forget.executor import scheduler


class _Fake(scheduler.PooledExecutor):
  """A pool of `slots` that finishes its tasks in the order they started."""

  def __init__(self, slots):
    super().__init__()
    self.slots, self.started, self._running = slots, [], []

  def describe(self):
    return "fake"

  def _capacity(self):
    return {"slots": self.slots}

  def _need(self, task):
    return {"slots": 1}

  def _submit(self, task):
    self.started.append(task.key)
    self._running.append(task.key)
    return task.key

  def _wait(self, handles):
    key = self._running.pop(0)
    return [(key, scheduler.Outcome(scheduler.OK, value=key))]


def _task(key, affinity="", cost=1.0):
  return executor_api.Task(key, "m:f", cost=cost, affinity=affinity)


def test_a_freed_slot_gets_a_task_of_the_affinity_that_freed_it():
  """Two slots, three tasks each of affinities a and b, listed a, a, a, b, b, b: the first two
  are of different affinities, then each slot keeps to its own (the slot that ran a1 is
  given a2, ...): each affinity is started in one slot only."""
  tasks = [_task(f"a{i}", "a") for i in range(3)] + [_task(f"b{i}", "b") for i in range(3)]
  pool = _Fake(2)
  assert set(pool.run(tasks, log=lambda _: None)) == {t.key for t in tasks}
  assert pool.started == ["a0", "b0", "a1", "b1", "a2", "b2"]


def test_without_affinities_the_order_is_biggest_cost_first_then_the_callers():
  tasks = [_task("x", cost=1.0), _task("y", cost=3.0), _task("z", cost=1.0), _task("w", cost=3.0)]
  pool = _Fake(2)
  pool.run(tasks, log=lambda _: None)
  assert pool.started == ["y", "w", "x", "z"]


def test_affinity_never_starts_a_cheaper_task_before_a_costlier_one():
  tasks = [_task("a0", "a", cost=2.0), _task("b0", "b", cost=2.0), _task("a1", "a", cost=1.0)]
  tasks.append(_task("c0", "c", cost=2.0))
  pool = _Fake(1)
  pool.run(tasks, log=lambda _: None)
  assert pool.started == ["a0", "b0", "c0", "a1"]
