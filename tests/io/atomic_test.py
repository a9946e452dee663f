"""Atomic artifact writes: no partial file, no pickles."""

import numpy as np
import pytest

from tf_forget.io import atomic


def test_json_round_trip_and_no_temp_left(tmp_path):
  path = str(tmp_path / "a" / "b.json")
  atomic.write_json(path, {"x": [1, 2], "nan": float("nan")})
  data = atomic.read_json(path)
  assert data["x"] == [1, 2] and np.isnan(data["nan"])
  assert [p.name for p in (tmp_path / "a").iterdir()] == ["b.json"]


def test_npz_round_trip_refuses_object_arrays(tmp_path):
  path = str(tmp_path / "p.npz")
  atomic.write_npz(path, ids=np.arange(3), topk=np.ones((3, 2), np.int16))
  got = atomic.read_npz(path)
  np.testing.assert_array_equal(got["ids"], np.arange(3))
  with pytest.raises(ValueError, match="dtype object"):
    atomic.write_npz(str(tmp_path / "q.npz"), bad=np.array([{"a": 1}], dtype=object))
  assert not (tmp_path / "q.npz").exists()


def test_failed_write_leaves_nothing(tmp_path):
  target = tmp_path / "file"
  target.write_text("x")
  with pytest.raises(Exception):
    atomic.write_bytes(str(target / "child.json"), b"{}")  # parent is a file
  assert target.read_text() == "x"
