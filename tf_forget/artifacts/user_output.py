"""A file written at a path the user gave (`--summary`, `$GITHUB_STEP_SUMMARY`): that path is
written, and nothing else is ever put in its place.

`check(given, what, run_dir, append)` runs before any work and returns an `Output`, or raises a
one-line `errors.WriteError` naming the flag (`what`). By what the path is:

  * nothing: its directory must exist and take a new file (a probe written and removed);
  * a regular file, writable, in a writable directory: replaced atomically (a temporary file
    beside it, then a rename), keeping its permission bits;
  * a symlink: what it points to, by these rules (a regular file is replaced at its real path,
    so the link stays a link; a link to nothing creates its target);
  * a character device (`/dev/null`, a terminal) or a FIFO: opened for writing now and written
    in place, never replaced; a FIFO no process reads is refused (its write would wait for
    ever);
  * an open file descriptor (`/dev/stdout` redirected to a file, `/dev/fd/3`): appended to
    through it;
  * a directory, a block device (a disk), a socket: refused.

A path inside `run_dir` where tf_forget writes (`layout.own_entry`: `deploy/`, `tables/`,
`report.json`, `audit.json`, ...) is refused too (`check_outside`): a re-run replaces those
whole, and would delete it or call it the user's. Elsewhere in the run directory is fine.

`write(output, data)` writes (after what a regular file holds, for `append`), `close(output)`
releases an opened device or FIFO. `scheme://` paths are written by `fileio.write_bytes`.
"""

import dataclasses
import errno
import fcntl
import os
import stat
from typing import Optional

from tf_forget.artifacts import errors
from tf_forget.artifacts import fileio
from tf_forget.artifacts import filesystem
from tf_forget.artifacts import layout

_DESCRIPTOR_DIRS = ("/proc/", "/dev/fd/")  # where a path names an open file descriptor


@dataclasses.dataclass
class Output:
  """A checked output path.

  Attributes:
    given: the path as the user gave it.
    path: where the bytes go (a symlinked regular file's real path).
    what: the flag or variable that named it, for messages.
    append: write after what the file holds.
    fd: the open descriptor of a character device, FIFO or descriptor link written in place,
      else None.
  """

  given: str
  path: str
  what: str
  append: bool = False
  fd: Optional[int] = None


def check_outside(run_dir, path, what):
  """Refuses `path` where tf_forget writes in `run_dir` (module docstring).

  Raises:
    errors.WriteError: one line naming the entry it would land in.
  """
  if run_dir is None or filesystem.is_url(run_dir) != filesystem.is_url(path):
    return
  real = (lambda p: p) if filesystem.is_url(path) else os.path.realpath
  entry = layout.own_entry(real(run_dir), real(path))
  if entry is None:
    return
  own = os.path.join(run_dir, entry)
  where = (
    "is the run directory"
    if entry == "."
    else (
      f"{'is' if real(path) == real(own) else 'lies in'} {own}, which tf_forget writes on every run"
    )
  )
  raise errors.WriteError(
    f"{what}: {path} {where}: choose a path outside tf_forget's folders "
    "and files (beside them in the run directory is fine)"
  )


def _probe(what, directory):
  """Checks that `directory` (which exists) takes a new file."""
  try:
    fileio.check_writable(directory)
  except errors.WriteError as e:
    raise errors.WriteError(f"{what}: {errors.one_line(e)}") from e


def _descriptor_link(path, hops=40):
  """Whether `path` names an open file descriptor (`/dev/stdout`, `/dev/fd/3`, `/proc/self/fd/1`):
  a link the kernel resolves, which must be written through, not at its target's path."""
  for _ in range(hops):
    if path.startswith(_DESCRIPTOR_DIRS):
      return True
    if not os.path.islink(path):
      return False
    path = os.path.normpath(os.path.join(os.path.dirname(path), os.readlink(path)))
  return False


