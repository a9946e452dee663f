"""Latency measurement: structure, runtime path timed, rounds, paired ratio intervals, bad
options."""

import numpy as np
import pytest

from tests.export import fake_run
from tf_forget.evaluate import latency
from tf_forget.export import converter


@pytest.fixture(scope="module")
def files():
  dataset = fake_run.SyntheticDataset()
  model = fake_run.prune(fake_run.tiny_cnn(0), dataset, 0.9)
  rep = dataset.take("train", 20).images
  return {
    f"{fmt}/{enc}": converter.convert(model, fmt, rep, enc)
    for fmt in ("float32", "full_int8")
    for enc in ("plain", "sparse")
  }


def test_measure_twins_in_one_run(files):
  result = latency.measure(files, batch_sizes=(1, 8), repeats=5, warmup=1, block=2)
  assert set(result) == set(files)
  # Runtime paths as measured on this stack (tf_forget/evaluate/interpreter.py): XNNPACK refuses
  # sparse int8.
  assert {n: r["runtime"] for n, r in result.items()} == {
    "float32/plain": "xnnpack",
    "float32/sparse": "xnnpack",
    "full_int8/plain": "xnnpack",
    "full_int8/sparse": "builtin",
  }
  assert "failed to prepare" in result["full_int8/sparse"]["fallback_reason"]
  for r in result.values():
    for b in (1, 8):
      stats = r[f"batch_{b}"]
      assert stats["repeats"] == 5
      # 5 timed invokes in blocks of 2: rounds of 2, 2 and 1, one block median each.
      assert len(stats["round_medians_s"]) == 3
      assert min(stats["round_medians_s"]) <= stats["median_s"] <= max(stats["round_medians_s"])
      assert 0 < stats["p10_s"] <= stats["median_s"] <= stats["p90_s"] < 5
  ratio = latency.ratio(result["float32/sparse"], result["float32/plain"], 8)
  assert ratio == pytest.approx(
    result["float32/sparse"]["batch_8"]["median_s"] / result["float32/plain"]["batch_8"]["median_s"]
  )


def test_forced_builtin_runtime(files):
  result = latency.measure(
    {"a": files["float32/plain"]}, batch_sizes=(2,), repeats=2, warmup=0, runtime="builtin"
  )
  assert result["a"]["runtime"] == "builtin" and result["a"]["fallback_reason"] is None


@pytest.mark.parametrize(
  "kwargs,message",
  [
    ({"repeats": 0}, "repeats"),
    ({"warmup": -1}, "warmup"),
    ({"batch_sizes": (0,)}, "batch sizes"),
    ({"batch_sizes": ()}, "batch sizes"),
    ({"block": 0}, "block"),
    ({"reference": "nope"}, "reference"),
    ({"precision": 0}, "precision"),
    ({"min_rounds": 0}, "min_rounds"),
  ],
)
def test_bad_options(files, kwargs, message):
  with pytest.raises(latency.LatencyError, match=message):
    latency.measure({"a": files["float32/plain"]}, **kwargs)
  with pytest.raises(latency.LatencyError, match="no file"):
    latency.measure({})


def test_fallback_runtime_is_kept_for_every_round(files, monkeypatch):
  """The device path is probed in the first round only; later rounds create it directly."""
  created = []
  real = latency.interpreter.create
  monkeypatch.setattr(
    latency.interpreter,
    "create",
    lambda model, threads, runtime, batch: (
      created.append(runtime) or real(model, threads, runtime, batch)
    ),
  )
  result = latency.measure(
    {"s": files["full_int8/sparse"]}, batch_sizes=(1,), repeats=4, warmup=0, block=1
  )
  assert result["s"]["runtime"] == "builtin"
  assert "failed to prepare" in result["s"]["fallback_reason"]
  # Fresh interpreters every round: create_for_device tries XNNPACK, then builtin in
  # round 1; rounds 2-4 create builtin directly.
  assert created == ["xnnpack", "builtin", "builtin", "builtin", "builtin"]


