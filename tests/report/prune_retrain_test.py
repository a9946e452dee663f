"""003's prune-retrain study on hand-made accuracy curves with known answers.

Two parents (dense members 0 and 1), WT cycles at prune ratios 0.5, 0.75, 0.875, N = 200
examples; error counts chosen by hand (below), so every number is computed on paper:

  nominal           parent   c1   c2   c3      P (δ = 0.5% = 1 error of 200)
    k = 0             20     20   21   22      0.75  (c2 exactly at parent + δ qualifies)
    k = 1             10     12   10   30      0.75  (c1 fails, c2 qualifies: no monotonicity)
  gaussian_noise@3
    k = 0             40     41   45   50      0.5
    k = 1             30     35   36   40      0
"""

import json
import os

import numpy as np
import pytest

from tf_forget.report import collect
from tf_forget.report import prune_retrain
from tf_forget.report.units import prune_retrain as prune_retrain_unit

N = 200
RATIOS = (0.5, 0.75, 0.875)
ERRORS = {  # split -> variant -> [errors of k = 0, k = 1]
  "test": {
    "dense": [20, 10],
    "iter_wt_c1": [20, 12],
    "iter_wt_c2": [21, 10],
    "iter_wt_c3": [22, 30],
  },
  "gaussian_noise@3": {
    "dense": [40, 30],
    "iter_wt_c1": [41, 35],
    "iter_wt_c2": [45, 36],
    "iter_wt_c3": [50, 40],
  },
  "gaussian_noise@5": {
    "dense": [100, 100],
    "iter_wt_c1": [0, 0],
    "iter_wt_c2": [0, 0],
    "iter_wt_c3": [0, 0],
  },  # severity 5: left out of 003's tables
}


def _pop(errors):
  labels = np.zeros(N, np.int64)
  top1 = np.zeros((len(errors), N), np.int32)
  for i, e in enumerate(errors):
    top1[i, :e] = 1
  return collect.SplitPredictions(
    np.arange(len(errors)), np.arange(N), labels, top1[..., None], ({},) * len(errors)
  )


@pytest.fixture
def run(tmp_path):
  for c, ratio in enumerate(RATIOS, start=1):
    for k in (0, 1):
      d = tmp_path / "members" / f"iter_wt_c{c}" / str(k)
      d.mkdir(parents=True)
      (d / "metadata.json").write_text(json.dumps({"pruning": {"prune_ratio": ratio}}))
  predictions = {}
  for split, by_variant in ERRORS.items():
    for v, errs in by_variant.items():
      predictions.setdefault(v, {})[split] = _pop(errs)
  return collect.Run(str(tmp_path), "fake", {}, 2, ("a", "b"), "test", (), predictions, {}, {})


def test_prune_potential_and_summary_match_the_hand_computation(run):
  study = prune_retrain.compute(run)
  pot = study.tables["prune_retrain_potential"].set_index("distribution")
  assert list(pot.index) == ["nominal", "gaussian_noise@3"]
  assert pot.loc["nominal", "prune_potential"] == 0.75
  assert pot.loc["nominal", "prune_potential_sd"] == 0.0
  assert pot.loc["gaussian_noise@3", "prune_potential"] == 0.25
  assert pot.loc["gaussian_noise@3", "prune_potential_sd"] == 0.25  # ddof 0 of (0.5, 0)
  row = study.tables["prune_retrain_summary"].iloc[0]
  assert (row["train"], row["test_average"], row["test_minimum"], row["diff"]) == (
    0.75,
    0.25,
    0.25,
    -0.5,
  )
  assert row.test_distributions == 1 and row.parents == 2


def test_excess_error_against_the_parent(run):
  ex = prune_retrain.compute(run).tables["prune_retrain_excess"].set_index("cycle")
  # e(c1, k0) = 41/200 − 20/200 = 0.105, e(parent k0) = 40/200 − 20/200 = 0.1: ê − e = 0.005;
  # k1: (35 − 12)/200 − (30 − 10)/200 = 0.015. Mean 0.01, SD 0.005.
  assert ex.loc[1, "excess_vs_parent"] == pytest.approx(0.01, abs=1e-12)
  assert ex.loc[1, "excess_vs_parent_sd"] == pytest.approx(0.005, abs=1e-12)
  assert ex.loc[1, "parent_excess_error"] == pytest.approx(0.1, abs=1e-12)  # (0.1 + 0.1) / 2
  assert list(ex.prune_ratio) == list(RATIOS)


def test_curve_starts_at_the_parents_and_follows_the_cycles(run):
  curve = prune_retrain.compute(run).tables["prune_retrain_curve"]
  nominal = curve[curve.distribution == "nominal"]
  assert list(nominal.prune_ratio) == [0.0, *RATIOS]
  np.testing.assert_allclose(
    nominal.top1, [1 - 15 / 200, 1 - 16 / 200, 1 - 15.5 / 200, 1 - 26 / 200]
  )
  t = prune_retrain.compute(run).tables
  html = prune_retrain_unit.section(
    t["prune_retrain_curve"],
    t["prune_retrain_summary"],
    t["prune_retrain_potential"],
    t["prune_retrain_excess"],
    t.get("prune_retrain_similarity"),
    None,
  )
  assert "Prune potential per distribution" in html and "<img" in html


def test_no_prune_retrain_variant_means_no_study(run):
  run.predictions = {v: p for v, p in run.predictions.items() if v == "dense"}
  assert prune_retrain.compute(run) is None
  assert os.path.isdir(run.run_dir)