def _open_in_place(what, path, fifo=False, flags=0):
  """A write descriptor of the character device, FIFO or descriptor link `path` (blocking
  writes)."""
  try:
    fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY | flags)
  except OSError as e:
    if fifo and e.errno == errno.ENXIO:  # nobody has the FIFO open for reading
      raise errors.WriteError(
        f"{what}: no process reads the FIFO {path} (the write would wait "
        "for ever): start its reader first"
      ) from e
    raise errors.WriteError(f"{what}: cannot write {path}: {errors.one_line(e)}") from e
  fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
  return fd


def check(given, what, run_dir=None, append=False):
  """The `Output` of the user's path `given`, checked before any work (module docstring).

  Args:
    given: the path (absolute, `filesystem.user_path`) or a `scheme://` URL.
    what: the flag or variable naming it ("--summary").
    run_dir: the run directory of the command, if any (`check_outside`).
    append: write after what a regular file holds.

  Raises:
    errors.WriteError: one line, the path cannot or must not be written.
  """
  check_outside(run_dir, given, what)
  if filesystem.is_url(given):
    return Output(given, given, what, append)
  try:
    st = os.stat(given)  # what a symlink points to
  except FileNotFoundError:
    st = None
  except OSError as e:
    raise errors.WriteError(f"{what}: cannot write {given}: {errors.one_line(e)}") from e
  if st is not None and stat.S_ISREG(st.st_mode) and _descriptor_link(given):
    return Output(given, given, what, append, _open_in_place(what, given, flags=os.O_APPEND))
  if st is None or stat.S_ISREG(st.st_mode):
    path = os.path.realpath(given)
    parent = os.path.dirname(path)
    if not os.path.isdir(parent):
      raise errors.WriteError(f"{what}: cannot write {given}: no directory {parent}")
    if st is not None and not os.access(path, os.W_OK):
      raise errors.WriteError(f"{what}: cannot write {given}: it is read-only")
    _probe(what, parent)
    return Output(given, path, what, append)
  if stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode):
    return Output(
      given, given, what, append, _open_in_place(what, given, stat.S_ISFIFO(st.st_mode))
    )
  kind = (
    "a directory, not a file"
    if stat.S_ISDIR(st.st_mode)
    else "a block device (a disk): it is not written"
    if stat.S_ISBLK(st.st_mode)
    else "a socket, not a file"
    if stat.S_ISSOCK(st.st_mode)
    else "not a regular file"
  )
  raise errors.WriteError(f"{what}: {given} is {kind}")


def close(output):
  """Releases the descriptor of an in-place `output` (idempotent; None is fine)."""
  if output is not None and output.fd is not None:
    fd, output.fd = output.fd, None
    os.close(fd)


def _with_before(path, data):
  """`data` after what the file `path` holds (on a line of its own), for an append."""
  if not filesystem.exists(path):
    return data
  try:
    before = fileio.read_bytes(path)
  except errors.ReadError as e:
    raise errors.WriteError(f"cannot append to {path}: {errors.one_line(e, 300)}") from e
  return before + (b"\n" if before and not before.endswith(b"\n") else b"") + data


def _write_in_place(output, data):
  try:
    view = memoryview(data)
    while view:
      view = view[os.write(output.fd, view) :]
  except OSError as e:
    raise errors.WriteError(
      f"{output.what}: cannot write {output.given}: {errors.one_line(e)}"
    ) from e
  finally:
    close(output)


def write(output, data):
  """Writes `data` (bytes) to a checked `output` (module docstring); closes an in-place one.

  Raises:
    errors.WriteError: one line; a regular file is then as it was, and a path that is no
      longer a regular file (replaced since `check`) is not replaced.
  """
  if output.fd is not None:
    _write_in_place(output, data)
    return
  if filesystem.is_url(output.path):
    fileio.write_bytes(output.path, _with_before(output.path, data) if output.append else data)
    return
  try:
    st = os.lstat(output.path)
  except FileNotFoundError:
    st = None
  if st is not None and not stat.S_ISREG(st.st_mode):
    raise errors.WriteError(
      f"{output.what}: {output.given} is no longer a regular file: not replaced"
    )
  if output.append:
    data = _with_before(output.path, data)
  fileio.write_bytes(output.path, data, mode=stat.S_IMODE(st.st_mode) if st else None)
