"""Deploy encoding choice: `choose_encoding` and the bundle shipping sparse twins."""

import json
import os

import pytest

from tests.export import fake_run
from tf_forget.artifacts import names
from tf_forget.evaluate import deploy
from tf_forget.evaluate import latency
from tf_forget.export import export_state
from tf_forget.policy import gates as gates_lib

PLAIN = {"size": 1000, "latency": 0.010}


def _sparse(size=200, latency=0.011, equal=True, reason=None, error=None):
  return {
    "size": size,
    "latency": latency,
    "twin_equal": equal,
    "twin_reason": reason,
    "error": error,
  }


def test_auto_picks_sparse_when_smaller_equal_and_fast_enough():
  encoding, reason = deploy.choose_encoding(PLAIN, _sparse())
  assert encoding == "sparse"
  assert reason == (
    "sparse file 0.200x the plain size, latency 1.10x (max 1.5x), predictions equal"
  )


def test_auto_picks_plain_when_sparse_is_slower_than_the_bound():
  encoding, reason = deploy.choose_encoding(PLAIN, _sparse(latency=0.016))
  assert (encoding, reason) == ("plain", "sparse file is 1.60x slower than plain (max 1.5x)")
  # The bound is the user's: 1.60x passes a bound of 2.
  assert deploy.choose_encoding(PLAIN, _sparse(latency=0.016), max_sparse_latency_ratio=2)[0] == (
    "sparse"
  )
  # Exactly at the bound is within it.
  assert deploy.choose_encoding(PLAIN, _sparse(latency=0.015))[0] == "sparse"


# Per-round sparse / plain ratios of a twin that is as fast as plain, seen on a loaded machine:
# most rounds near 1, a few where one interpreter's thread pool was starved (a twin measured
# "1.9x slower"). The median is over 1.5; the interquartile range reaches well under it.
NOISY = [1.2, 1.3, 1.4, 1.45, 1.55, 1.6, 1.65, 1.7, 1.8, 2.0, 2.2]
# A twin slower than the bound in every round.
SLOW = [1.7, 1.75, 1.8, 1.85, 1.9, 1.9, 1.95, 2.0, 2.1, 2.1, 2.2]


def _timed(ratios):
  """A sparse twin whose medians agree with the per-round `ratios` (plain at 10 ms)."""
  interval = latency.ratio_interval(ratios)
  return _sparse(latency=0.010 * interval["median"]), interval


def test_sparse_slower_than_the_bound_only_within_noise_is_not_refused():
  sparse, interval = _timed(NOISY)
  # 11 ratios: quartiles at (n - 1) * p = 2.5 and 7.5, between the 3rd / 4th and 8th / 9th.
  assert interval["median"] == pytest.approx(1.6) and interval["low"] == pytest.approx(1.425)
  assert interval["high"] == pytest.approx(1.75)
  encoding, reason = deploy.choose_encoding(PLAIN, dict(sparse, latency_ratio=interval))
  assert encoding == "sparse"
  assert reason == (
    "sparse file 0.200x the plain size, latency 1.60x (ratio interval "
    "1.42–1.75x, max 1.5x, over the bound only within noise), predictions equal"
  )
  # The same median without its spread would be refused.
  assert deploy.choose_encoding(PLAIN, sparse)[0] == "plain"


def test_sparse_slower_beyond_the_spread_is_refused():
  sparse, interval = _timed(SLOW)
  assert interval["low"] == pytest.approx(1.825) and interval["high"] == pytest.approx(2.05)
  assert deploy.choose_encoding(PLAIN, dict(sparse, latency_ratio=interval)) == (
    "plain",
    "sparse file is 1.90x slower than plain (ratio interval 1.83–2.05x > max 1.5x)",
  )
  # A bound above the interval's low end ships it.
  assert (
    deploy.choose_encoding(
      PLAIN, dict(sparse, latency_ratio=interval), max_sparse_latency_ratio=1.9
    )[0]
    == "sparse"
  )


def test_interval_without_a_positive_ratio_is_not_measured():
  bad = {"median": 1.0, "low": None, "high": 1.1}
  assert deploy.choose_encoding(PLAIN, dict(_sparse(), latency_ratio=bad)) == (
    "plain",
    "latency not measured for both files; cannot check the latency bound",
  )


