"""LocalExecutor's workers die with their driver; interrupts stop them cleanly.

Each test runs a real driver process (tests/executor/toy_driver.py: a LocalExecutor with three
workers, two of them running tasks that sleep 10 minutes), kills or interrupts it, and watches the
pids its workers wrote to marker files.
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import pytest

from tests.executor import contract
from tf_forget.executor import lifeline
from tf_forget.executor import local

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_GONE_WITHIN_S = 15.0


def _alive(pid):
  """True if `pid` runs (a zombie, which no reaper collected yet, counts as dead)."""
  try:
    with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
      return f.read().rpartition(")")[2].split()[0] != "Z"
  except FileNotFoundError:
    return False
  except OSError:
    return lifeline.pid_alive(pid)


def _wait_for(predicate, timeout_s, what):
  deadline = time.monotonic() + timeout_s
  while not predicate():
    if time.monotonic() > deadline:
      raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
    time.sleep(0.1)


def _children(pid):
  """The pids whose parent is `pid` (from /proc)."""
  children = []
  for name in os.listdir("/proc"):
    try:
      with open(f"/proc/{name}/stat", encoding="utf-8") as f:
        fields = f.read().rpartition(")")[2].split()
    except (OSError, ValueError):
      continue
    if name.isdigit() and int(fields[1]) == pid:
      children.append(int(name))
  return children


def _worker_pids(marker_dir, names):
  pids = []
  for name in names:
    with open(os.path.join(marker_dir, f"started-{name}"), encoding="utf-8") as f:
      pids.append(int(f.read()))
  return pids


class _Driver:
  """tests/executor/toy_driver.py in its own process group, once both long tasks run."""

  def __init__(self, marker_dir, mode):
    self.marker_dir = str(marker_dir)
    env = dict(
      os.environ,
      PYTHONPATH=os.pathsep.join(
        [_ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
      ),
    )
    self.process = subprocess.Popen(
      [sys.executable, "-m", "tests.executor.toy_driver", self.marker_dir, mode],
      cwd=_ROOT,
      env=env,
      stdout=subprocess.PIPE,
      stderr=subprocess.PIPE,
      text=True,
      start_new_session=True,
    )
    self.workers = []
    try:
      _wait_for(
        lambda: all(
          os.path.exists(os.path.join(self.marker_dir, f"started-long {i}")) for i in range(2)
        ),
        60,
        "the long tasks to start",
      )
      with open(os.path.join(self.marker_dir, "driver.json"), encoding="utf-8") as f:
        self.info = json.load(f)
      self.workers = _worker_pids(self.marker_dir, ["long 0", "long 1"])
    except BaseException:
      self.cleanup()
      raise

  def cleanup(self):
    """Kills what is left (a failed test must not leave 10-minute sleepers behind)."""
    if self.process.poll() is None:
      self.process.kill()
    for pid in self.workers:  # first: living workers hold the driver's stdout and stderr open
      if _alive(pid):
        os.kill(pid, signal.SIGKILL)
    self.process.communicate(timeout=30)


@pytest.mark.parametrize(
  "mode, signum",
  [
    ("plain", signal.SIGKILL),
    ("plain", signal.SIGTERM),
    ("thread", signal.SIGKILL),  # no PR_SET_PDEATHSIG: the watchdog alone
  ],
)
def test_workers_and_tracker_die_with_a_killed_driver(tmp_path, mode, signum):
  driver = _Driver(tmp_path, mode)
  try:
    assert len(set(driver.workers)) == 2 and all(_alive(pid) for pid in driver.workers)
    os.kill(driver.info["pid"], signum)
    driver.process.wait(timeout=30)
    _wait_for(
      lambda: not any(_alive(pid) for pid in driver.workers),
      _GONE_WITHIN_S,
      f"workers {driver.workers} to exit",
    )
    tracker = driver.info["tracker_pid"]
    assert tracker is not None
    _wait_for(lambda: not _alive(tracker), _GONE_WITHIN_S, f"resource tracker {tracker} to exit")
    # The next executor to start a pool removes the dead driver's state directory.
    assert os.path.isdir(driver.info["state_dir"])
    with local.LocalExecutor(workers=1) as ex:
      ex.run(contract.squares(1), log=lambda _: None)
    assert not os.path.exists(driver.info["state_dir"])
  finally:
    driver.cleanup()


@pytest.mark.parametrize("how", ["ctrl-c to the process group", "sigterm handler"])
def test_interrupt_stops_the_workers_and_is_reraised(tmp_path, how):
  driver = _Driver(tmp_path, "plain" if how.startswith("ctrl-c") else "handler")
  try:
    if how.startswith("ctrl-c"):
      # The workers' share of a Ctrl-C first (deterministic: the driver cannot terminate them
      # before they react): they ignore it, running or idle, and print nothing.
      children = _children(driver.process.pid)
      assert len(children) == 4  # three workers and the resource tracker
      for pid in children:
        os.kill(pid, signal.SIGINT)
      time.sleep(1.0)
      assert all(_alive(pid) for pid in children) and driver.process.poll() is None
      os.killpg(driver.process.pid, signal.SIGINT)  # what the terminal does on Ctrl-C
    else:
      os.kill(driver.process.pid, signal.SIGTERM)
    stdout, stderr = driver.process.communicate(timeout=30)
    assert driver.process.returncode == 3, stderr
    assert stdout.splitlines() == [
      "interrupted during toys, 2 of 4 units done",
      "state dir gone: True",
    ]
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr
    assert not any(_alive(pid) for pid in driver.workers)  # stopped before the driver exited
    assert _worker_pids(driver.marker_dir, ["quick 0", "quick 1"])  # the finished tasks ran
  finally:
    driver.cleanup()


def test_stale_state_dirs_of_dead_owners_are_removed(tmp_path):
  dead = subprocess.run(
    [sys.executable, "-c", "import os; print(os.getpid())"],
    check=True,
    capture_output=True,
    text=True,
  )
  dead_pid = int(dead.stdout)
  stale = tmp_path / f"{lifeline.PREFIX}{dead_pid}_abc"
  live = tmp_path / f"{lifeline.PREFIX}{os.getppid()}_abc"  # pytest's parent: alive
  unnamed = tmp_path / f"{lifeline.PREFIX}abc"  # no owner in the name: none to tell
  other = tmp_path / f"other_{dead_pid}_abc"
  for d in (stale, live, unnamed, other):
    d.mkdir()
    (d / "123").write_text("train dense/0")
  assert lifeline.remove_stale_state_dirs(str(tmp_path)) == [str(stale)]
  assert sorted(os.listdir(tmp_path)) == sorted(d.name for d in (live, unnamed, other))


def test_a_new_pool_removes_stale_state_dirs_and_names_its_own():
  dead = subprocess.run(
    [sys.executable, "-c", "import os; print(os.getpid())"],
    check=True,
    capture_output=True,
    text=True,
  )
  stale = tempfile.mkdtemp(prefix=f"{lifeline.PREFIX}{int(dead.stdout)}_")
  try:
    with local.LocalExecutor(workers=1) as ex:
      ex.run(contract.squares(1), log=lambda _: None)
      assert not os.path.exists(stale)
      own = ex._state_dir
      assert lifeline.owner_pid(own) == os.getpid() and os.path.isdir(own)
    assert not os.path.exists(own)
  finally:
    if os.path.exists(stale):
      os.rmdir(stale)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_workers_spawned_from_the_main_thread_ask_for_sigkill():
  task = [contract.toy("pdeathsig", "parent_death_signal")]
  with local.LocalExecutor(workers=1) as ex:
    assert ex.run(task, log=lambda _: None) == {"pdeathsig": signal.SIGKILL}
