"""Latency measurement (issue #10): structure, runtime path timed, bad options."""

import pytest

from eval import latency
from tests.tflite_export import fake_run
from tflite_export import converter


@pytest.fixture(scope="module")
def files():
  dataset = fake_run.SyntheticDataset()
  model = fake_run.prune(fake_run.tiny_cnn(0), dataset, 0.9)
  rep = dataset.take("train", 20).images
  return {f"{fmt}/{enc}": converter.convert(model, fmt, rep, enc)
          for fmt in ("float32", "full_int8") for enc in ("plain", "sparse")}


def test_measure_twins_in_one_run(files):
  result = latency.measure(files, batch_sizes=(1, 8), repeats=5, warmup=1, block=2)
  assert set(result) == set(files)
  # Runtime paths as measured on this stack (eval/interpreter.py): XNNPACK refuses sparse int8.
  assert {n: r["runtime"] for n, r in result.items()} == {
      "float32/plain": "xnnpack", "float32/sparse": "xnnpack",
      "full_int8/plain": "xnnpack", "full_int8/sparse": "builtin"}
  assert "failed to prepare" in result["full_int8/sparse"]["fallback_reason"]
  for r in result.values():
    for b in (1, 8):
      stats = r[f"batch_{b}"]
      assert stats["repeats"] == 5
      assert 0 < stats["p10_s"] <= stats["median_s"] <= stats["p90_s"] < 5
  ratio = latency.ratio(result["float32/sparse"], result["float32/plain"], 8)
  assert ratio == pytest.approx(result["float32/sparse"]["batch_8"]["median_s"] /
                                result["float32/plain"]["batch_8"]["median_s"])


def test_forced_builtin_runtime(files):
  result = latency.measure({"a": files["float32/plain"]}, batch_sizes=(2,), repeats=2,
                           warmup=0, runtime="builtin")
  assert result["a"]["runtime"] == "builtin" and result["a"]["fallback_reason"] is None


@pytest.mark.parametrize("kwargs,message", [
    ({"repeats": 0}, "repeats"),
    ({"warmup": -1}, "warmup"),
    ({"batch_sizes": (0,)}, "batch sizes"),
    ({"batch_sizes": ()}, "batch sizes"),
    ({"block": 0}, "block"),
])
def test_bad_options(files, kwargs, message):
  with pytest.raises(latency.LatencyError, match=message):
    latency.measure({"a": files["float32/plain"]}, **kwargs)
  with pytest.raises(latency.LatencyError, match="no file"):
    latency.measure({})
