"""Atomic artifact writes and checked reads: no partial file, no pickles, one-line errors.

Every stage writes to a temporary name, then renames: a reader never sees a partial artifact,
and a killed writer leaves at most a `*.tmp-*` file that the next run overwrites. Local paths
go through `os` (rename is atomic on a local file system); paths with a URL scheme (`gs://`,
...) go through `tf.io.gfile`, imported only for them, so this module imports no TensorFlow.

Errors: a write that fails (read-only directory, a path below a regular file, a full disk) is
an `errors.WriteError` "cannot write <path>: <reason>", and no temporary file is left; a read
of a missing, truncated or malformed file is an `errors.ReadError`. Callers that only ask "is
this artifact current?" turn a `ReadError` into "no" and redo the artifact.
"""

import io
import json
import os
import uuid
import zipfile

import numpy as np

from tf_forget.artifacts import errors


def is_url(path):
  """Whether `path` has a URL scheme (gs://...) and goes through `tf.io.gfile`."""
  return "://" in str(path)


def _gfile():
  import tensorflow as tf  # pylint: disable=g-import-not-at-top  (URL paths only)
  return tf.io.gfile


def _tf_errors():
  """The TensorFlow OpError class if TensorFlow is loaded, else an empty tuple."""
  import sys  # pylint: disable=g-import-not-at-top
  tf = sys.modules.get("tensorflow")
  errors_mod = getattr(tf, "errors", None) if tf is not None else None
  return (errors_mod.OpError,) if errors_mod is not None else ()


def exists(path):
  return _gfile().exists(path) if is_url(path) else os.path.exists(path)


def isdir(path):
  return _gfile().isdir(path) if is_url(path) else os.path.isdir(path)


def listdir(path):
  """Sorted entry names of a directory ([] if it does not exist)."""
  if not isdir(path):
    return []
  names = _gfile().listdir(path) if is_url(path) else os.listdir(path)
  return sorted(n.rstrip("/") for n in names)


def makedirs(path):
  """Creates `path` and its parents; raises `errors.WriteError`."""
  try:
    if is_url(path):
      _gfile().makedirs(path)
    else:
      os.makedirs(path, exist_ok=True)
  except (OSError,) + _tf_errors() as e:
    raise errors.write_error(path, e) from e


def remove(path):
  """Removes a file if it exists (no error if it does not)."""
  try:
    if is_url(path):
      if _gfile().exists(path):
        _gfile().remove(path)
    elif os.path.lexists(path):
      os.remove(path)
  except (OSError,) + _tf_errors() as e:
    raise errors.write_error(path, e) from e


def _write_file(path, data):
  """Writes `data` to `path` (not atomic: the primitive under `write_bytes`)."""
  if is_url(path):
    with _gfile().GFile(path, "wb") as f:
      f.write(data)
  else:
    with open(path, "wb") as f:
      f.write(data)


def _rename(src, dst):
  if is_url(src):
    _gfile().rename(src, dst, overwrite=True)
  else:
    os.replace(src, dst)


def write_bytes(path, data):
  """Writes `data` to `path` atomically, creating parent directories.

  Raises:
    errors.WriteError: the directory cannot be created or the file written / renamed; no
      temporary file is left behind.
  """
  parent = os.path.dirname(path)
  if parent:
    makedirs(parent)
  tmp = f"{path}.tmp-{uuid.uuid4().hex[:8]}"
  try:
    _write_file(tmp, data)
    _rename(tmp, path)
  except (OSError,) + _tf_errors() as e:
    raise errors.write_error(path, e) from e
  finally:
    try:
      remove(tmp)
    except errors.WriteError:
      pass


def check_writable(directory):
  """Creates `directory` if needed and writes then removes a probe file in it.

  Returns:
    The list of directories this call created (outermost first), for the caller to remove if
    a later validation fails.

  Raises:
    errors.WriteError: "cannot write <directory>: Permission denied" and the like.
  """
  created = []
  if not is_url(directory):
    probe = os.path.abspath(directory)
    while probe and not os.path.exists(probe):
      created.insert(0, probe)
      parent = os.path.dirname(probe)
      if parent == probe:
        break
      probe = parent
  probe_file = os.path.join(directory, f".write-probe-{uuid.uuid4().hex[:8]}")
  try:
    write_bytes(probe_file, b"")
    remove(probe_file)
  except errors.WriteError as e:
    remove_created(created)
    reason = str(e).split(": ", 1)[-1]
    raise errors.WriteError(f"cannot write to {directory}: {reason}") from e
  return created


def remove_created(created):
  """Removes the (empty) directories `check_writable` created, innermost first."""
  for path in reversed(created):
    try:
      os.rmdir(path)
    except OSError:
      pass


def read_bytes(path):
  """Reads a whole file; raises `errors.ReadError`."""
  try:
    if is_url(path):
      with _gfile().GFile(path, "rb") as f:
        return f.read()
    with open(path, "rb") as f:
      return f.read()
  except (OSError,) + _tf_errors() as e:
    raise errors.read_error(path, e, "file") from e


def write_json(path, obj):
  """Writes `obj` as indented, key-sorted JSON to `path` atomically (`errors.WriteError`)."""
  text = json.dumps(obj, indent=2, sort_keys=True, allow_nan=True) + "\n"
  write_bytes(path, text.encode("utf-8"))


def read_json(path, what="JSON artifact"):
  """Reads a JSON artifact; missing, truncated or non-JSON files raise `errors.ReadError`."""
  data = read_bytes(path)
  try:
    return json.loads(data.decode("utf-8"))
  except (UnicodeDecodeError, ValueError) as e:
    raise errors.read_error(path, e, what) from e


def write_npz(path, **arrays):
  """Writes numpy arrays to an uncompressed `.npz` atomically (no object arrays: no pickle).

  Raises:
    errors.Error: an object array; errors.WriteError: the file cannot be written.
  """
  for name, value in arrays.items():
    if np.asarray(value).dtype == object:
      raise errors.Error(f"array {name!r} has dtype object; npz artifacts never hold pickles")
  buf = io.BytesIO()
  np.savez(buf, **arrays)
  write_bytes(path, buf.getvalue())


def read_npz(path, what="npz artifact"):
  """Reads an `.npz` artifact into a dict of arrays, refusing pickled objects.

  Raises:
    errors.ReadError: missing, truncated (BadZipFile, EOFError), pickled or malformed file.
  """
  data = read_bytes(path)
  try:
    with np.load(io.BytesIO(data), allow_pickle=False) as npz:
      return {k: npz[k] for k in npz.files}
  except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as e:
    raise errors.read_error(path, e, what) from e


def read_npz_with_metadata(path, what):
  """Reads an `.npz` artifact whose `metadata` array holds a JSON object.

  Returns:
    (dict of the other arrays, metadata dict).

  Raises:
    errors.ReadError: unreadable file (see `read_npz`), or `metadata` missing or not a JSON
      object; callers re-raise it as their own artifact error.
  """
  out = read_npz(path, what)
  try:
    meta = json.loads(str(out.pop("metadata")))
    if not isinstance(meta, dict):
      raise ValueError("metadata is not a JSON object")
  except (ValueError, KeyError) as e:
    raise errors.read_error(path, e, what) from e
  return out, meta
