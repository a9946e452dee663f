"""LocalExecutor: a reused spawn process pool; lost workers retried, collateral losses free."""

import multiprocessing
import os
import signal
import time

import pytest

from tests.executor import contract
from tf_forget import executor
from tf_forget.executor import local


@pytest.fixture(scope="module")
def pool():
  with local.LocalExecutor(workers=2, max_retries=2) as ex:
    yield ex


def test_describe(pool):
  assert pool.describe() == "local process pool, 2 workers"
  assert pool.name == "local"


def test_same_results_as_inline_and_processes_are_reused(pool):
  first = contract.check_same_results_as_inline(pool)
  second = contract.check_same_results_as_inline(pool)
  assert os.getpid() not in first
  assert len(first | second) <= 2


def test_two_tasks_run_at_once(pool, tmp_path):
  contract.check_two_at_once(pool, tmp_path)


def test_error_class_survives_and_no_task_starts_after_it(pool, tmp_path):
  contract.check_error_class_survives_and_stops(pool, tmp_path)


def test_other_errors_name_the_task(pool):
  contract.check_other_errors_name_the_task(pool)


def test_lost_worker_is_retried(pool, tmp_path):
  contract.check_lost_worker_is_retried(pool, tmp_path)


def test_always_lost_worker_fails_after_max_retries(pool, tmp_path):
  contract.check_always_lost_worker_fails(pool, tmp_path, max_retries=2)


def test_os_exit_is_a_lost_worker(pool):
  with pytest.raises(executor.ExecutorError, match=r"^task exit: worker lost 3 times$"):
    pool.run([contract.toy("exit", "exit_hard", code=3)], log=lambda _: None)


def test_collateral_losses_do_not_count(tmp_path):
  # "slow" runs while two other tasks kill their workers one after the other: it is lost twice
  # with the pool, which must not count against its max_retries=1.
  lines = []
  tasks = [
    contract.toy("slow", "started", cost=10, marker_dir=str(tmp_path), name="slow", seconds=2.0),
    contract.toy("die 1", "die_once", marker=str(tmp_path / "1"), value=1),
    contract.toy("die 2", "die_once", marker=str(tmp_path / "2"), value=2),
  ]
  with local.LocalExecutor(workers=2, max_retries=1) as ex:
    assert ex.run(tasks, stage="c", log=lines.append) == {"slow": "slow", "die 1": 1, "die 2": 2}
  assert "  [c] die 1: worker lost, retry 1/1" in lines
  assert "  [c] die 2: worker lost, retry 1/1" in lines
  assert not any(line.startswith("  [c] slow:") for line in lines), lines


def test_a_worker_dying_while_idle_costs_no_retry(tmp_path):
  with local.LocalExecutor(workers=2, max_retries=0) as ex:
    pids = {v["pid"] for v in ex.run(contract.squares(4), log=lambda _: None).values()}
    os.kill(min(pids), signal.SIGKILL)
    time.sleep(0.5)  # the pool notices the death and marks itself broken
    got = ex.run(contract.squares(4), log=lambda _: None)
  assert [v["square"] for v in got.values()] == [0, 1, 4, 9]
  assert min(pids) not in {v["pid"] for v in got.values()}


def test_close_stops_idle_workers_without_waiting_for_their_teardown():
  # The task makes its worker's exit take 30 s; an idle pool's close stops it at once, and no
  # worker outlives close.
  ex = local.LocalExecutor(workers=1)
  pid = ex.run([contract.toy("t", "slow_teardown", seconds=30.0)], log=lambda _: None)["t"]
  start = time.monotonic()
  ex.close()
  assert time.monotonic() - start < 10.0
  with pytest.raises(ProcessLookupError):
    os.kill(pid, 0)


def test_what_a_task_printed_survives_close(capfd, monkeypatch):
  monkeypatch.delenv("PYTHONUNBUFFERED", raising=False)  # the worker's stdout block-buffered
  with local.LocalExecutor(workers=1) as ex:
    assert ex.run([contract.toy("p", "print_unflushed", text="toy output")], log=lambda _: None)
  assert "toy output" in capfd.readouterr().out


def test_progress_lines(pool):
  contract.check_progress_lines(pool)


def test_env_is_set_in_the_workers():
  with local.LocalExecutor(workers=1, env={"TF_FORGET_TOY": "set"}) as ex:
    assert ex.run([contract.toy("env", "env_value", name="TF_FORGET_TOY")], log=lambda _: None) == {
      "env": "set"
    }


