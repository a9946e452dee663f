"""Atomic artifact writes and checked reads: no partial file, no pickles, one-line errors.

Every stage writes to a temporary name, then renames: a reader never sees a partial artifact,
and a killed writer leaves at most a `*.tmp-*` file that the next run overwrites. Local paths
go through `os` (rename is atomic on a local file system); paths with a URL scheme (`gs://`,
...) go through `tf.io.gfile`, imported only for them, so this module imports no TensorFlow.

Reads go through here too (`read_bytes`, `read_json`, `read_npz`, `copy`, `rename`); the
file-system primitives they stand on (`exists`, `isdir`, `listdir`, `walk`, `stat`, `makedirs`,
`remove`, ...) are `tf_forget.artifacts.filesystem`'s, so that `--out=gs://...` works end to
end. Several artifacts that belong together (a
report, a bundle) are replaced whole by `tf_forget.artifacts.swap`.

`write_json(..., strict=True)` writes strict JSON (RFC 8259): NaN and infinities become null.

Errors: a write that fails (read-only directory, a path below a regular file, a full disk) is
an `errors.WriteError` "cannot write <path>: <reason>", and no temporary file is left; a read
of a missing, truncated or malformed file is an `errors.ReadError`. Callers that only ask "is
this artifact current?" turn a `ReadError` into "no" and redo the artifact.
"""

import builtins
import collections
import contextlib
import hashlib
import io
import json
import math
import os
import shutil
import uuid
import zipfile

import numpy as np

from tf_forget.artifacts import errors
from tf_forget.artifacts.filesystem import gfile
from tf_forget.artifacts.filesystem import io_errors
from tf_forget.artifacts.filesystem import is_url
from tf_forget.artifacts.filesystem import makedirs
from tf_forget.artifacts.filesystem import parent_dir
from tf_forget.artifacts.filesystem import remove
from tf_forget.artifacts.filesystem import stat
from tf_forget.artifacts.filesystem import tf_errors
from tf_forget.artifacts.filesystem import url_error

# Arrays of `.npz` bytes parsed lately, by the sha256 of the bytes (`read_npz`), oldest first.
PARSED_BYTES = 64 << 20
_PARSED: "collections.OrderedDict[bytes, dict]" = collections.OrderedDict()
_PARSED_SIZE = [0]


def _write_file(path, data):
  """Writes `data` to `path` (not atomic: the primitive under `write_bytes`)."""
  if is_url(path):
    with gfile().GFile(path, "wb") as f:
      f.write(data)
  else:
    with builtins.open(path, "wb") as f:
      f.write(data)


def _rename(src, dst):
  if is_url(src):
    gfile().rename(src, dst, overwrite=True)
  else:
    os.replace(src, dst)


def touch(path):
  """Creates (or empties) the file `path`; no temporary name, an empty file has no partial state.

  Raises:
    errors.WriteError: it cannot be written.
  """
  try:
    _write_file(path, b"")
  except io_errors() as e:
    raise errors.write_error(path, e) from e


def rename(src, dst):
  """Renames file `src` to `dst`, replacing `dst` (atomic on a local file system).

  Raises:
    errors.WriteError: the rename failed.
  """
  try:
    _rename(src, dst)
  except io_errors() as e:
    raise errors.write_error(dst, e) from e


@contextlib.contextmanager
def _atomic(path):
  """Yields a temporary name next to `path` (parents created); renames it to `path` on exit.

  Raises:
    errors.WriteError: the directory, the temporary file or the rename failed; the temporary
      file is removed in every case.
  """
  parent = parent_dir(path)
  if parent:
    makedirs(parent)
  tmp = f"{path}.tmp-{uuid.uuid4().hex[:8]}"
  try:
    yield tmp
    _rename(tmp, path)
  except io_errors() as e:
    raise errors.write_error(path, e) from e
  finally:
    try:
      remove(tmp)
    except errors.WriteError:
      pass


def write_bytes(path, data, mode=None):
  """Writes `data` to `path` atomically, creating parent directories.

  Args:
    path: the file.
    data: bytes.
    mode: optional permission bits of the new file (local paths; the file it replaces kept
      its own: `tf_forget.artifacts.user_output`).

  Raises:
    errors.WriteError: the directory cannot be created or the file written / renamed; no
      temporary file is left behind.
  """
  with _atomic(path) as tmp:
    _write_file(tmp, data)
    if mode is not None and not is_url(tmp):
      os.chmod(tmp, mode)


def check_writable(directory):
  """Creates `directory` if needed and writes then removes a probe file in it.

  Returns:
    The list of directories this call created (outermost first), for the caller to remove if
    a later validation fails.

  Raises:
    errors.WriteError: "cannot write <directory>: Permission denied" and the like.
  """
  created: list[str] = []
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


def size_text(size):
  """`size` bytes as "12 MB" / "3.4 GB" / "950 bytes"."""
  for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
    if size >= scale:
      return f"{size / scale:.3g} {unit}"
  return f"{size} bytes"


def _too_big(path, size, limit, what):
  return errors.ReadError(
    f"cannot read {what} {path}: it is {'over ' if size is None else ''}"
    f"{size_text(limit if size is None else size)}, more than the "
    f"{size_text(limit)} a {what} may take"
  )


