"""sha256 of bytes, files (streamed) and JSON values: the lineage of every artifact.

Every artifact records in `inputs` the sha256 of what it was made from (docs/artifacts/*.md):
a member its `model.keras`, an export the `model.keras` it converted, a predictions file the
`.tflite` bytes it ran and the identity of its input split. A stage reuses an artifact only
when those hashes equal the current inputs' hashes.

`file_sha256` memoizes by (path, size, mtime_ns, inode) inside one process, so a stage that
asks about the same `.tflite` for every split hashes it once; a file rewritten in place gets a
new mtime and is hashed again. Standard library only.
"""

import hashlib
import json
import os

_CHUNK = 1 << 20
_MEMO = {}


def sha256_bytes(data):
  """Hex sha256 of `data` (bytes-like)."""
  return hashlib.sha256(bytes(data)).hexdigest()


def sha256_json(value):
  """Hex sha256 of `value` as canonical JSON (sorted keys, no spaces)."""
  text = json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=True)
  return sha256_bytes(text.encode("utf-8"))


def _stat_key(path):
  st = os.stat(path)
  return (os.path.abspath(path), st.st_size, st.st_mtime_ns, st.st_ino)


def file_sha256(path, memo=True):
  """Hex sha256 of a file's bytes, read in 1 MiB chunks.

  Args:
    path: a local file or a URL (gs://...; read through `fileio.read_bytes`).
    memo: reuse the hash of an unchanged file (same size, mtime and inode) in this process.

  Raises:
    OSError: the file cannot be read (callers turn it into their `errors.Error`).
  """
  if "://" in str(path):
    from tf_forget.artifacts import fileio  # pylint: disable=g-import-not-at-top
    return sha256_bytes(fileio.read_bytes(path))
  key = _stat_key(path) if memo else None
  if key is not None and key in _MEMO:
    return _MEMO[key]
  digest = hashlib.sha256()
  with open(path, "rb") as f:
    for chunk in iter(lambda: f.read(_CHUNK), b""):
      digest.update(chunk)
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


def remember(path, sha):
  """Records `sha` as the hash of the file at `path` as it is now (after writing it)."""
  try:
    _MEMO[_stat_key(path)] = sha
  except OSError:
    pass
