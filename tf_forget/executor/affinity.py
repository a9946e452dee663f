"""CPU affinity of a local pool's workers: one core each while they share the machine.

A pool of as many workers as the driver has cores runs, most of the time, one task per core.
Each task's TensorFlow or LiteRT runtime starts its own thread pool (2 intra-op threads by
default, `tf_forget.compat.cpu_kernels`), so two workers put four busy threads on two cores,
and the scheduler moves them between cores. `Spread` pins worker i to core i while at least
two tasks are in flight, and gives every worker all the driver's cores again when one task is
left (the last member of a stage then uses every core).

Affinity decides where threads run, never how many there are or how work is split among them,
so results do not depend on it (`benchmarks/make_audit_bench.py` compares every output of the
default audit against a tree without it: the same). Linux only (`os.sched_setaffinity` per thread, from
/proc/<pid>/task); elsewhere, or where the call is not permitted, nothing is pinned.
"""

import os


def driver_cores():
  """The cores this process may run on, sorted ([] where affinity is not supported)."""
  if not hasattr(os, "sched_getaffinity"):
    return []
  return sorted(os.sched_getaffinity(0))


def thread_ids(pid):
  """The thread ids of process `pid` ([] if it is gone or /proc is not there)."""
  try:
    return [int(name) for name in os.listdir(f"/proc/{pid}/task")]
  except OSError:
    return []


def set_cores(pid, cores):
  """Lets every thread of process `pid` run on `cores` only; False if that is not permitted.

  Threads the process starts later inherit the mask of the thread that starts them; a thread
  that ends meanwhile is skipped.
  """
  for tid in thread_ids(pid) or [pid]:
    try:
      os.sched_setaffinity(tid, cores)
    except ProcessLookupError:
      pass
    except OSError:
      return False
  return True


class Spread:
  """Pins a pool's workers one per core while at least two tasks are in flight.

  Args:
    pids: the workers' process ids, in the pool's order.
    cores: the cores the workers may use (`driver_cores()`).
  """

  def __init__(self, pids, cores):
    self._pids = list(pids)
    self._cores = list(cores)
    self._pinned = False
    self.enabled = (
      hasattr(os, "sched_setaffinity")
      and len(self._cores) >= 2
      and len(self._pids) == len(self._cores)
    )

  def update(self, in_flight):
    """Pins the workers (`in_flight` >= 2) or gives each every core (fewer)."""
    if not self.enabled or (in_flight >= 2) == self._pinned:
      return
    self._pinned = in_flight >= 2
    for i, pid in enumerate(self._pids):
      cores = {self._cores[i]} if self._pinned else set(self._cores)
      if not set_cores(pid, cores) and self._pinned:
        self.enabled = False  # not permitted here: leave every worker on every core
        self._pinned = False
        for other in self._pids:
          set_cores(other, set(self._cores))
        return