def test_a_task_needing_all_cpus_runs_alone(pool, tmp_path):
  wide = executor.Task(
    "wide",
    f"{contract.TOY}:meet",
    {"marker_dir": str(tmp_path), "me": "w", "peer": "n", "timeout": 1.0},
    num_cpus=2,
  )
  narrow = contract.toy("narrow", "meet", marker_dir=str(tmp_path), me="n", peer="w", timeout=1.0)
  # "narrow" starts first (equal costs keep the order) and waits for "wide" in vain: "wide" only
  # starts when both slots are free, and then finds the marker "narrow" left.
  assert pool.run([narrow, wide], log=lambda _: None) == {"narrow": False, "wide": True}


def test_the_pool_starts_no_more_processes_than_tasks_or_its_cores_take():
  """`workers` far above the cores is capped at `WORKERS_PER_CORE` per core, and a pool starts
  one process per task of the run that starts it (2 tasks: 2 processes), growing for a later
  run with more tasks."""
  cap = local.WORKERS_PER_CORE * (os.cpu_count() or 1)
  asked = 10 * cap
  with local.LocalExecutor(workers=asked) as ex:
    assert ex.workers == cap
    assert ex.describe() == (
      f"local process pool, {cap} workers ({asked} asked: at most "
      f"{local.WORKERS_PER_CORE} per core)"
    )
    before = set(multiprocessing.active_children())
    assert [v["square"] for v in ex.run(contract.squares(2), log=lambda _: None).values()] == [0, 1]
    assert len(set(multiprocessing.active_children()) - before) == 2
    assert [v["square"] for v in ex.run(contract.squares(3), log=lambda _: None).values()] == [
      0,
      1,
      4,
    ]
    assert len(set(multiprocessing.active_children()) - before) == min(3, cap)


PROBE = "tests.executor.preload_probe"


def test_start_has_every_worker_import_its_preload_before_any_run(tmp_path):
  with local.LocalExecutor(workers=2, env={"TF_FORGET_PRELOAD_DIR": str(tmp_path)}) as ex:
    ex.start(preload=[PROBE])
    deadline = time.monotonic() + 60
    while len(list(tmp_path.glob("preloaded-*"))) < 2 and time.monotonic() < deadline:
      time.sleep(0.05)
    preloaded = {int(p.read_text()) for p in tmp_path.glob("preloaded-*")}
    assert len(preloaded) == 2, "each worker imports the module as it starts, with no task"
    tasks = [contract.toy(f"t{i}", "loaded", names=[PROBE]) for i in range(4)]
    results = ex.run(tasks, log=lambda _: None).values()
    assert all(r["loaded"] == [PROBE] and r["pid"] in preloaded for r in results)
    ex.start(preload=["json"])  # started already: the same pool
    assert {r["pid"] for r in ex.run(tasks, log=lambda _: None).values()} <= preloaded


def test_a_preload_that_fails_leaves_its_error_to_the_task():
  with local.LocalExecutor(workers=1) as ex:
    ex.start(preload=["tests.executor.preload_broken"])
    task = executor.Task("t", "tests.executor.preload_broken:anything")
    with pytest.raises(executor.ExecutorError, match=r"^task t: RuntimeError: broken on import$"):
      ex.run([task], log=lambda _: None)
    assert ex.run([contract.toy("ok", "square", x=3)], log=lambda _: None)["ok"]["square"] == 9


def _stderr_to(path):
  """Points this process's file descriptor 2 at `path` (as `console.attach` moves the log)."""
  fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
  os.dup2(fd, 2)
  os.close(fd)


@pytest.mark.parametrize("early", [True, False])
def test_the_workers_stderr_goes_where_the_driver_s_is_when_they_write(tmp_path, early):
  """A pool started early (`start`) writes to the driver's stderr as it is when a task writes,
  not as it was when the pool started; its close waits for those lines, not for 5 s."""
  before, after = tmp_path / "before.log", tmp_path / "after.log"
  saved = os.dup(2)
  try:
    _stderr_to(before)
    ex = local.LocalExecutor(workers=1)
    if early:
      ex.start()
    _stderr_to(after)
    ex.run([contract.toy("w", "to_stderr", text="worker line")], log=lambda _: None)
    start = time.monotonic()
    ex.close()
    closing = time.monotonic() - start
  finally:
    os.dup2(saved, 2)
    os.close(saved)
  assert "worker line" in after.read_text()
  assert "worker line" not in before.read_text()
  assert closing < 3.0
