"""The user's data files opened as regular files only, and read no further than they may be.

A data folder may hold entries named like images that are no files: a FIFO (opening it for
reading waits for a writer, forever), a device or a link to one (`/dev/zero` reads without
end), or a file far larger than any image (a 4 GB `z.png`, read whole before its header said
it is no PNG). The audit lists, opens and reads the user's files through this module:

  * `check_listed(path, name)`: a listed image is a regular file (links followed) of at most
    `MAX_IMAGE_BYTES`, checked with one `stat` when its folder is listed, before any image is
    decoded (`tf_forget.data.image_folders`);
  * `read(path, name, size, header)`: a file opened without blocking (`O_NONBLOCK`) and refused
    unless its descriptor is a regular file; with `header`, the first `HEADER_BYTES` are
    checked first (`header(head, size)` refuses the file or gives the most bytes it may hold:
    `tf_forget.data.fingerprint.image_check`), and no more than that is read.

Each refusal is a one-line `dataset_api.DataError` naming the file. URLs (`gs://`) hold regular
files only; their reads are held to the same limits.
"""

import os
import stat as stat_lib

from tf_forget.artifacts import fileio
from tf_forget.artifacts import filesystem
from tf_forget.data import dataset_api

# No PNG, JPEG, GIF or BMP the audit reads is larger: a 50-megapixel (`--max_image_pixels`'
# default) 16-bit RGBA PNG stored without compression is 400 MB.
MAX_IMAGE_BYTES = 1_000_000_000
HEADER_BYTES = 64 * 1024  # an image's header (a JPEG's EXIF and ICC segments included)

_KINDS = (
  (stat_lib.S_ISFIFO, "a FIFO (named pipe)"),
  (stat_lib.S_ISCHR, "a character device"),
  (stat_lib.S_ISBLK, "a block device"),
  (stat_lib.S_ISSOCK, "a socket"),
  (stat_lib.S_ISDIR, "a directory"),
)


def _not_regular(path, name, mode):
  kind = next((text for test, text in _KINDS if test(mode)), "not a regular file")
  if os.path.islink(path):
    return dataset_api.DataError(
      f"{name} is a link to {os.readlink(path)}, {kind}; only regular files are read"
    )
  return dataset_api.DataError(f"{name} is {kind}, not a regular file; only regular files are read")


def too_big(name, size, limit, why):
  """The `DataError` of a file of `size` bytes over `limit` ("... more than <why>")."""
  return dataset_api.DataError(
    f"{name} is {fileio.size_text(size)}, more than {why} ({fileio.size_text(limit)})"
  )


def stat(path, name, stat_fn=os.stat):
  """`stat_fn(path)`, or a one-line `DataError` naming a dangling link or an unreadable file."""
  try:
    return stat_fn(path)
  except OSError as e:
    what = (
      f"a dangling link (to {os.readlink(path)})"
      if os.path.islink(path)
      else f"unreadable ({e.strerror or e})"
    )
    raise dataset_api.DataError(f"{name} is {what}") from e


def check_listed(path, name):
  """Raises `dataset_api.DataError` if the listed image `path` is not a regular file (a FIFO,
  a device, a link to one, a dangling link) or is over `MAX_IMAGE_BYTES`; one `stat`, no
  read. A URL passes (read later under the same limits)."""
  if filesystem.is_url(path):
    return
  st = stat(path, name)
  if not stat_lib.S_ISREG(st.st_mode):
    raise _not_regular(path, name, st.st_mode)
  if st.st_size > MAX_IMAGE_BYTES:
    raise too_big(name, st.st_size, MAX_IMAGE_BYTES, "any image the audit reads")


def _open(path, name):
  """(read(n=-1) of the open file, its size or None, close) for `path`, refused unless it is a
  regular file; a local file is opened without waiting for a FIFO's writer and read through
  its descriptor (no Python file object per image)."""
  if filesystem.is_url(path):
    f = filesystem.open_file(path, "rb")
    return f.read, None, f.close
  fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
  try:
    st = os.fstat(fd)
    if not stat_lib.S_ISREG(st.st_mode):
      raise _not_regular(path, name, st.st_mode)
    os.set_blocking(fd, True)
  except BaseException:
    os.close(fd)
    raise
  return (lambda n=-1: _read_fd(fd, n)), st.st_size, lambda: os.close(fd)


def _read_fd(fd, n):
  """Up to `n` bytes (n < 0: to the end) of the descriptor `fd`, fewer only at its end."""
  parts, left = [], n
  while left:
    chunk = os.read(fd, left if 0 < left < (1 << 20) else 1 << 20)
    if not chunk:
      break
    parts.append(chunk)
    left -= len(chunk) if left > 0 else 0
  return b"".join(parts)


def read(path, name, size, header=None):
  """The bytes of the regular file `path` (local or URL).

  Args:
    path: the file.
    name: how errors name it.
    size: its size as stat'ed (a local file's own descriptor says it again).
    header: optional callable(head bytes, size) -> the most bytes the file may hold (None: no
      limit), raising `dataset_api.DataError` to refuse it; called on its first
      `HEADER_BYTES` before anything more is read.

  Raises:
    dataset_api.DataError: not a regular file, refused by `header`, or more bytes than
      `header` allows (a file that grew while read).
    OSError, TensorFlow errors (`filesystem.io_errors`): it cannot be read.
  """
  read_bytes, own_size, close = _open(path, name)
  try:
    size = size if own_size is None else own_size
    if header is None:
      return read_bytes()
    head = read_bytes(min(size + 1, HEADER_BYTES))
    if len(head) <= size < HEADER_BYTES:  # the whole file: `header` sees it all
      header(head, len(head))
      return head
    limit = header(head, size)
    if limit is None:
      return head + read_bytes()
    data = head + read_bytes(max(limit - len(head), 0) + 1)
  finally:
    close()
  if len(data) > limit:
    raise too_big(name, len(data), limit, "its header allows")
  return data
