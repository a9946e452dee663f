"""A finished run's record of what it was made from, so that an unchanged re-run does nothing.

An audit that ends (its report and bundle written) records in `<run>/.tf_forget.finished.json`
(`layout.finished_file`):

  * its configuration (`AuditConfig.to_json()` without `execution`, which changes no byte);
  * the code: tf_forget's own files (path, size, mtime), the installed distributions (the names
    of the `*.dist-info` folders on `sys.path`, versions included), the Python version and the
    environment variables TensorFlow and its kernels read (`TF_*`, `ONEDNN_*`, ...);
  * every file of the run directory's own entries (`layout.RUN_ENTRIES`, without the lock and
    logs/) with its size, mtime, ctime (ns) and inode;
  * every input outside it with the same: the user's data files as their fingerprint read them
    (`data_identity.Hashed`) and every folder from each file up to the data's root (a file
    added, removed or renamed there changes its folder's mtime), and every local path the
    configuration names (a model file, a SavedModel or data folder, walked);
  * what the command printed at its end (the verdict table and its lines) and whether every
    gate passed.

`unchanged(config)` is that record when everything it lists is as recorded, else None: then
`tf-forget audit` with the same configuration, or `tf-forget report RUN_DIR`, prints the
recorded end and exits with its status, without importing TensorFlow or reading a file's bytes;
nothing could be redone and the report would be written again byte for byte. Any difference —
one file's size, mtime, ctime or inode, a file added, a library upgraded — and the command runs
as always (its stages judge each artifact by the hashes of its inputs, docs/artifacts). The rule
is that of the data fingerprints (`tf_forget.data.fingerprint`): a file edited in place keeping
its size and mtime has a new ctime, a file replaced by a rename a new inode.

There is no record, and so no shortcut, for a run whose inputs cannot be listed here: a `scheme://`
run directory or input, code the configuration lets run (`trust_model_code`, a
`MODULE:FUNCTION` preprocess), a registered data set read from a default location, a latency
measured again on every run (`remeasure_latency`), or a folder of over `MAX_ENTRIES` entries.
The run directory's lock removes the record (`tf_forget.artifacts.run_lock.acquire`) before a
command writes anything; an audit writes it again when it ends.
"""

import json
import os
import sys
import time

from tf_forget.artifacts import errors
from tf_forget.artifacts import fileio
from tf_forget.artifacts import filesystem
from tf_forget.artifacts import layout

SCHEMA = "tf_forget.finished/1"
MAX_ENTRIES = 200_000  # files and folders one walk may list before the run gets no record
ENV_PREFIXES = ("TF_", "ONEDNN_", "DNNL_", "CUDA_", "OMP_", "KMP_", "MKL_", "XLA_", "PYTHONHASH")
# Registered data sets held in installed files (scikit-learn's digits: the code's digest covers
# them).
EMBEDDED = ("digits", "digits_biased")
_SKIP = (layout.LOCK_FILE, "logs")
# A file or folder changed this close to (or after) the run's start may hold a change the run
# did not see: a timestamp is coarser than the clock.
RACY_NS = 100_000_000


class _Unlisted(Exception):
  """An input that cannot be listed here: no record."""


def _stat(path):
  st = os.stat(path, follow_symlinks=True)
  return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def _walk(root, rows, seen):
  """Appends [path, size, mtime, ctime, inode] of `root` and everything under it."""
  if root in seen:
    return
  seen.add(root)
  rows.append([root, *_stat(root)])
  if not os.path.isdir(root):
    return
  for parent, dirs, files in os.walk(root):
    dirs.sort()
    for name in sorted(dirs) + sorted(files):
      path = os.path.join(parent, name)
      if path not in seen:
        seen.add(path)
        rows.append([path, *_stat(path)])
    if len(rows) > MAX_ENTRIES:
      raise _Unlisted(f"over {MAX_ENTRIES} entries under {root}")


def _run_files(out):
  """{relative path: [size, mtime, ctime, inode]} of the run directory's own entries."""
  found = {}
  for entry in sorted(layout.RUN_ENTRIES):
    if entry in _SKIP:
      continue
    rows = []
    path = os.path.join(out, entry)
    if os.path.lexists(path):
      _walk(path, rows, set())
    for row in rows:
      found[os.path.relpath(row[0], out)] = row[1:]
  return found


def _code():
  """What decides the code that runs: tf_forget's files, the installed distributions, Python,
  and the environment TensorFlow reads."""
  package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  files = []
  for parent, dirs, names in os.walk(package):
    dirs[:] = sorted(d for d in dirs if d != "__pycache__")
    for name in sorted(names):
      path = os.path.join(parent, name)
      st = os.stat(path)
      files.append(f"{os.path.relpath(path, package)}\0{st.st_size}\0{st.st_mtime_ns}")
  dists = []
  for entry in sys.path:
    if entry and os.path.isdir(entry) and "-packages" in entry:
      dists += sorted(n for n in os.listdir(entry) if n.endswith((".dist-info", ".egg-info")))
  import hashlib

  env = {k: v for k, v in sorted(os.environ.items()) if k.startswith(ENV_PREFIXES)}
  return {
    "tf_forget": hashlib.sha256("\n".join(files).encode()).hexdigest(),
    "distributions": hashlib.sha256("\n".join(dists).encode()).hexdigest(),
    "python": sys.version,
    "executable": sys.executable,
    "env": env,
  }


