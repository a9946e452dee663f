"""`--out=<URL>` end to end, through TensorFlow's in-memory `ram://` file system.

`ram://` stands in for a bucket (gs://) without a network: every artifact of the audit goes
through `tf_forget.artifacts.fileio` (URL paths through `tf.io.gfile`). A tiny audit trains and
audits on `ram://`; the same audit on a local directory, from the members trained there, gives
the same predictions, bit for bit, and the same report numbers; the `ram://` run writes nothing
to the local working directory.

The unit tests run every `fileio` primitive on a local tmp directory and on `ram://`.
"""

import os
import time
import uuid

import numpy as np
import pytest

from tests import timed
from tf_forget.artifacts import errors
from tf_forget.artifacts import fileio
from tf_forget.artifacts import filesystem
from tf_forget.artifacts import hashing
from tf_forget.artifacts import swap
from tf_forget.config import tree

tf = pytest.importorskip("tensorflow")


@pytest.fixture(params=["local", "ram"])
def root(request, tmp_path):
  """An empty directory: a local tmp dir, or a fresh `ram://` one."""
  if request.param == "local":
    return str(tmp_path / "root")
  return f"ram://fileio-{uuid.uuid4().hex[:8]}/root"


def test_write_read_exists_listdir_walk(root):
  assert not filesystem.exists(root) and filesystem.listdir(root) == []
  assert list(filesystem.walk(root)) == []
  fileio.write_bytes(filesystem.join(root, "b", "x.bin"), b"xyz")
  fileio.write_json(filesystem.join(root, "a.json"), {"k": 1})
  fileio.write_npz(filesystem.join(root, "b", "c", "arr.npz"), v=np.arange(3))
  assert filesystem.isdir(root) and filesystem.isfile(filesystem.join(root, "a.json"))
  assert not filesystem.isfile(filesystem.join(root, "b")) and filesystem.isdir(
    filesystem.join(root, "b")
  )
  assert filesystem.listdir(root) == ["a.json", "b"]  # no temporary file left
  assert fileio.read_json(filesystem.join(root, "a.json")) == {"k": 1}
  assert fileio.read_bytes(filesystem.join(root, "b", "x.bin")) == b"xyz"
  np.testing.assert_array_equal(
    fileio.read_npz(filesystem.join(root, "b", "c", "arr.npz"))["v"], np.arange(3)
  )
  assert list(filesystem.walk(root)) == [
    (root, ["b"], ["a.json"]),
    (filesystem.join(root, "b"), ["c"], ["x.bin"]),
    (filesystem.join(root, "b", "c"), [], ["arr.npz"]),
  ]
  with pytest.raises(errors.ReadError, match="cannot read"):
    fileio.read_bytes(filesystem.join(root, "missing"))


def test_prefix_siblings_are_not_entries(root):
  """`ram://` matches names by prefix: `deploy.tmp/` must not make `deploy` exist."""
  fileio.write_bytes(filesystem.join(root, "deploy.tmp", "f"), b"1")
  fileio.write_bytes(filesystem.join(root, "e2.txt"), b"1")
  filesystem.makedirs(filesystem.join(root, "e"))
  assert not filesystem.exists(filesystem.join(root, "deploy"))
  assert not filesystem.isdir(filesystem.join(root, "deploy"))
  assert filesystem.listdir(filesystem.join(root, "deploy")) == []
  assert filesystem.listdir(filesystem.join(root, "e")) == []
  assert filesystem.listdir(root) == ["deploy.tmp", "e", "e2.txt"]
  filesystem.rmtree(filesystem.join(root, "deploy"))  # nothing there: no error, the sibling stays
  filesystem.remove(filesystem.join(root, "deploy"))
  assert fileio.read_bytes(filesystem.join(root, "deploy.tmp", "f")) == b"1"


def test_stat_getsize_open_file(root):
  path = filesystem.join(root, "f.bin")
  data = bytes(range(256)) * 10
  fileio.write_bytes(path, data)
  st = filesystem.stat(path)
  assert st.size == len(data) == filesystem.getsize(path)
  assert (st.inode is None) == filesystem.is_url(path)
  with filesystem.open_file(path, "rb") as f:
    assert f.read(5) == data[:5] and f.read() == data[5:]
  with pytest.raises(FileNotFoundError):
    filesystem.stat(filesystem.join(root, "missing"))
  with pytest.raises(FileNotFoundError):
    filesystem.open_file(filesystem.join(root, "missing"), "rb")


