"""The worker side: resolve a task's import string, call it, and send back a picklable envelope.

Every executor runs a task as `envelope(key, fn, kwargs)` in its worker (the driver itself for
`InlineExecutor`, which calls `call` directly). `envelope` never raises for a task's exception:
it returns {"ok": True, "value": ...} or {"ok": False, ...} with the exception's type name,
one-line message, traceback text and, for an `errors.Error` that survives a pickle round trip,
the pickled exception. So a task's exception can never break the transport (an exception
class that cannot be unpickled in the driver would otherwise break a process pool).

Standard library and `tf_forget.artifacts.errors` only: a worker imports TensorFlow only when a
task function does. Once one has, the objects it made are kept from the cycle collector
(`collector.settle`).
"""

import importlib
import json
import os
import pickle
import signal
import sys
import traceback

from tf_forget.artifacts import errors
from tf_forget.executor import collector
from tf_forget.executor import lifeline

_STATE = {"dir": None}


def resolve(fn):
  """The function named by "package.module:function" (the function may be a dotted attribute)."""
  module_name, _, attribute = fn.partition(":")
  target = importlib.import_module(module_name)
  for name in attribute.split("."):
    target = getattr(target, name)
  return target


def call(fn, kwargs):
  """The trampoline: imports `fn` ("package.module:function") and returns `fn(**kwargs)`."""
  return resolve(fn)(**kwargs)


def message(exc):
  """`exc`'s message on one line (for an OSError with its path, unlike `errors.one_line`)."""
  return " ".join((str(exc) or type(exc).__name__).split())[: errors.MAX_MESSAGE]


def check_result(value):
  """Raises TypeError if `value` is not JSON-able (the contract of every task function)."""
  try:
    json.dumps(value)
  except (TypeError, ValueError) as e:
    raise TypeError(f"the task returned a value that is not JSON-able: {errors.one_line(e, 200)}")


def initialize(env, state_dir, parent_pid=None, death_signal=False, preload=()):
  """Initializer of a local pool worker: lifeline to the driver, SIGINT, `env`, state directory,
  then the modules `preload` imported.

  Args:
    env: {name: value} environment variables to set (None: keep the inherited environment).
    state_dir: directory in which the worker writes the key of its running task to a file named
      by its pid, so that the driver can tell which task a dead worker was running.
    parent_pid: the driver's pid: the worker ends itself once its parent is another process
      (`lifeline.watch_parent`). None: no watchdog.
    death_signal: also ask Linux for SIGKILL when the spawning thread exits
      (`lifeline.set_parent_death_signal`; only when the driver spawned it from its main thread).
    preload: modules to import now, before the first task; one that fails to import is left to
      the task that needs it, which raises its error.
  """
  ignore_sigint()
  if death_signal:
    lifeline.set_parent_death_signal(signal.SIGKILL)
  if parent_pid is not None:
    lifeline.watch_parent(parent_pid)  # after the prctl: catches a driver that died before it
  for name, value in (env or {}).items():
    os.environ[str(name)] = str(value)
  _STATE["dir"] = state_dir
  for module in preload:
    try:
      importlib.import_module(module)
    except Exception:  # an error here would break the pool: the task reports it instead
      pass


def ignore_sigint():
  """Ignores SIGINT in this process (and unblocks it: the driver spawns workers with it blocked).

  Ctrl-C goes to the whole foreground process group: the driver stops the workers itself, and
  a worker must neither die of it half-way nor print a KeyboardInterrupt traceback.
  Setting SIG_IGN also discards a SIGINT that arrived while the worker was starting.
  """
  signal.signal(signal.SIGINT, signal.SIG_IGN)
  if hasattr(signal, "pthread_sigmask"):
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _note_running(key):
  if _STATE["dir"]:
    try:
      with open(os.path.join(_STATE["dir"], str(os.getpid())), "w", encoding="utf-8") as f:
        f.write(key)
    except OSError:
      pass


def running_key(state_dir, pid):
  """The key of the task the worker `pid` was running ("" if none / unknown)."""
  try:
    with open(os.path.join(state_dir, str(pid)), encoding="utf-8") as f:
      return f.read()
  except OSError:
    return ""


def _pickled_error(exc):
  """The pickled `exc` if it is an `errors.Error` that survives a round trip, else None."""
  if not isinstance(exc, errors.Error):
    return None
  try:
    data = pickle.dumps(exc)
    clone = pickle.loads(data)
  except Exception:
    return None
  if type(clone) is not type(exc) or str(clone) != str(exc):
    return None
  return data


def envelope(key, fn, kwargs):
  """Runs the task in this process; returns its envelope (never raises for the task's errors).

  Args:
    key: the task's key (noted for the driver while the task runs).
    fn: "package.module:function".
    kwargs: keyword arguments of the function.

  Returns:
    {"ok": True, "value": <return value>} or {"ok": False, "type": <exception type name>,
    "message": <one line>, "traceback": <text>, "is_error": <an errors.Error?>,
    "pickled": <bytes or None>}.
  """
  _note_running(key)
  collector.settle()  # from the task after the one that imported TensorFlow
  try:
    value = call(fn, kwargs)
    check_result(value)
    return {"ok": True, "value": value}
  except (Exception, SystemExit) as e:
    return {
      "ok": False,
      "type": type(e).__name__,
      "message": message(e),
      "traceback": "".join(traceback.format_exception(type(e), e, e.__traceback__)),
      "is_error": isinstance(e, errors.Error),
      "pickled": _pickled_error(e),
    }
  finally:
    _note_running("")
    _flush_standard_streams()


def _flush_standard_streams():
  """Flushes what the task printed: an idle worker may be stopped with SIGTERM (`local.close`)."""
  for stream in (sys.stdout, sys.stderr):
    try:
      stream.flush()
    except (AttributeError, OSError, ValueError):
      pass