def _config_json(config):
  """The configuration as recorded: without `execution` (the executor changes no byte)."""
  doc = json.loads(json.dumps(config.to_json()))
  doc.pop("execution", None)
  return doc


def _strings(value):
  if isinstance(value, str):
    yield value
  elif isinstance(value, dict):
    for v in value.values():
      yield from _strings(v)
  elif isinstance(value, (list, tuple)):
    for v in value:
      yield from _strings(v)


def _listable(config, doc):
  """Raises `_Unlisted` for a run whose inputs are not all listed by `_inputs`."""
  user = config.user
  if user is not None and (user.trust_model_code or ":" in str(user.preprocess or "")):
    raise _Unlisted("the configuration lets code run")
  if config.deployment.remeasure_latency:
    raise _Unlisted("latencies measured again")
  if any(filesystem.is_url(s) for s in _strings(doc)):
    raise _Unlisted("a scheme:// path")


def _inputs(config, doc):
  """[path, size, mtime, ctime, inode] of every local path the configuration names, outside
  the run directory and the user's data (whose files `data_identity` lists)."""
  rows, seen = [], set()
  out = os.path.abspath(config.out)
  for value in _strings(doc):
    if not os.path.isabs(value) or not os.path.lexists(value):
      continue
    value = os.path.abspath(value)
    if value == out or value.startswith(out + os.sep):
      continue
    _walk(value, rows, seen)
  return rows


def _data_rows(hashed):
  """[path, size, mtime, ctime, inode] of the user's data files, as their fingerprint read
  them, and of their folders (`data_identity.Hashed.folders`)."""
  rows = []
  for h in hashed:
    if h.folders is None:
      raise _Unlisted(f"the {h.what} changed while it was listed")
    for (_, path), entry in zip(h.files, h.fingerprint.entries):
      if entry.ctime_ns is None or entry.inode is None:
        raise _Unlisted("a file without ctime or inode")
      rows.append([os.path.abspath(path), entry.size, entry.mtime_ns, entry.ctime_ns, entry.inode])
    rows += [list(r) for r in h.folders]
  return rows


def _under(path, roots):
  """Whether `path` is one of `roots` or under one (the user's data: `_data_rows` lists it)."""
  return any(path == root or path.startswith(root + os.sep) for root in roots)


class Snapshot:
  """What a run is made from, taken before it reads anything (`take`)."""

  def __init__(self, config, doc, code, inputs, started_ns):
    self.config, self.doc, self.code, self.inputs = config, doc, code, inputs
    self.started_ns = started_ns


def take(config):
  """The `Snapshot` of `config`'s inputs before the run reads them, or None (no record)."""
  if not config.out or filesystem.is_url(config.out):
    return None
  started_ns = time.time_ns()
  doc = _config_json(config)
  try:
    _listable(config, doc)
    return Snapshot(config, doc, _code(), _inputs(config, doc), started_ns)
  except (_Unlisted, OSError):
    return None


def record(snapshot, hashed, lines, passed):
  """Writes the record of the run just finished (module docstring); none when its inputs
  cannot all be listed.

  Args:
    snapshot: `take(config)`, before the run read anything (None: no record).
    hashed: the user's data files (`data_identity.attach`).
    lines: what the command printed at its end, one string each.
    passed: whether every gate passed.
  """
  if snapshot is None:
    return
  out = snapshot.config.out
  doc = snapshot.doc
  data = doc.get("data") or {}
  if not hashed and data.get("dataset") not in EMBEDDED and not data.get("data_dir"):
    return  # a registered data set read from its default location
  try:
    data = _data_rows(hashed)
    roots = tuple(h.folders[0][0] for h in hashed if h.folders)  # sorted: the root first
    inputs = [r for r in snapshot.inputs if not _under(r[0], roots)] + data
    if any(max(r[2], r[3]) >= snapshot.started_ns - RACY_NS for r in inputs):
      return  # an input changed while the run read it, or just before
    run = _run_files(out)
  except (_Unlisted, OSError):
    return
  fileio.write_json(
    layout.finished_file(out),
    {
      "schema": SCHEMA,
      "config": snapshot.doc,
      "code": snapshot.code,
      "run": run,
      "inputs": inputs,
      "passed": bool(passed),
      "lines": list(lines),
    },
    compact=True,
  )


def unchanged(config):
  """The record of `config`'s run directory if nothing it lists changed (module docstring),
  else None."""
  out = config.out
  if not out or filesystem.is_url(out):
    return None
  path = layout.finished_file(out)
  try:
    if not os.path.isfile(path):
      return None
    doc = fileio.read_json(path, "finished run")
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
      return None
    if doc.get("config") != _config_json(config) or doc.get("code") != _code():
      return None
    for row in doc["inputs"]:
      if _stat(row[0]) != row[1:]:
        return None
    if _run_files(out) != doc["run"]:
      return None
  except (errors.Error, OSError, ValueError, TypeError, KeyError, IndexError):
    return None
  return doc
