"""Atomic writes (os + rename for local paths), one-line write errors, hashing, names, layout,
strict JSON."""

import collections
import errno
import hashlib
import json
import os

import numpy as np
import pytest

from tf_forget.artifacts import errors
from tf_forget.artifacts import fileio
from tf_forget.artifacts import hashing
from tf_forget.artifacts import layout
from tf_forget.artifacts import names


def test_write_errors_are_one_line_and_leave_nothing(tmp_path, monkeypatch):
  blocker = tmp_path / "file"
  blocker.write_text("x")
  with pytest.raises(errors.WriteError, match=r"cannot write .*file/sub: Not a directory"):
    fileio.write_json(str(blocker / "sub" / "a.json"), {})  # NotADirectoryError
  assert blocker.read_text() == "x"

  def full(path, data):
    raise OSError(errno.ENOSPC, "No space left on device")

  monkeypatch.setattr(fileio, "_write_file", full)
  with pytest.raises(errors.WriteError) as e:
    fileio.write_json(str(tmp_path / "b.json"), {})
  assert str(e.value) == f"cannot write {tmp_path / 'b.json'}: No space left on device"
  assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]  # no temporary file left


def test_check_writable(tmp_path, monkeypatch):
  out = tmp_path / "a" / "b"
  assert fileio.check_writable(str(out)) == [str(tmp_path / "a"), str(out)]
  assert list(out.iterdir()) == []  # the probe is gone
  fileio.remove_created([str(tmp_path / "a"), str(out)])
  assert not (tmp_path / "a").exists()

  def denied(path, data):
    raise PermissionError(errno.EACCES, "Permission denied")

  monkeypatch.setattr(fileio, "_write_file", denied)
  with pytest.raises(errors.WriteError, match="Permission denied"):
    fileio.check_writable(str(out))
  assert not (tmp_path / "a").exists()  # what it created is removed again


def test_file_sha256_streams_and_notices_changes(tmp_path):
  path = tmp_path / "f.bin"
  data = os.urandom(3 << 20)
  path.write_bytes(data)
  assert hashing.file_sha256(str(path)) == hashlib.sha256(data).hexdigest()
  path.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))  # same size, new bytes and mtime
  os.utime(path, ns=(1, 1))
  assert (
    hashing.file_sha256(str(path)) == hashlib.sha256(data[:-1] + bytes([data[-1] ^ 1])).hexdigest()
  )
  assert hashing.sha256_json({"b": 1, "a": 2}) == hashing.sha256_json({"a": 2, "b": 1})


def test_names_round_trip():
  for name in (
    "dense",
    "full_int8",
    "prune_0.9",
    "prune_0.9+full_int8",
    "float32+sparse",
    "prune_0.9+sparse",
    "prune_0.9+full_int8+sparse",
  ):
    assert names.parse_variant(name).name == name
  assert names.parse_trained("prune_0.90").name == "prune_0.9"
  with pytest.raises(errors.Error):
    names.parse_variant("prune_0.9+int4")
  with pytest.raises(errors.Error):
    names.parse_trained("prune_1.5")
  assert names.parse_split("test") is None
  assert names.parse_split("glass_blur@3") == ("glass_blur", 3)
  assert names.split_name("glass_blur", 3) == "glass_blur@3"
  for bad in ("", "a/b", "glass_blur@x", "@3"):
    with pytest.raises(names.SplitNameError):
      names.parse_split(bad)


def test_layout():
  v = names.parse_variant("prune_0.9+full_int8+sparse")
  assert layout.tflite_paths("r", v, 3) == (
    "r/tflite/prune_0.9/3/full_int8+sparse.tflite",
    "r/tflite/prune_0.9/3/full_int8+sparse.json",
  )
  assert layout.predictions("r", "dense", 0, "fog@2") == "r/predictions/dense/0/fog@2.npz"
  assert layout.member_model("r", "dense", 1) == "r/members/dense/1/model.keras"
  assert layout.twin_runtime("r", "full_int8", 0, "test", "builtin") == (
    "r/eval/twin_runtime/full_int8/0/test.builtin.npz"
  )
  with pytest.raises(names.SplitNameError):
    layout.predictions("r", "dense", 0, "a/b")


