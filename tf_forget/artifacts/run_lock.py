"""One writer per run directory, and no writing into a directory tf_forget did not make.

`check_ours(run_dir)`: a run directory is either new, empty, or holds a record tf_forget wrote
there (`AUDIT_RECORD`, `RUN_RECORD`, `MEMBER_RECORD`, the lock): an `audit.json` of its schema
with the run's identity, a population's `run.json` of its schema, a member's `metadata.json`,
or the lock file naming its holder. A file's or folder's name alone proves nothing (a folder
holding a `run.json` of the user's, or an empty `members/`): anything else is the user's
directory, and a command refuses it in one line naming what it holds instead of writing (and
replacing `deploy/`) there.

`acquire(run_dir, command)` takes the run directory's lock before the command's first write:
`<run>/.tf_forget.lock` holds the holder's pid, host, start time and command (JSON). On a
local file system the lock is an exclusive `fcntl.flock` on that file, which the kernel drops
when its holder dies (kill -9 included); a second command finds it held and is refused in one
line naming the holder. A lock file that still names a holder although nobody holds the lock
was left by a command that died: the new holder takes it over and says so. `scheme://`
directories (gs://) have no flock: there the file alone is the lock, refused while it names a
live process on this host or any process on another host (the user deletes it when that run
is gone). `release()` removes the file and drops the lock, so a finished or failed command
leaves nothing behind; a file left by a killed holder is what "take over" finds. Because the file
is removed on release, `acquire` checks after locking that the path still names the file it
locked (else another holder removed it meanwhile) and tries again.
"""

import datetime
import fcntl
import json
import os
import socket

from tf_forget.artifacts import audit_json
from tf_forget.artifacts import errors
from tf_forget.artifacts import fileio
from tf_forget.artifacts import filesystem
from tf_forget.artifacts import layout
from tf_forget.artifacts import member_metadata
from tf_forget.artifacts import run_json


class LockError(errors.Error):
  """The run directory is another command's, or not tf_forget's (one line)."""


# The records that make a directory tf_forget's: (schema, keys it holds) of the JSON objects
# its writers put there — audit.json (`config`: the run's identity), a population's run.json
# and a member's metadata.json.
AUDIT_RECORD = (audit_json.SCHEMA, (audit_json.IDENTITY_KEY,))
RUN_RECORD = (run_json.SCHEMA, ("dataset", "variants", "members"))
MEMBER_RECORD = (member_metadata.SCHEMA, ("variant", "k"))
_MAX_RECORD_BYTES = 1 << 24  # a record is a few KiB; a larger file of that name is not one


def _record(path, record):
  """Whether `path` is a JSON object of `record`'s schema holding its keys (False if not, or
  unreadable)."""
  schema, keys = record
  try:
    if not filesystem.isfile(path) or filesystem.getsize(path) > _MAX_RECORD_BYTES:
      return False
    doc = fileio.read_json(path, "record")
  except errors.Error:
    return False
  return isinstance(doc, dict) and doc.get("schema") == schema and all(k in doc for k in keys)


def _holder_record(path):
  """Whether `path` is a lock file naming its holder (`_info`)."""
  try:
    if not filesystem.isfile(path) or filesystem.getsize(path) > _MAX_RECORD_BYTES:
      return False
    info = _parse(fileio.read_bytes(path).decode("utf-8", "replace"))
  except errors.Error:
    return False
  return info is not None and {"host", "command", "start"} <= set(info)


def is_run_dir(run_dir):
  """Whether `run_dir` holds a record tf_forget wrote (module docstring)."""
  if (
    _record(layout.audit_file(run_dir), AUDIT_RECORD)
    or _record(layout.run_file(run_dir), RUN_RECORD)
    or _holder_record(layout.lock_file(run_dir))
  ):
    return True
  for variant, k, _ in layout.walk(layout.members_root(run_dir)):
    if _record(layout.member_metadata(run_dir, variant, k), MEMBER_RECORD):
      return True
  return False


def check_ours(run_dir):
  """Raises LockError if `run_dir` is a non-empty directory that holds no record of tf_forget's
  (`is_run_dir`), naming what it holds."""
  if not filesystem.isdir(run_dir):
    return
  entries = sorted(filesystem.listdir(run_dir))
  if not entries or is_run_dir(run_dir):
    return
  shown = ", ".join(entries[:5]) + (f" and {len(entries) - 5} more" if len(entries) > 5 else "")
  raise LockError(
    f"{run_dir} is not empty and is not a tf_forget run directory (it holds "
    f"{shown}; no {layout.AUDIT_FILE} or {layout.RUN_FILE} that tf_forget wrote): "
    "choose a new or empty directory"
  )


