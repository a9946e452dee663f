"""What a command prints, and where TensorFlow's own output goes.

TensorFlow, LiteRT and the TFLite converter write to the process's file descriptor 2 from C++
(`cuInit` errors on the CPU wheel, "Could not find cuda drivers", converter and XNNPACK INFO
lines), and spawned worker processes inherit that descriptor. A command shows its own lines
only: `capture()` points descriptor 2 at a log file before TensorFlow is imported, and keeps a
duplicate of the terminal's stderr for the command's own messages (`error`, `say`). The log
starts as a temporary file (nothing is written into a run directory before the command's
input is validated); `attach(run_dir)` moves it to `<run_dir>/logs/<command>-<time>-<pid>.log`
once the run directory is the command's (`tf_forget.artifacts.run_lock`), so everything that
was written to it, and everything workers write later, lands there. A command that stops before
`attach` removes its temporary log. With `verbose=True` nothing is captured.

Python's own `sys.stderr` stays descriptor 2 (warnings and absl logging go to the log);
standard output is left alone: progress lines are the command's own.

A `scheme://` run directory (`gs://…`) cannot hold an open log: the log stays local and is
copied to `<run_dir>/logs/` when the command ends (`close`).

Standard output whose reader went away (`tf-forget plan | head -1`) is not an error of the
command: `stdout_gone` tells it from other broken pipes, and `drop_stdout` points descriptor 1
at /dev/null so that nothing more (Python's flush at exit included) fails on it; a command
still at work then stops with `PIPE_CLOSED`, as a shell reports a writer stopped by SIGPIPE
(`tf_forget.cli.app`).
"""

import datetime
import os
import select
import shutil
import sys
import tempfile

from tf_forget.artifacts import fileio
from tf_forget.artifacts import filesystem

LOGS_DIR = "logs"
PIPE_CLOSED = 141  # 128 + SIGPIPE: standard output's reader went away


class _State:
  """The process's capture: the console stream, the log file's path, the run directory."""

  def __init__(self):
    self.console = None  # text stream on a duplicate of the original stderr
    self.log_path = None
    self.attached = False
    self.remote_dir = None
    self.name = "tf_forget"
    self.keep = False
    self.pending_dir = None  # `attach(..., defer=True)`: moved there by `close` on success


_STATE = _State()


def console():
  """The stream the command's own messages go to (the terminal's stderr)."""
  return _STATE.console or sys.stderr


def error(line):
  """Writes one line to the console's stderr."""
  stream = console()
  stream.write(line.rstrip("\n") + "\n")
  stream.flush()


def stdout_gone():
  """Whether standard output is a pipe (or socket) whose reading end is closed."""
  try:
    fd = sys.stdout.fileno()
  except (AttributeError, ValueError, OSError):  # no stdout, or one without a descriptor
    return False
  poller = select.poll()
  poller.register(fd, select.POLLOUT)
  return any(events & select.POLLERR for _, events in poller.poll(0))


def drop_stdout():
  """Points descriptor 1 at /dev/null and empties Python's buffer of it (its reader is gone)."""
  devnull = os.open(os.devnull, os.O_WRONLY)
  try:
    os.dup2(devnull, sys.stdout.fileno())
  finally:
    os.close(devnull)
  try:
    sys.stdout.flush()  # what was buffered now goes to /dev/null
  except OSError:
    pass


def log_path():
  """The log file's path (None when not capturing)."""
  return _STATE.log_path


def capture(name, verbose=False):
  """Sends descriptor 2 to a temporary log file; the console keeps the original stderr.

  Args:
    name: the command's name (the log file's prefix).
    verbose: True to capture nothing (TensorFlow's output stays on the terminal).
  """
  _STATE.name = name
  if verbose or _STATE.console is not None:
    return
  sys.stderr.flush()
  _STATE.console = os.fdopen(os.dup(2), "w", buffering=1, encoding="utf-8", errors="replace")
  fd, path = tempfile.mkstemp(prefix=f"tf_forget_{name}_", suffix=".log")
  os.dup2(fd, 2)
  os.close(fd)
  _STATE.log_path = path


def _log_name():
  stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
  return f"{_STATE.name}-{stamp}-{os.getpid()}.log"


def attach(run_dir, defer=False):
  """Moves the log into `<run_dir>/logs/` (the rest of the run appends there); returns its path.

  Call it once the run directory is the command's (validated, locked). With `defer=True` the
  log stays temporary and `close` moves it there only if the command did not fail with a
  one-line error (a stage binary that refuses its input leaves nothing in the run). Without a
  capture this does nothing and returns None.
  """
  if _STATE.log_path is None or _STATE.attached:
    return _STATE.log_path
  if defer:
    _STATE.pending_dir = run_dir
    return _STATE.log_path
  base = _log_name()
  if filesystem.is_url(run_dir):
    _STATE.remote_dir = filesystem.join(run_dir, LOGS_DIR, base)
    _STATE.attached = True
    return _STATE.log_path
  logs = os.path.join(run_dir, LOGS_DIR)
  os.makedirs(logs, exist_ok=True)
  path = os.path.join(logs, base)
  sys.stderr.flush()
  with open(_STATE.log_path, "rb") as src, open(path, "ab") as dst:
    shutil.copyfileobj(src, dst)
  fd = os.open(path, os.O_WRONLY | os.O_APPEND)
  os.dup2(fd, 2)
  os.close(fd)
  os.remove(_STATE.log_path)
  _STATE.log_path, _STATE.attached = path, True
  return path


def keep():
  """Keeps even an unattached temporary log at `close` (it holds an unexpected error's output)."""
  _STATE.keep = True


def close(failed=False):
  """Ends the capture: copies a remote run's log, removes an unattached temporary log.

  Args:
    failed: the command stopped with a one-line error (a deferred log is then dropped).
  """
  if _STATE.log_path is None:
    return
  sys.stderr.flush()
  if _STATE.pending_dir is not None and not failed:
    attach(_STATE.pending_dir)
  if _STATE.remote_dir is not None:
    try:
      fileio.copy(_STATE.log_path, _STATE.remote_dir)
    except Exception:  # the log is a courtesy; keep the result
      error(
        f"{_STATE.name}: could not copy the log to {_STATE.remote_dir}; it is at {_STATE.log_path}"
      )
      return
  if (not _STATE.attached and not _STATE.keep) or _STATE.remote_dir is not None:
    try:
      os.remove(_STATE.log_path)
    except OSError:
      pass


def tail(lines=20):
  """The last `lines` lines of the log ("" when not capturing), for an unexpected error."""
  if _STATE.log_path is None or not os.path.exists(_STATE.log_path):
    return ""
  sys.stderr.flush()
  with open(_STATE.log_path, "rb") as f:
    f.seek(0, os.SEEK_END)
    f.seek(max(0, f.tell() - 64 * 1024))
    text = f.read().decode("utf-8", "replace")
  return "\n".join(text.splitlines()[-lines:])
