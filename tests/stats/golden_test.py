"""Every output of the stats library on a small fixed synthetic population, against a golden.

The population is generated here from a seed; its outputs were written once to
tests/golden/stats_golden.json, and each run recomputes them and compares, so any change in
a number shows up in review. The golden is a regression record, not an independent truth:
the independent checks are the paper goldens and hand computations in the other test files.

Regenerate (after an intended change; review the diff of the JSON):

    TF_FORGET_REGEN_GOLDEN=1 .venv/bin/pytest tests/stats/golden_test.py
"""

import json
import math
import os
import pathlib

import numpy as np
import pandas as pd
import pytest

from tf_forget.stats import accuracy
from tf_forget.stats import cie
from tf_forget.stats import class_level
from tf_forget.stats import exemplars
from tf_forget.stats import lost_in_pruning as lip
from tf_forget.stats import recall_distortion as rd
from tf_forget.stats import recall_tests
from tf_forget.stats import robustness
from tf_forget.stats import subgroups

GOLDEN = pathlib.Path(__file__).resolve().parent.parent / "golden" / "stats_golden.json"
REGEN_ENV = "TF_FORGET_REGEN_GOLDEN"
SEED = 20261122
MEMBERS = 8
EXAMPLES = 240
CLASSES = 6
VARIANTS = {"dense": 0.95, "prune_0.5": 0.92, "prune_0.9": 0.80}  # mean correctness
# Class-specific effects per variant (keyed by its correctness): pruning hurts classes 0-1.
CLASS_SHIFT = {
  0.95: np.zeros(CLASSES),
  0.92: np.array([-0.1, 0, 0, 0, 0, 0.03]),
  0.80: np.array([-0.3, -0.2, 0, 0, 0.05, 0.1]),
}


def _population(rng, labels, classes, p_correct, difficulty, members=MEMBERS):
  """Members that are right with a per-example probability, else a random wrong label."""
  p = np.clip(p_correct + difficulty, 0, 1)
  if members == MEMBERS and classes == CLASSES:
    p = np.clip(p + CLASS_SHIFT[p_correct][labels], 0, 1)
  right = rng.random((members, labels.size)) < p[None, :]
  wrong = (labels[None, :] + rng.integers(1, classes, (members, labels.size))) % classes
  top1 = np.where(right, labels[None, :], wrong)
  others = (top1[:, :, None] + 1 + np.arange(4)[None, None, :]) % classes
  return top1, np.concatenate([top1[:, :, None], others], axis=2)


def _jsonable(x):
  if isinstance(x, pd.DataFrame):
    return {
      "columns": [str(c) for c in x.columns],
      "index": [str(i) for i in x.index],
      "values": [[_jsonable(v) for v in row] for row in x.itertuples(index=False)],
    }
  if isinstance(x, pd.Series):
    return {str(k): _jsonable(v) for k, v in x.items()}
  if isinstance(x, dict):
    return {str(k): _jsonable(v) for k, v in x.items()}
  if isinstance(x, (list, tuple)):
    return [_jsonable(v) for v in x]
  if isinstance(x, np.ndarray):
    return [_jsonable(v) for v in x.tolist()]
  if isinstance(x, (np.bool_, bool)):
    return bool(x)
  if isinstance(x, (np.integer, int)):
    return int(x)
  if isinstance(x, (np.floating, float)):
    return float(x)
  return x