def _holder_text(info):
  return (
    f"{info.get('command', 'a tf_forget command')} (pid {info.get('pid')} on "
    f"{info.get('host')}, started {info.get('start')})"
  )


def _parse(text):
  try:
    info = json.loads(text) if text.strip() else None
  except ValueError:
    return None
  return info if isinstance(info, dict) and "pid" in info else None


def _alive(info):
  """Whether the holder `info` may still run (a process on another host counts as alive)."""
  if info.get("host") != socket.gethostname():
    return True
  try:
    os.kill(int(info["pid"]), 0)
  except ProcessLookupError:
    return False
  except (PermissionError, ValueError, TypeError):
    return True
  return True


def _info(command):
  return {
    "pid": os.getpid(),
    "host": socket.gethostname(),
    "command": command,
    "start": datetime.datetime.now().isoformat(timespec="seconds"),
  }


class RunLock:
  """A held lock on one run directory; `release()` (or the process's end) drops it."""

  def __init__(self, path, fd, note):
    self.path, self._fd, self.note = path, fd, note

  def release(self):
    """Removes the lock file and drops the lock (idempotent)."""
    if self._fd is None:
      if self.path is not None and filesystem.is_url(self.path):
        filesystem.remove(self.path)
        self.path = None
      return
    try:
      os.remove(self.path)
    except FileNotFoundError:
      pass
    fcntl.flock(self._fd, fcntl.LOCK_UN)
    os.close(self._fd)
    self._fd = None

  def __enter__(self):
    return self

  def __exit__(self, *exc):
    self.release()


def _locked_fd(run_dir, path, attempts=20):
  """An fd of the lock file at `path` holding its exclusive flock (see the module docstring)."""
  for _ in range(attempts):
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
      fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
      info = _parse(os.pread(fd, 4096, 0).decode("utf-8", "replace")) or {}
      os.close(fd)
      raise LockError(
        f"{run_dir} is in use by {_holder_text(info)}; wait for it to finish or stop it"
      ) from None
    try:
      if os.stat(path).st_ino == os.fstat(fd).st_ino:
        return fd
    except FileNotFoundError:
      pass
    os.close(fd)  # its holder removed the file after we opened it: lock the new one
  raise LockError(f"{run_dir}: could not take the lock (its lock file keeps changing)")


def _acquire_local(run_dir, command):
  path = layout.lock_file(run_dir)
  os.makedirs(run_dir, exist_ok=True)
  fd = _locked_fd(run_dir, path)
  old = _parse(os.pread(fd, 4096, 0).decode("utf-8", "replace"))
  os.ftruncate(fd, 0)
  os.pwrite(fd, json.dumps(_info(command)).encode("utf-8"), 0)
  os.fsync(fd)
  note = f"taking over the lock of {_holder_text(old)}, which is no longer running" if old else None
  return RunLock(path, fd, note)


def _acquire_url(run_dir, command):
  path = layout.lock_file(run_dir)
  old = (
    _parse(fileio.read_bytes(path).decode("utf-8", "replace")) if filesystem.exists(path) else None
  )
  if old and _alive(old):
    raise LockError(
      f"{run_dir} is in use by {_holder_text(old)}; wait for it to finish, or "
      f"delete {path} if that run is gone"
    )
  fileio.write_bytes(path, json.dumps(_info(command)).encode("utf-8"))
  note = f"taking over the lock of {_holder_text(old)}, which is no longer running" if old else None
  return RunLock(path, None, note)


def acquire(run_dir, command, check=True):
  """Takes `run_dir`'s lock for `command` (creating the directory); returns the `RunLock`.

  Its `note` is a line to show when the lock of a dead holder was taken over (else None).
  `check=False` skips `check_ours` (a command that adds artifacts to an existing run). The
  finished run's record (`layout.finished_file`) is removed once the lock is held.

  Raises:
    LockError: another live command holds the lock, or `run_dir` is not tf_forget's.
    errors.WriteError: the lock file cannot be written.
  """
  if check:
    check_ours(run_dir)
  try:
    if filesystem.is_url(run_dir):
      return _acquire_url(run_dir, command)
    lock = _acquire_local(run_dir, command)
  except OSError as e:
    raise errors.write_error(layout.lock_file(run_dir), e) from e
  _forget_finished(run_dir)
  return lock


def _forget_finished(run_dir):
  """Removes the finished run's record (`tf_forget.pipeline.finished_run`): its holder is about
  to write, and the run is finished again only when an audit ends."""
  path = layout.finished_file(run_dir)
  try:
    os.remove(path)
  except FileNotFoundError:
    pass
  except OSError as e:
    raise errors.write_error(path, e) from e
