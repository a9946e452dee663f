"""Atomic artifact writes: every stage writes to a temporary name, then renames.

A reader never sees a partial artifact, and a killed writer leaves at most a `*.tmp-*` file that
the next run overwrites. Paths go through `tf.io.gfile`, so artifacts may live on any file
system TensorFlow supports (local, GCS, ...). Rename is atomic on a local file system.
"""

import io
import json
import os
import uuid

import numpy as np
import tensorflow as tf


def _tmp_name(path):
  return f"{path}.tmp-{uuid.uuid4().hex[:8]}"


def write_bytes(path, data):
  """Writes `data` to `path` atomically, creating parent directories.

  Args:
    path: destination file path (any `tf.io.gfile` path).
    data: bytes.

  Raises:
    OSError / tf.errors.OpError: if the directory cannot be created or written.
  """
  parent = os.path.dirname(path)
  if parent:
    tf.io.gfile.makedirs(parent)
  tmp = _tmp_name(path)
  try:
    with tf.io.gfile.GFile(tmp, "wb") as f:
      f.write(data)
    tf.io.gfile.rename(tmp, path, overwrite=True)
  finally:
    if tf.io.gfile.exists(tmp):
      tf.io.gfile.remove(tmp)


def write_json(path, obj):
  """Writes `obj` as indented, key-sorted JSON to `path` atomically."""
  text = json.dumps(obj, indent=2, sort_keys=True, allow_nan=True) + "\n"
  write_bytes(path, text.encode("utf-8"))


def read_json(path):
  """Reads a JSON artifact written by `write_json`."""
  with tf.io.gfile.GFile(path, "rb") as f:
    return json.loads(f.read().decode("utf-8"))


def write_npz(path, **arrays):
  """Writes numpy arrays to an uncompressed `.npz` atomically (no object arrays: no pickle)."""
  for name, value in arrays.items():
    if np.asarray(value).dtype == object:
      raise ValueError(f"array {name!r} has dtype object; npz artifacts never hold pickles")
  buf = io.BytesIO()
  np.savez(buf, **arrays)
  write_bytes(path, buf.getvalue())


def read_npz(path):
  """Reads an `.npz` artifact into a dict of arrays, refusing pickled objects."""
  with tf.io.gfile.GFile(path, "rb") as f:
    with np.load(io.BytesIO(f.read()), allow_pickle=False) as data:
      return {k: data[k] for k in data.files}