def test_copy_rename_remove_rmtree(root):
  src = filesystem.join(root, "a", "src.bin")
  fileio.write_bytes(src, b"payload")
  dst = filesystem.join(root, "b", "c", "dst.bin")
  fileio.copy(src, dst)
  assert fileio.read_bytes(dst) == b"payload" and filesystem.listdir(
    filesystem.join(root, "b", "c")
  ) == ["dst.bin"]
  fileio.write_bytes(src, b"new")
  fileio.copy(src, dst)  # replaces
  assert fileio.read_bytes(dst) == b"new"
  fileio.rename(dst, filesystem.join(root, "b", "moved.bin"))
  assert (
    not filesystem.exists(dst)
    and fileio.read_bytes(filesystem.join(root, "b", "moved.bin")) == b"new"
  )
  with pytest.raises(errors.WriteError, match="cannot write"):
    fileio.copy(filesystem.join(root, "missing"), filesystem.join(root, "x"))
  assert not filesystem.exists(filesystem.join(root, "x"))
  filesystem.remove(src)
  filesystem.remove(src)  # a missing file: no error
  assert filesystem.listdir(filesystem.join(root, "a")) == []
  filesystem.rmtree(filesystem.join(root, "b"))
  filesystem.rmtree(filesystem.join(root, "b"))
  assert filesystem.listdir(root) == ["a"]


def test_replace_dir(root):
  dst = filesystem.join(root, "deploy")
  fileio.write_bytes(filesystem.join(dst, "old.bin"), b"old")
  tmp = dst + ".tmp"
  fileio.write_bytes(filesystem.join(tmp, "v", "0.tflite"), b"model")
  fileio.write_json(filesystem.join(tmp, "manifest.json"), {"ok": True})
  swap.replace_dir(tmp, dst, last=("manifest.json",))
  assert not filesystem.exists(tmp) and filesystem.listdir(root) == ["deploy"]
  assert filesystem.listdir(dst) == ["manifest.json", "v"]
  assert fileio.read_bytes(filesystem.join(dst, "v", "0.tflite")) == b"model"
  assert fileio.read_json(filesystem.join(dst, "manifest.json")) == {"ok": True}


def test_file_sha256(root):
  path = filesystem.join(root, "f.bin")
  fileio.write_bytes(path, b"a" * 100)
  assert hashing.file_sha256(path) == hashing.sha256_bytes(b"a" * 100)
  fileio.write_bytes(path, b"b" * 100)  # same size; ram:// has no mtime: never memoized
  if filesystem.is_url(path):
    assert hashing.file_sha256(path) == hashing.sha256_bytes(b"b" * 100)
  assert hashing.file_sha256(path, memo=False) == hashing.sha256_bytes(b"b" * 100)
  with pytest.raises(OSError):
    hashing.file_sha256(filesystem.join(root, "missing"))
  assert hashing.file_sha256_or_none(filesystem.join(root, "missing")) is None


def test_url_parent_is_not_the_scheme(monkeypatch):
  made = []
  monkeypatch.setattr(fileio, "makedirs", made.append)
  monkeypatch.setattr(fileio, "_write_file", lambda path, data: None)
  monkeypatch.setattr(fileio, "_rename", lambda src, dst: None)
  monkeypatch.setattr(fileio, "remove", lambda path: None)
  fileio.write_bytes("ram://top.bin", b"")
  fileio.write_bytes("ram://a/b.bin", b"")
  assert made == ["ram://a"]  # never "ram:" (a local directory)


# The audit, on ram:// and on a local directory.

_AUDIT = {
  "data": {"dataset": "digits"},
  "population": {
    "preset": "tiny",
    "members": 2,
    "variants": ["dense", "prune_0.5"],
    "steps": 60,
    "preset_overrides": {"checkpoint_every": 30},
  },
  "formats": {"quantizations": ["dynamic_int8"]},
  "robustness": {"corruptions": ["gaussian_noise"], "severities": [3]},
  "noise": {"levels": [0.0, 0.1], "draws": 2, "examples": 50},
  "deployment": {"encoding": "plain"},
}
# Timings (and what depends on them: the encoding chosen by the latency bound) differ between
# two runs; everything else in the report must be equal.
# Besides the timings: what the encoding decision, made from them, writes.
_TIMED = timed.TIMED + ("encoding", "runtime", "shipped", "size_ratio", "reason")