@pytest.mark.parametrize(
  "sparse,reason",
  [
    (None, "no sparse-encoded twin"),
    (
      _sparse(error="TFLite conversion to full_int8 (sparse encoding) failed: x"),
      "sparse conversion failed: TFLite conversion to full_int8 (sparse encoding) failed: x",
    ),
    (
      _sparse(
        equal=False,
        reason="sparse file disagrees with its plain twin: top-1 differs on 3 of 150 examples",
      ),
      "sparse file disagrees with its plain twin: top-1 differs on 3 of 150 examples",
    ),
    (_sparse(equal=None), "sparse file not checked against its plain twin"),
    (_sparse(size=1000), "sparse file is not smaller (1.000x the plain size)"),
    (_sparse(size=991), "sparse file saves under 1% (0.9910x the plain size)"),
    (_sparse(latency=None), "latency not measured for both files; cannot check the latency bound"),
  ],
)
def test_auto_falls_back_to_plain_with_one_line_reason(sparse, reason):
  assert deploy.choose_encoding(PLAIN, sparse) == ("plain", reason)


def test_modes():
  assert deploy.choose_encoding(PLAIN, _sparse(), mode="plain") == (
    "plain",
    "plain encoding requested",
  )
  # "sparse" ignores size and latency but never ships a file that disagrees with its twin.
  assert deploy.choose_encoding(PLAIN, _sparse(size=2000, latency=1.0), mode="sparse")[0] == (
    "sparse"
  )
  assert deploy.choose_encoding(PLAIN, _sparse(equal=False, reason="r"), mode="sparse") == (
    "plain",
    "r",
  )


@pytest.mark.parametrize(
  "kwargs,message",
  [
    ({"mode": "smallest"}, "unknown deploy encoding 'smallest'"),
    ({"max_sparse_latency_ratio": 0}, "max_sparse_latency_ratio must be"),
    ({"max_sparse_latency_ratio": float("nan")}, "max_sparse_latency_ratio must be"),
  ],
)
def test_bad_options(kwargs, message):
  with pytest.raises(deploy.DeployError, match=message):
    deploy.choose_encoding(PLAIN, _sparse(), **kwargs)
  with pytest.raises(deploy.DeployError, match="plain file size"):
    deploy.choose_encoding({"size": 0, "latency": 1.0}, None)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
  return fake_run.pruned_twins_run(str(tmp_path_factory.mktemp("run")))


def _report():
  summary = {
    "top1": 0.9,
    "top1_change": 0.0,
    "pie_count": 0,
    "significant_classes": 0,
    "worst_subgroup": None,
  }
  return {
    "dataset": {"name": "synthetic", "eval_split": "test"},
    "variants": {"dense": summary, "prune_0.9": dict(summary, top1_change=-0.001)},
    "inputs": {v: {"test": {"members": [0]}} for v in ("dense", "prune_0.9")},
  }


def test_bundle_default_is_unchanged(run, tmp_path):
  manifest = deploy.write_bundle(run, str(tmp_path), _report(), gates_lib.Gates())
  assert [(e["variant"], e["encoding"]) for e in manifest["files"]] == [
    ("dense", "plain"),
    ("prune_0.9", "plain"),
  ]
  assert all("encoding_choice" not in e for e in manifest["files"])


def test_bundle_ships_the_chosen_sparse_twin(run, tmp_path):
  choice = {"encoding": "sparse", "reason": "sparse file 0.2x", "runtime": "xnnpack"}
  manifest = deploy.write_bundle(
    run, str(tmp_path), _report(), gates_lib.Gates(), encodings={"prune_0.9": choice}
  )
  entry = [e for e in manifest["files"] if e["variant"] == "prune_0.9"][0]
  with open(
    export_state.export_paths(run, names.Variant("prune_0.9", "float32", "sparse"), 0)[1]
  ) as f:
    sparse_meta = json.load(f)
  assert entry["encoding"] == "sparse" and entry["sha256"] == sparse_meta["sha256"]
  assert entry["encoding_choice"] == choice
  with open(os.path.join(tmp_path, "deploy", entry["file"]), "rb") as f:
    assert export_state.sha256(f.read()) == sparse_meta["sha256"]
