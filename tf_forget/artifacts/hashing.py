"""sha256 of bytes, files (streamed) and JSON values: the lineage of every artifact.

Every artifact records in `inputs` the sha256 of what it was made from (docs/artifacts/*.md):
a member its `model.keras`, an export the `model.keras` it converted, a predictions file the
`.tflite` bytes it ran and the identity of its input split. A stage reuses an artifact only
when those hashes equal the current inputs' hashes.

`file_sha256` memoizes by (path, size, mtime_ns, inode, ctime_ns) inside one process, so a
stage that asks about the same `.tflite` for every split hashes it once; a file rewritten in
place gets a new ctime (and mtime, unless it is set back) and is hashed again. Files are
read and stat'ed through `fileio` (local or URL paths); a URL file system without
modification times (`ram://` reports 0) is never memoized. Standard library, numpy and
`fileio` only (no TensorFlow unless a URL path is hashed).
"""

import hashlib
import json
import os

import numpy as np

from tf_forget.artifacts import filesystem

_CHUNK = 1 << 20
_MEMO: dict[tuple, str] = {}  # (path, size, mtime, inode, ctime) -> hex sha256


def sha256_bytes(data):
  """Hex sha256 of `data` (bytes-like)."""
  return hashlib.sha256(bytes(data)).hexdigest()


def sha256_json(value):
  """Hex sha256 of `value` as canonical JSON (sorted keys, no spaces)."""
  text = json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=True)
  return sha256_bytes(text.encode("utf-8"))


def _stat_key(path):
  """The memo key of a file as it is now, or None if it cannot be memoized (no mtime)."""
  st = filesystem.stat(path)
  if not st.mtime_ns and filesystem.is_url(path):
    return None
  return (filesystem.abspath(path), st.size, st.mtime_ns, st.inode, st.ctime_ns)


def file_sha256(path, memo=True):
  """Hex sha256 of a file's bytes, read in 1 MiB chunks.

  Args:
    path: a local file or a URL (gs://...; read through `filesystem.open_file`).
    memo: reuse the hash of an unchanged file (same size, mtime, inode and ctime) in this
      process.

  Raises:
    OSError: the file cannot be read, also for URL paths (callers turn it into their
      `errors.Error`).
  """
  key = _stat_key(path) if memo else None
  if key is not None and key in _MEMO:
    return _MEMO[key]
  digest = hashlib.sha256()
  try:
    with filesystem.open_file(path, "rb") as f:
      for chunk in iter(lambda: f.read(_CHUNK), b""):
        digest.update(chunk)
  except filesystem.io_errors() as e:
    if isinstance(e, OSError):
      raise
    raise OSError(f"{path}: {' '.join(str(getattr(e, 'message', e)).split())}") from e
  value = digest.hexdigest()
  if key is not None:
    _MEMO[key] = value
  return value


def file_sha256_or_none(path):
  """`file_sha256`, or None if the file is missing or unreadable."""
  try:
    return file_sha256(path)
  except OSError:
    return None


def path_sha256(path, memo=True):
  """`file_sha256` of a file; of a directory (a SavedModel), the sha256 of the JSON
  {relative path: `file_sha256`} of every file below it (`memo` as `file_sha256`'s).

  Raises:
    OSError: a file cannot be read.
  """
  if not filesystem.isdir(path):
    return file_sha256(path, memo)
  entries = {}
  for root, _, files in filesystem.walk(path):
    for name in files:
      full = filesystem.join(root, name)
      entries[os.path.relpath(full, path).replace(os.sep, "/")] = file_sha256(full, memo)
  return sha256_json(entries)


def path_sha256_or_none(path):
  """`path_sha256`, or None if the file or directory is missing or unreadable."""
  try:
    return path_sha256(path) if filesystem.exists(path) else None
  except OSError:
    return None


def remember(path, sha):
  """Records `sha` as the hash of the file at `path` as it is now (after writing it)."""
  try:
    key = _stat_key(path)
  except OSError:
    return
  if key is not None:
    _MEMO[key] = sha


def arrays_sha256(named_arrays):
  """sha256 of named arrays: names, dtypes, shapes and bytes, in the given order.

  The content hash of a model's weights (a one-shot member's `parent.weights_sha256`): unlike
  a `.keras` file's bytes, which hold the save time, it is the same for the same weights.

  Args:
    named_arrays: iterable of (name, numpy array).
  """
  h = hashlib.sha256()
  for name, array in named_arrays:
    a = np.ascontiguousarray(array)
    h.update(f"{name}|{a.dtype.str}|{a.shape}|".encode())
    h.update(a.tobytes())
  return h.hexdigest()