def _strip(value, out):
  """`value` without timings and without the output directory's name."""
  if isinstance(value, dict):
    return {k: _strip(v, out) for k, v in value.items() if not any(t in k for t in _TIMED)}
  if isinstance(value, list):
    return [_strip(v, out) for v in value]
  if isinstance(value, str):
    return value.replace(out, "<out>")
  return value


def _predictions(out):
  """{relative path: arrays} of every predictions and noise file of a run."""
  found = {}
  for sub in ("predictions", "predictions_keras", "noise"):
    for dirpath, _, names in filesystem.walk(filesystem.join(out, sub)):
      for name in names:
        if name.endswith(".npz"):
          path = filesystem.join(dirpath, name)
          found[path[len(out) :]] = fileio.read_npz(path)
  return found


def _copy_tree(src, dst):
  """Copies the tree `src` (a URL) to the local directory `dst`."""
  for dirpath, _, names in filesystem.walk(src):
    target = os.path.join(dst, dirpath[len(src) :].lstrip("/"))
    os.makedirs(target, exist_ok=True)
    for name in names:
      fileio.copy(filesystem.join(dirpath, name), os.path.join(target, name))


def test_audit_on_ram_equals_local(tmp_path, monkeypatch):
  from tf_forget.pipeline import audit_lib

  cwd = tmp_path / "cwd"
  cwd.mkdir()
  monkeypatch.chdir(cwd)
  local = str(tmp_path / "run")
  ram = f"ram://audit-{uuid.uuid4().hex[:8]}/run"
  results = {}
  for out in (ram, local):  # the local run starts from the members trained through ram://
    if out == local:
      _copy_tree(filesystem.join(ram, "members"), os.path.join(local, "members"))
    t0 = time.time()
    results[out] = audit_lib.run_audit(
      tree.AuditConfig.from_json(dict(_AUDIT, out=out)), log=lambda s: None
    )
    print(f"audit on {out}: {time.time() - t0:.0f} s")
  assert list(cwd.iterdir()) == []  # the ram:// run wrote nothing locally

  for name in (
    "report.json",
    "report.html",
    "audit.json",
    "deploy/manifest.json",
    "eval/encodings.json",
    "tables/overview.csv",
  ):
    assert filesystem.isfile(filesystem.join(ram, name)), name
  report = fileio.read_json(filesystem.join(ram, "report.json"))
  manifest = fileio.read_json(filesystem.join(ram, "deploy", "manifest.json"))
  assert report == results[ram][0]
  assert {e["variant"] for e in manifest["files"]} == set(report["variants"])
  for entry in manifest["files"]:
    data = fileio.read_bytes(filesystem.join(ram, "deploy", entry["file"]))
    assert len(data) == entry["size_bytes"]["raw"]
    assert hashing.sha256_bytes(data) == entry["sha256"]
  assert not filesystem.exists(filesystem.join(ram, "deploy.tmp"))
  assert filesystem.listdir(
    filesystem.join(ram, "corruptions")
  )  # the corruption cache is there too

  # Bit-equal predictions and equal report numbers.
  on_ram, on_disk = _predictions(ram), _predictions(local)
  assert sorted(on_ram) == sorted(on_disk) and on_ram
  for path, arrays in on_disk.items():
    assert sorted(on_ram[path]) == sorted(arrays), path
    for key, value in arrays.items():
      if key != "metadata":
        np.testing.assert_array_equal(on_ram[path][key], value, err_msg=f"{path} {key}")
  local_report = results[local][0]
  for key in ("variants", "tables", "inputs", "dataset", "gallery", "settings"):
    assert _strip(report[key], ram) == _strip(local_report[key], local), key
  shipped = {(e["variant"], e["encoding"]): e["sha256"] for e in results[local][1]["files"]}
  for entry in manifest["files"]:  # the same file, where the latency bound chose the same one
    assert shipped.get((entry["variant"], entry["encoding"]), entry["sha256"]) == entry["sha256"]

  # A second run on ram:// reuses every artifact: exists / listdir / hashes work there.
  lines, t0 = [], time.time()
  report2, _ = audit_lib.run_audit(
    tree.AuditConfig.from_json(dict(_AUDIT, out=ram)), log=lines.append
  )
  assert not [line for line in lines if "redo" in line], lines
  assert _strip(report2["variants"], ram) == _strip(report["variants"], ram)
  print(f"re-run on {ram}: {time.time() - t0:.0f} s")
  assert list(cwd.iterdir()) == []
