"""Predictions schema: tie rule, k, round trip, readable with numpy alone (no TensorFlow)."""

import os
import subprocess
import sys

import numpy as np
import pytest

from tf_forget.artifacts import predictions


def test_topk_ties_go_to_the_lowest_index():
  # Hand-made scores: row 0 ties classes 1 and 3 at the top; row 1 ties everything.
  scores = np.array(
    [[0.1, 0.9, 0.5, 0.9, 0.2, 0.0, 0.7], [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]], np.float32
  )
  topk = predictions.topk(scores, 5)
  np.testing.assert_array_equal(topk, [[1, 3, 6, 2, 4], [0, 1, 2, 3, 4]])
  np.testing.assert_array_equal(topk[:, 0], np.argmax(scores, axis=1))


def test_k_is_five_or_num_classes():
  assert predictions.topk_size(1000) == 5
  assert predictions.topk_size(2) == 2


def test_round_trip(tmp_path):
  path = predictions.path(str(tmp_path), "prune_0.9+full_int8", 3, "glass_blur@3")
  assert path.endswith(os.path.join("predictions", "prune_0.9+full_int8", "3", "glass_blur@3.npz"))
  scores = np.array([[0.0, 2.0, 1.0], [3.0, 3.0, -1.0]], np.float32)
  predictions.write(path, [10, 11], [1, 0], scores, {"variant": "prune_0.9+full_int8", "k": 3})
  data = predictions.read(path)
  np.testing.assert_array_equal(data["ids"], [10, 11])
  np.testing.assert_array_equal(data["topk"], [[1, 2, 0], [0, 1, 2]])
  np.testing.assert_array_equal(data["logits"], scores)
  assert data["metadata"]["variant"] == "prune_0.9+full_int8"
  assert data["metadata"]["schema"] == predictions.SCHEMA
  assert predictions.is_complete(path) and not predictions.is_complete(path, "other-sha")
  predictions.write(path, [10, 11], [1, 0], scores, {}, save_logits=False)
  assert "logits" not in predictions.read(path)


def test_readable_without_tensorflow(tmp_path):
  path = str(tmp_path / "p.npz")
  predictions.write(path, [1], [0], np.ones((1, 4), np.float32), {"variant": "dense"})
  code = (
    f"import sys, numpy as np, json\n"
    f"with np.load({path!r}, allow_pickle=False) as d:\n"
    f"  meta = json.loads(str(d['metadata'])); topk = d['topk']\n"
    f"from tf_forget.artifacts import predictions\n"
    f"predictions.read({path!r})\n"
    f"assert 'tensorflow' not in sys.modules, 'TensorFlow was imported'\n"
    f"print(meta['variant'], topk.tolist())\n"
  )
  out = subprocess.run(
    [sys.executable, "-c", code],
    capture_output=True,
    text=True,
    cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
    check=False,
  )
  assert out.returncode == 0, out.stderr
  assert out.stdout.strip() == "dense [[0, 1, 2, 3]]"


def test_bad_files(tmp_path):
  bad = tmp_path / "bad.npz"
  bad.write_bytes(b"nope")
  with pytest.raises(predictions.PredictionsError):
    predictions.read(str(bad))
  assert not predictions.is_complete(str(bad))
  with pytest.raises(predictions.PredictionsError):
    predictions.path(str(tmp_path), "dense", 0, "a/b")
