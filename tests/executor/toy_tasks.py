"""Toy task functions for the executor tests: no TensorFlow, fast, steered by marker files.

Each function is run by import string ("tests.executor.toy_tasks:<name>") in the executors'
workers; the marker files in a test's temporary directory say what ran where and when.
"""

import os
import signal
import sys
import time

from tf_forget.artifacts import errors


class ToyError(errors.Error):
  """An `errors.Error` subclass defined outside tf_forget (must round-trip through pickle)."""


class UnpicklableError(errors.Error):
  """An `errors.Error` whose constructor takes two arguments: unpickling it fails."""

  def __init__(self, what, why):
    super().__init__(f"{what} failed because {why}")


def square(x):
  """x * x, and the worker's pid."""
  return {"square": x * x, "pid": os.getpid()}


def touch(path):
  """Creates the marker file `path` holding this process's pid, whole (temp name, then rename:
  a test that sees the file reads the pid, never an empty file)."""
  directory, name = os.path.split(path)
  tmp = os.path.join(directory, f".tmp-{os.getpid()}-{name}")  # no marker name starts so
  with open(tmp, "w", encoding="utf-8") as f:
    f.write(str(os.getpid()))
  os.replace(tmp, path)


def started(marker_dir, name, seconds=0.0):
  """Notes `name` as started in `marker_dir`, sleeps `seconds`, returns `name`."""
  touch(os.path.join(marker_dir, f"started-{name}"))
  time.sleep(seconds)
  return name


def meet(marker_dir, me, peer, timeout=30.0):
  """Creates my marker, waits for the peer's; True if both ran at the same time."""
  touch(os.path.join(marker_dir, me))
  deadline = time.monotonic() + timeout
  while time.monotonic() < deadline:
    if os.path.exists(os.path.join(marker_dir, peer)):
      return True
    time.sleep(0.02)
  return False


def fail(marker_dir, name, message):
  """Notes `name` as started, then raises ToyError(message)."""
  started(marker_dir, name)
  raise ToyError(message)


def fail_unpicklable():
  raise UnpicklableError("the toy", "its error cannot be unpickled")


def divide(x, y):
  return x / y


def not_json():
  return {"a set": {1, 2}}


def die_once(marker, value):
  """Kills its own process the first time (no `marker` yet); returns `value` afterwards."""
  if not os.path.exists(marker):
    touch(marker)
    os.kill(os.getpid(), signal.SIGKILL)
  return value


def always_die(marker_dir, name):
  """Counts an attempt in `marker_dir`, then kills its own process."""
  touch(os.path.join(marker_dir, f"attempt-{name}-{time.monotonic_ns()}"))
  os.kill(os.getpid(), signal.SIGKILL)


def exit_hard(code):
  """Ends its process with os._exit (no cleanup, no exception)."""
  os._exit(code)


def env_value(name):
  return os.environ.get(name)


def cwd():
  return os.getcwd()


def parent_death_signal():
  """The parent-death signal of this process (Linux `prctl(PR_GET_PDEATHSIG)`; 0: none)."""
  import ctypes

  value = ctypes.c_int(-1)
  ctypes.CDLL(None, use_errno=True).prctl(2, ctypes.byref(value), 0, 0, 0)  # PR_GET_PDEATHSIG
  return value.value


def interrupt():
  """Raises KeyboardInterrupt, as Ctrl-C does in the driver (InlineExecutor runs it there)."""
  raise KeyboardInterrupt()


def slow_teardown(seconds):
  """Makes this worker's exit take `seconds` (as TensorFlow's teardown does); returns its pid."""
  import atexit

  atexit.register(time.sleep, seconds)
  return os.getpid()


def print_unflushed(text):
  """Prints `text` to a block-buffered stdout, without flushing it."""
  print(text, end="")
  return len(text)


def cores_of_my_threads():
  """{sorted cores}: the distinct CPU masks of this process's threads, as sorted lists."""
  import threading

  threading.Thread(target=time.sleep, args=(0.2,)).start()  # a thread started now inherits
  masks = set()
  for tid in os.listdir("/proc/self/task"):
    try:
      masks.add(tuple(sorted(os.sched_getaffinity(int(tid)))))
    except OSError:
      pass
  return sorted(list(m) for m in masks)


def cores_while_meeting(marker_dir, me, peer, timeout=30.0):
  """Meets `peer` (`meet`), waits until the driver has pinned this worker to one core (at most
  `timeout` s), notes `cores_of_my_threads()`, and returns it once `peer` has noted its own."""
  meet(marker_dir, me, peer, timeout)
  deadline = time.monotonic() + timeout
  while len(os.sched_getaffinity(0)) > 1 and time.monotonic() < deadline:
    time.sleep(0.02)
  cores = cores_of_my_threads()
  meet(marker_dir, f"{me}-noted", f"{peer}-noted", timeout)
  return cores


def loaded(names):
  """Which of the modules `names` this worker has imported, and its pid."""
  return {"loaded": [n for n in names if n in sys.modules], "pid": os.getpid()}


def to_stderr(text):
  """Writes `text` and a newline to this process's file descriptor 2."""
  os.write(2, (text + "\n").encode())
  return text