def compute_outputs():
  """All library outputs on the seeded synthetic population, as a JSON-able dict."""
  rng = np.random.default_rng(SEED)
  labels = np.repeat(np.arange(CLASSES), EXAMPLES // CLASSES)  # balanced (docs/spec.md §2.7)
  # Shared per-example difficulty: a hard tail where populations disagree (PIEs).
  hard = np.linspace(-0.6, 0.1, labels.size)[rng.permutation(labels.size)]
  pops = {v: _population(rng, labels, CLASSES, p, hard) for v, p in VARIANTS.items()}
  out = {}
  rec = {v: accuracy.per_class_recall(t1, labels, CLASSES) for v, (t1, _) in pops.items()}
  acc = {v: accuracy.top1_accuracy(t1, labels) for v, (t1, _) in pops.items()}
  out["accuracy"] = {
    v: {
      "top1": acc[v],
      "top5": accuracy.topk_accuracy(tk, labels, 5),
      "summary": accuracy.population_summary(acc[v]),
      "per_class_recall": rec[v],
    }
    for v, (_, tk) in pops.items()
  }
  d1, dk = pops["dense"]
  for v in ("prune_0.5", "prune_0.9"):
    t1, tk = pops[v]
    res = {}
    for center in ("member", "population"):
      for corr in (None, "bh", "bonferroni"):
        table = class_level.class_level_report(
          rec["dense"], acc["dense"], rec[v], acc[v], center=center, correction=corr
        )
        res[f"{center}/{corr}"] = {
          "table": table,
          "count": class_level.count_significant_classes(table),
          "gained_lost": class_level.gained_lost_summary(
            table["normalized_recall_difference"], table["significant"]
          ),
        }
    pie = exemplars.pruning_identified_exemplars(d1, t1, CLASSES)
    res["pie"] = {k: val for k, val in pie.items()}
    res["pie_accuracy"] = exemplars.accuracy_on_subsets(d1, t1, labels, pie["pie"], dk, tk)
    res["pie_accuracy_sampled"] = exemplars.accuracy_on_subsets(
      d1, t1, labels, pie["pie"], dk, tk, sample_size=20, seed=3
    )
    dt = cie.taxicab_distance(d1, t1, CLASSES)
    res["taxicab"] = dt
    res["jaccard"] = cie.weighted_jaccard_distance(d1, t1, CLASSES)
    res["p90_mask"] = cie.select_percentile(dt, 90, seed=0)
    res["taxicab_accuracy"] = cie.taxicab_cie_accuracy(
      d1, t1, labels, seed=0, num_classes=CLASSES, topk_predictions_0=dk, topk_predictions_t=tk
    )
    res["recall_distortion"] = rd.recall_distortion_summary(
      rec["dense"], acc["dense"], rec[v], acc[v]
    )
    res["intensification"] = rd.intensification_ratio(
      rd.normalized_recall_balance(rec["dense"], acc["dense"]),
      rd.normalized_recall_balance(rec[v], acc[v]),
    )
    out[v] = res
  alphas = {
    2: out["prune_0.5"]["recall_distortion"]["alphas"],
    10: out["prune_0.9"]["recall_distortion"]["alphas"],
  }
  out["ratio_tests"] = recall_tests.ratio_trend_tests(alphas)
  out["algorithm_tests"] = recall_tests.algorithm_tests({"MP": alphas[2], "UP": alphas[10]})
  out["model_size_tests"] = recall_tests.model_size_tests({"small": alphas[10], "large": alphas[2]})

  # Binary task with attributes (004 §2): target 1 = "blond".
  blabels = (rng.random(EXAMPLES) < 0.2).astype(int)
  attrs = pd.DataFrame(
    {
      "Male": rng.random(EXAMPLES) < 0.4,
      "Young": rng.random(EXAMPLES) < 0.7,
      "Eyeglasses": rng.random(EXAMPLES) < 0.1,
    }
  )
  train_attrs = {
    k: rng.random(1000) < s for k, s in (("Male", 0.42), ("Young", 0.78), ("Eyeglasses", 0.07))
  }
  bhard = np.linspace(-0.5, 0.05, EXAMPLES)[rng.permutation(EXAMPLES)]
  b0, _ = _population(rng, blabels, 2, 0.93, bhard, members=12)
  bt, _ = _population(rng, blabels, 2, 0.90, bhard, members=12)
  out["subgroups"] = subgroups.subgroup_table(b0, bt, blabels, attrs)
  bd = cie.taxicab_distance(b0, bt, 2)
  out["over_indexing"] = subgroups.over_indexing(
    train_attrs, attrs, cie.select_percentile(bd, 80, seed=0)
  )

  corr_acc = {
    (v, c): np.clip(rng.normal(0.6 - 0.1 * i - 0.05 * j, 0.02, (MEMBERS, 5)), 0, 1)
    for i, v in enumerate(VARIANTS)
    for j, c in enumerate(("fog", "snow"))
  }
  out["robustness"] = robustness.robustness_table(
    corr_acc, {k: np.minimum(1, a + 0.2) for k, a in corr_acc.items()}
  )

  ratios = np.array([0.3, 0.5, 0.7, 0.9])
  errors = np.clip(0.08 + rng.normal(0, 0.004, (3, 4, 4)) + 0.02 * ratios**3, 0, 1)
  parent = np.full((3, 4), 0.08)
  pot = lip.prune_potential(ratios, errors, parent)
  out["prune_potential"] = {"values": pot, "summary": lip.prune_potential_summary(pot)}
  out["excess_error"] = lip.excess_error(errors[:, 1:, 2], errors[:, 0, 2])
  logits = rng.normal(size=(2, 3, 10, CLASSES))
  sa = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
  sb = np.exp(logits + rng.normal(0, 0.5, logits.shape))
  sb /= sb.sum(-1, keepdims=True)
  out["noise_similarity"] = lip.noise_similarity(sa, sb)
  return _jsonable(out)


def _compare(got, want, path="$"):
  if isinstance(want, dict):
    assert isinstance(got, dict) and sorted(got) == sorted(want), path
    for k in want:
      _compare(got[k], want[k], f"{path}.{k}")
  elif isinstance(want, list):
    assert isinstance(got, list) and len(got) == len(want), path
    for i, (g, w) in enumerate(zip(got, want)):
      _compare(g, w, f"{path}[{i}]")
  elif isinstance(want, bool) or isinstance(want, str) or want is None:
    assert got == want, path
  elif isinstance(want, (int, float)):
    assert isinstance(got, (int, float)) and not isinstance(got, bool), path
    if math.isnan(want):
      assert math.isnan(got), f"{path}: {got} != NaN"
    else:
      # Deterministic numpy / scipy arithmetic: tight, but not bit-exact across BLAS builds.
      assert got == pytest.approx(want, rel=1e-9, abs=1e-12), f"{path}: {got} != {want}"
  else:
    raise AssertionError(f"{path}: unexpected golden type {type(want)}")


def test_outputs_match_golden():
  got = json.loads(json.dumps(compute_outputs(), allow_nan=True))
  if os.environ.get(REGEN_ENV):
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    tmp = GOLDEN.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(got, indent=1, sort_keys=True, allow_nan=True) + "\n")
    os.replace(tmp, GOLDEN)
  assert GOLDEN.exists(), f"missing {GOLDEN}; run with {REGEN_ENV}=1 to write it"
  want = json.loads(GOLDEN.read_text())
  _compare(got, want)


def test_comparison_catches_a_changed_number():
  want = {"a": [0.25, float("nan"), {"b": 3}], "s": "x"}
  _compare(json.loads(json.dumps(want)), want)
  for bad in (
    {"a": [0.2500001, float("nan"), {"b": 3}], "s": "x"},
    {"a": [0.25, 0.0, {"b": 3}], "s": "x"},
    {"a": [0.25, float("nan"), {"b": 4}], "s": "x"},
    {"a": [0.25, float("nan"), {"b": 3}], "s": "y"},
  ):
    with pytest.raises(AssertionError):
      _compare(bad, want)


def test_synthetic_population_is_sensible():
  out = compute_outputs()
  top1 = {v: np.mean(out["accuracy"][v]["top1"]) for v in VARIANTS}
  assert top1["dense"] > top1["prune_0.5"] > top1["prune_0.9"]
  assert out["prune_0.9"]["pie"]["count"] > out["prune_0.5"]["pie"]["count"] > 0