def test_paired_ratios_pair_rounds():
  """A round where the machine slowed both files 7x leaves its ratio alone."""
  plain = {"batch_1": {"round_medians_s": [1e-5, 7e-5, 1e-5, 1e-5]}}
  sparse = {"batch_1": {"round_medians_s": [1.1e-5, 7.7e-5, 1.1e-5, 1.2e-5]}}
  np.testing.assert_allclose(latency.paired_ratios(sparse, plain, 1), [1.1, 1.1, 1.1, 1.2])


def test_ratio_interval_is_the_interquartile_range():
  # 9 ratios 0.8, 0.9, ..., 1.6: the 25th / 50th / 75th percentiles sit exactly on the 3rd,
  # 5th and 7th values ((n - 1) * p = 2, 4, 6), counted by hand.
  ratios = [1.6, 0.8, 1.5, 0.9, 1.4, 1.0, 1.3, 1.1, 1.2]
  out = latency.ratio_interval(ratios)
  assert out == pytest.approx(
    {"median": 1.2, "low": 1.0, "high": 1.4, "rounds": 9, "coverage": 0.5}
  )
  # 80% coverage: the 10th and 90th percentiles, (n - 1) * p = 0.8 and 7.2.
  out = latency.ratio_interval(ratios, coverage=0.8)
  assert (out["low"], out["high"]) == pytest.approx((0.88, 1.52))
  one = latency.ratio_interval([1.3])
  assert one["low"] == one["median"] == one["high"] == 1.3


@pytest.mark.parametrize(
  "ratios,coverage,message",
  [
    ([], 0.5, "finite numbers > 0"),
    ([1.0, float("nan")], 0.5, "finite numbers > 0"),
    ([1.0, 0.0], 0.5, "finite numbers > 0"),
    ([1.0], 0.0, "coverage"),
    ([1.0], 1.5, "coverage"),
  ],
)
def test_ratio_interval_bad_input(ratios, coverage, message):
  with pytest.raises(latency.LatencyError, match=message):
    latency.ratio_interval(ratios, coverage)


def _scripted_rounds(monkeypatch, seconds):
  """Makes every round time file `name` at `seconds[name][round]` (no interpreter runs)."""
  count = {"round": 0}

  def fake_round(data, order, n, *args):
    r = count["round"]
    count["round"] += 1
    return {name: [seconds[name][r % len(seconds[name])]] * n for name in order}

  monkeypatch.setattr(latency, "_round", fake_round)


def _rounds_timed(monkeypatch, names, **options):
  """Rounds each file got, with "steady" at 2x "ref" every round and "noisy" alternating 1x
  and 2x (its quartiles, 1 and 2 over an even count, never within 10% of the median)."""
  _scripted_rounds(monkeypatch, {"ref": [1e-3], "steady": [2e-3], "noisy": [1e-3, 2e-3]})
  timed = latency.measure({n: b"" for n in names}, (1,), repeats=20, block=1, **options)
  return [len(r["batch_1"]["round_medians_s"]) for r in timed.values()]


def test_rounds_stop_once_every_ratio_is_settled(monkeypatch):
  early = dict(reference="ref", precision=0.1, min_rounds=3)
  assert _rounds_timed(monkeypatch, ["ref", "steady"], **early) == [3, 3]
  assert _rounds_timed(monkeypatch, ["ref", "steady", "noisy"], **early) == [20, 20, 20]
  assert _rounds_timed(monkeypatch, ["ref", "steady"]) == [20, 20]


def test_settled_compares_the_interquartile_range_with_the_median():
  # Sorted 0.95, 1.0, 1.05, 1.1: quartiles by linear interpolation at positions 0.75 and 2.25,
  # 0.9875 and 1.0625, a width of 0.075 against a median of 1.025 (0.0732 of it), by hand.
  ratios = [1.0, 1.1, 0.95, 1.05]
  assert latency.settled(ratios, precision=0.074)
  assert not latency.settled(ratios, precision=0.073)
