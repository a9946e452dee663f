"""Worker processes die with their driver, and leave no state behind.

A local pool worker (~1 GB with TensorFlow loaded) must not outlive the driver that spawned it:
after `kill -9` or a SIGTERM of the driver it would be reparented to PID 1 and keep training.
Two mechanisms, both set up by the worker's initializer (`worker.initialize`):

  * `set_parent_death_signal`: Linux's `prctl(PR_SET_PDEATHSIG, SIGKILL)`. The kernel sends the
    signal when the *thread* that spawned the worker exits, not the process: so it is only asked
    for when the driver spawns its workers from its main thread (`LocalExecutor` spawns all of a
    pool's processes at once, from the thread that creates the pool; the pool's manager thread
    only spawns replacements with `max_tasks_per_child`, which is not used).
  * `watch_parent`: a daemon thread that ends the worker with `os._exit` once `os.getppid()` is
    no longer the driver's pid (the portable fallback: any OS, any spawning thread), checked
    once a second.

With its workers gone, multiprocessing's resource tracker (spawned by the driver, sharing a pipe
with the driver and the workers) reads end-of-file and exits by itself.

A driver's state directory (`make_state_dir`, `tf_forget_executor_<pid>_XXXXXXXX` in the
temporary directory) names its owner's pid, so a later executor removes those whose owner is
dead (`remove_stale_state_dirs`): a `kill -9` leaves nothing behind for long.

Standard library only.
"""

import ctypes
import os
import re
import shutil
import sys
import tempfile
import threading
import time

PREFIX = "tf_forget_executor_"
_STATE_DIR = re.compile(r"^" + PREFIX + r"(\d+)_")
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
ORPHAN_EXIT_CODE = 70  # a worker that found its driver gone (nobody reads it: for `strace`)


def set_parent_death_signal(signum):
  """Asks Linux to send `signum` to this process when the thread that spawned it exits.

  Args:
    signum: the signal, e.g. `signal.SIGKILL`.

  Returns:
    True if the kernel accepted it; False elsewhere (not Linux, no prctl).
  """
  if not sys.platform.startswith("linux"):
    return False
  try:
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.prctl(_PR_SET_PDEATHSIG, int(signum), 0, 0, 0) == 0
  except (OSError, AttributeError):
    return False


def _watch(parent_pid, interval_s):
  while os.getppid() == parent_pid:
    time.sleep(interval_s)
  os._exit(ORPHAN_EXIT_CODE)


def watch_parent(parent_pid, interval_s=1.0):
  """Ends this process (`os._exit`) as soon as its parent is no longer `parent_pid`.

  Checks once at once (the parent may have died before this worker got here), then every
  `interval_s` seconds in a daemon thread.

  Args:
    parent_pid: the driver's pid, as the driver saw it (`os.getpid()` there).
    interval_s: seconds between two checks.
  """
  if os.getppid() != parent_pid:
    os._exit(ORPHAN_EXIT_CODE)
  threading.Thread(
    target=_watch, args=(parent_pid, interval_s), daemon=True, name="tf_forget-parent-watchdog"
  ).start()


def pid_alive(pid):
  """True if a process `pid` exists (including one of another user, or a zombie)."""
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return False
  except PermissionError:
    return True
  return True


def owner_pid(path):
  """The pid in the name of a state directory `path`; None if it is not one."""
  match = _STATE_DIR.match(os.path.basename(path))
  return int(match.group(1)) if match else None


def make_state_dir(parent=None):
  """A new state directory of this process: <parent or tempdir>/tf_forget_executor_<pid>_XXXX."""
  return tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}_", dir=parent)


def remove_stale_state_dirs(parent=None):
  """Removes the state directories of this user whose owner process is dead.

  Directories of live owners, of other users and without a pid in their name are kept (a
  recycled pid keeps a stale directory: the safe side).

  Args:
    parent: where to look (default: the temporary directory).

  Returns:
    The paths removed, sorted.
  """
  parent = parent or tempfile.gettempdir()
  try:
    names = os.listdir(parent)
  except OSError:
    return []
  removed = []
  for name in sorted(names):
    path = os.path.join(parent, name)
    pid = owner_pid(path)
    if pid is None or pid == os.getpid() or pid_alive(pid):
      continue
    try:
      if not os.path.isdir(path) or os.stat(path).st_uid != os.getuid():
        continue
    except OSError:
      continue
    shutil.rmtree(path, ignore_errors=True)
    if not os.path.exists(path):
      removed.append(path)
  return removed