def read_bytes(path, limit=None, what="file"):
  """Reads a whole file; raises `errors.ReadError`.

  Args:
    path: the file.
    limit: optional largest size in bytes: a larger file is refused before it is read (its
      size) or as soon as more is read (a file that grows, a device), never read whole.
    what: how errors name the file.
  """
  try:
    size = stat(path).size if limit is not None else None
    if size is not None and size > limit:
      raise _too_big(path, size, limit, what)
    with gfile().GFile(path, "rb") if is_url(path) else builtins.open(path, "rb") as f:
      data = f.read() if limit is None else f.read(limit + 1)
  except (OSError,) + tf_errors() as e:
    unsupported = type(e).__name__ == "UnimplementedError"  # s3://, http://
    raise (url_error(path, e) if unsupported else errors.read_error(path, e, what)) from e
  if limit is not None and len(data) > limit:
    raise _too_big(path, None, limit, what)
  return data


def copy(src, dst):
  """Copies file `src` to `dst` atomically (temporary name, then rename), creating parents.

  Either path may be a URL (then `tf.io.gfile.copy`); `dst` is replaced if it exists.

  Raises:
    errors.WriteError: `src` cannot be read or `dst` cannot be written; no temporary file is
      left behind.
  """
  with _atomic(dst) as tmp:
    if is_url(src) or is_url(dst):
      gfile().copy(src, tmp, overwrite=True)
    else:
      shutil.copyfile(src, tmp)


def _finite(obj):
  """`obj` with every NaN / infinite float in its dicts, lists and tuples replaced by None."""
  if isinstance(obj, dict):
    return {k: _finite(v) for k, v in obj.items()}
  if isinstance(obj, (list, tuple)):
    return [_finite(v) for v in obj]
  if isinstance(obj, float) and not math.isfinite(obj):
    return None
  return obj


def write_json(path, obj, strict=False, compact=False):
  """Writes `obj` as indented, key-sorted JSON to `path` atomically (`errors.WriteError`).

  Args:
    path: the file.
    obj: JSON-ready object.
    strict: write strict JSON (RFC 8259), NaN and infinities as null; otherwise they are
      written as JavaScript's `NaN` / `Infinity` (the bytes of valid JSON are the same).
    compact: no indentation or spaces (a long list of rows, written several times faster).
  """
  if strict:
    obj = _finite(obj)
  shape = dict(separators=(",", ":")) if compact else dict(indent=2)
  text = json.dumps(obj, sort_keys=True, allow_nan=not strict, **shape) + "\n"
  write_bytes(path, text.encode("utf-8"))


def read_json(path, what="JSON artifact", limit=None):
  """Reads a JSON artifact; missing, truncated or non-JSON files raise `errors.ReadError`, as do
  JSON nested deeper than Python's decoder follows and, with `limit`, a file over `limit`
  bytes (`read_bytes`)."""
  data = read_bytes(path, limit, what) if limit is not None else read_bytes(path)
  try:
    return json.loads(data.decode("utf-8"))
  except RecursionError as e:
    raise errors.ReadError(f"cannot read {what} {path}: its JSON is nested too deeply") from e
  except (UnicodeDecodeError, ValueError) as e:
    raise errors.read_error(path, e, what) from e


def read_record(path, schema, what="JSON artifact", limit=None):
  """Reads a JSON artifact that must be an object of `schema` (its "schema" key): the one
  check of every artifact module's `read`.

  Args:
    path: the file.
    schema: the schema id it must record ("tf_forget.<artifact>/<version>").
    what: how errors name the file.
    limit: optional largest size in bytes (`read_json`).

  Returns:
    The JSON object (a dict).

  Raises:
    errors.SchemaError: a readable file that is not a JSON object of `schema`, "<path> is not a
      <schema> file".
    errors.ReadError: missing, truncated or not JSON (`read_json`).
  """
  doc = read_json(path, what, limit)
  if not isinstance(doc, dict) or doc.get("schema") != schema:
    raise errors.SchemaError(f"{path} is not a {schema} file")
  return doc


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
  """Reads an `.npz` artifact into a dict of arrays (copies: the caller's own), refusing pickled
  objects. The bytes are read every time; arrays parsed from the same bytes before (the same
  sha256) are copied instead of parsed again, within `PARSED_BYTES`: the stages of an audit
  read each predictions file many times.

  Raises:
    errors.ReadError: missing, truncated (BadZipFile, EOFError), pickled or malformed file.
  """
  data = read_bytes(path)
  key = hashlib.sha256(data).digest()
  arrays = _PARSED.get(key)
  if arrays is None:
    try:
      with np.load(io.BytesIO(data), allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as e:
      raise errors.read_error(path, e, what) from e
    _keep_parsed(key, arrays)
  else:
    _PARSED.move_to_end(key)
  return {k: v.copy() for k, v in arrays.items()}


def _keep_parsed(key, arrays):
  """Keeps `arrays` for `read_npz`, dropping the least recently read beyond `PARSED_BYTES`."""
  size = sum(a.nbytes for a in arrays.values())
  if size > PARSED_BYTES:
    return
  _PARSED[key] = arrays
  _PARSED_SIZE[0] += size
  while _PARSED_SIZE[0] > PARSED_BYTES:
    _, dropped = _PARSED.popitem(last=False)
    _PARSED_SIZE[0] -= sum(a.nbytes for a in dropped.values())


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
