"""Worker affinity: one core per worker while tasks share the machine, every core for one."""

import os

import pytest

from tests.executor import contract
from tf_forget.executor import affinity
from tf_forget.executor import local

CORES = affinity.driver_cores()
pytestmark = pytest.mark.skipif(
  not hasattr(os, "sched_setaffinity") or len(CORES) < 2 or not os.path.isdir("/proc/self/task"),
  reason="needs Linux affinity and at least 2 cores",
)


def test_workers_are_pinned_while_two_tasks_run_and_a_lone_task_gets_every_core(tmp_path):
  with local.LocalExecutor(workers=len(CORES)) as ex:
    assert ex.workers == len(CORES)
    pair = [
      contract.toy(name, "cores_while_meeting", marker_dir=str(tmp_path), me=name, peer=peer)
      for name, peer in (("a", "b"), ("b", "a"))
    ]
    got = ex.run(pair, log=lambda _: None)
    # Every thread of each worker, also one started during the task, on one core; not the same.
    assert [len(got[k]) for k in "ab"] == [1, 1], got
    assert len(got["a"][0]) == len(got["b"][0]) == 1, got
    assert got["a"][0] != got["b"][0]
    lone = ex.run([contract.toy("lone", "cores_of_my_threads")], log=lambda _: None)
  assert lone["lone"] == [CORES]


def test_a_pool_smaller_than_the_cores_is_not_pinned(tmp_path):
  spread = affinity.Spread([os.getpid()], CORES)
  assert not spread.enabled
  spread.update(2)
  assert sorted(os.sched_getaffinity(0)) == CORES


def test_thread_ids_of_a_process_that_is_gone():
  assert affinity.thread_ids(2**22 + 12345) == []