def test_strict_json_writes_nan_and_infinities_as_null(tmp_path):
  path = str(tmp_path / "m.json")
  obj = {"a": float("nan"), "b": [float("inf"), 1.5], "c": {"d": (1, -float("inf"))}}
  fileio.write_json(path, obj, strict=True)

  def refuse(constant):
    raise ValueError(f"not strict JSON: {constant}")

  with open(path) as f:
    assert json.loads(f.read(), parse_constant=refuse) == {
      "a": None,
      "b": [None, 1.5],
      "c": {"d": [1, None]},
    }
  # Valid JSON is written with the same bytes, strict or not.
  valid = {"z": [1, 2.5, None, "x"], "a": {"b": True}}
  fileio.write_json(path, valid)
  lax = open(path, "rb").read()
  fileio.write_json(path, valid, strict=True)
  assert (
    open(path, "rb").read() == lax == (json.dumps(valid, indent=2, sort_keys=True) + "\n").encode()
  )


# --- round trips ------------------------------------------------------------------------------


def test_json_round_trip_and_no_temp_left(tmp_path):
  path = str(tmp_path / "a" / "b.json")
  fileio.write_json(path, {"x": [1, 2], "nan": float("nan")})
  data = fileio.read_json(path)
  assert data["x"] == [1, 2] and np.isnan(data["nan"])
  assert [p.name for p in (tmp_path / "a").iterdir()] == ["b.json"]


def test_npz_round_trip_refuses_object_arrays(tmp_path):
  path = str(tmp_path / "p.npz")
  fileio.write_npz(path, ids=np.arange(3), topk=np.ones((3, 2), np.int16))
  got = fileio.read_npz(path)
  np.testing.assert_array_equal(got["ids"], np.arange(3))
  with pytest.raises(ValueError, match="dtype object"):
    fileio.write_npz(str(tmp_path / "q.npz"), bad=np.array([{"a": 1}], dtype=object))
  assert not (tmp_path / "q.npz").exists()


def test_npz_read_again_is_parsed_once_and_never_stale(tmp_path, monkeypatch):
  monkeypatch.setattr(fileio, "_PARSED", collections.OrderedDict())
  monkeypatch.setattr(fileio, "_PARSED_SIZE", [0])
  parsed = []
  load = np.load
  monkeypatch.setattr(fileio.np, "load", lambda *a, **k: parsed.append(1) or load(*a, **k))
  path = str(tmp_path / "p.npz")
  fileio.write_npz(path, ids=np.arange(3))
  first = fileio.read_npz(path)
  first["ids"][0] = 99  # the caller's own copy
  np.testing.assert_array_equal(fileio.read_npz(path)["ids"], np.arange(3))
  assert len(parsed) == 1  # the same bytes: parsed once
  fileio.write_npz(path, ids=np.arange(4))  # rewritten: other bytes, parsed again
  np.testing.assert_array_equal(fileio.read_npz(path)["ids"], np.arange(4))
  assert len(parsed) == 2


def test_npz_parsed_arrays_kept_within_the_budget(tmp_path, monkeypatch):
  monkeypatch.setattr(fileio, "_PARSED", collections.OrderedDict())
  monkeypatch.setattr(fileio, "_PARSED_SIZE", [0])
  monkeypatch.setattr(fileio, "PARSED_BYTES", 100)
  for i in range(5):  # 5 x 40 bytes: the two most recent fit
    fileio.write_npz(str(tmp_path / f"{i}.npz"), v=np.full(5, i, np.int64))
    fileio.read_npz(str(tmp_path / f"{i}.npz"))
  assert len(fileio._PARSED) == 2 and fileio._PARSED_SIZE[0] == 80
  fileio.write_npz(str(tmp_path / "big.npz"), v=np.zeros(20, np.int64))  # 160 bytes
  np.testing.assert_array_equal(fileio.read_npz(str(tmp_path / "big.npz"))["v"], np.zeros(20))
  assert len(fileio._PARSED) == 2 and fileio._PARSED_SIZE[0] == 80  # never kept


def test_failed_write_leaves_nothing(tmp_path):
  target = tmp_path / "file"
  target.write_text("x")
  with pytest.raises(Exception):
    fileio.write_bytes(str(target / "child.json"), b"{}")  # parent is a file
  assert target.read_text() == "x"
