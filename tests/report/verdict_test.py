"""The verdict block's numbers (tf_forget/report/verdict.py) on the planted fake runs, and the
recommendation rule on hand-made tables.

Expected values come from the plants of tests/report/fake_run.py (its docstring), counted
here from the data set itself, and the intervals from the t formula with `scipy.stats.t.ppf`
(a second method: verdict.py goes through `ttest_rel` / `ttest_ind`).
"""

import types

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from tests.report import fake_run
from tf_forget.data import registry
from tf_forget.policy import gate_inputs
from tf_forget.policy import gates as gates_lib
from tf_forget.report import collect
from tf_forget.report import verdict
from tf_forget.report import verdict_cells
from tf_forget.report.units import registry as unit_registry
from tf_forget.report.units import verdict as verdict_unit
from tf_forget.stats import accuracy


def _verdict(run_dir, dataset, gates=None):
  run = collect.load_run(run_dir, dataset_name=dataset)
  m = unit_registry.core(run)
  frame, rec = verdict.compute(run, m, gates)
  return run, frame.set_index("variant"), rec


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
  d = str(tmp_path_factory.mktemp("digits"))
  fake_run.make_digits_run(d, corrupted=False)
  return d


@pytest.fixture(scope="module")
def biased(tmp_path_factory):
  d = str(tmp_path_factory.mktemp("biased"))
  fake_run.make_biased_run(d)
  return d


def test_worst_class_is_the_planted_one(digits):
  _, frame, _ = _verdict(digits, "digits")
  row = frame.loc["prune_0.9"]
  labels = registry.get("digits").load("test").labels
  assert row["worst_class"] == "3" and row["worst_class_n"] == np.sum(labels == 3)
  # 20 of class 3's examples wrong in every pruned member, the same noise elsewhere.
  assert row["worst_class_change"] == pytest.approx(-20 / np.sum(labels == 3))
  assert row["worst_class_low"] <= row["worst_class_change"] <= row["worst_class_high"]
  assert row["worst_class_p"] < 1e-4 and row["worst_class_p_bh"] >= row["worst_class_p"]
  assert row["pairing"] == "independent" and row["top1_change"] == pytest.approx(0, abs=1e-12)
  assert row["pie_count"] == 40


def test_paired_interval_matches_the_t_formula(digits):
  run, frame, _ = _verdict(digits, "digits")
  row = frame.loc["full_int8"]
  assert row["pairing"] == "paired"
  assert row["top1_change"] == row["top1_low"] == row["top1_high"] == 0  # identical files
  # prune_0.9 vs dense as if paired: differences per member by hand, t formula.
  p0, pt = run.eval["dense"], run.eval["prune_0.9"]
  d = (
    accuracy.per_class_recall(pt.top1, pt.labels, 10)[:, 3]
    - accuracy.per_class_recall(p0.top1, p0.labels, 10)[:, 3]
  )
  out = verdict.intervals.mean_difference_interval(
    accuracy.per_class_recall(p0.top1, p0.labels, 10)[:, 3],
    accuracy.per_class_recall(pt.top1, pt.labels, 10)[:, 3],
    paired=True,
  )
  assert out["low"] == out["high"] == pytest.approx(d.mean())  # constant differences


def test_welch_interval_matches_the_t_formula(biased):
  run, frame, _ = _verdict(biased, "digits_biased")
  row = frame.loc["prune_0.9"]
  a0 = accuracy.top1_accuracy(run.eval["dense"].top1, run.eval["dense"].labels)
  at = accuracy.top1_accuracy(run.eval["prune_0.9"].top1, run.eval["prune_0.9"].labels)
  v0, vt = a0.var(ddof=1) / a0.size, at.var(ddof=1) / at.size
  df = (v0 + vt) ** 2 / (v0**2 / (a0.size - 1) + vt**2 / (at.size - 1))
  half = stats.t.ppf(0.975, df) * np.sqrt(v0 + vt)
  assert row["top1_change"] == pytest.approx(at.mean() - a0.mean())
  assert row["top1_low"] == pytest.approx(at.mean() - a0.mean() - half)
  assert row["top1_high"] == pytest.approx(at.mean() - a0.mean() + half)


def test_worst_subgroup_is_inside_the_planted_group(biased):
  _, frame, rec = _verdict(biased, "digits_biased")
  row = frame.loc["prune_0.9"]
  test = registry.get("digits_biased").load("test")
  assert row["worst_subgroup"].startswith("Inverted=1")
  mask = np.asarray(test.attributes["Inverted"], bool) & (test.labels == 1)
  if "Faint=1" in row["worst_subgroup"]:
    mask &= np.asarray(test.attributes["Faint"], bool)
  elif "Faint=0" in row["worst_subgroup"]:
    mask &= ~np.asarray(test.attributes["Faint"], bool)
  assert row["worst_subgroup_n"] == mask.sum()
  assert row["worst_subgroup_fnr_change"] > 0.8  # every planted positive missed
  assert frame.loc["full_int8", "worst_subgroup_fnr_change"] == 0
  # prune_0.9 loses ~10 points: over the default 1-point budget; full_int8 is recommended.
  assert frame.loc["prune_0.9", "verdict"] == "over budget"
  assert rec["variant"] == "full_int8" and frame.loc["full_int8", "verdict"] == "recommended"


def test_gate_failure_shows_with_its_reason(digits):
  _, frame, rec = _verdict(digits, "digits", {"max_significant_classes": 0})
  assert frame.loc["prune_0.9", "verdict"] == "fail"
  assert "classes change significantly" in frame.loc["prune_0.9", "reason"]
  assert rec["variant"] == "full_int8"
  assert "--max_accuracy_drop" in rec["rule"] and "default budget" in rec["rule"]
  assert any("K = 5" in c for c in rec["caveats"])


def _frame(rows):
  base = {
    "members": 30,
    "top1_low": -0.001,
    "top1_high": 0.001,
    "pairing": "paired",
    "gate": "pass",
    "reasons": "",
    "size_vs_dense": np.nan,
  }
  dense = {
    "variant": "dense",
    "file": "deploy/dense/0.tflite",
    "size_bytes": 1000.0,
    "top1": 0.9,
    "top1_change": 0.0,
    "verdict": "baseline",
    "reason": "",
    "members": 30,
  }
  return pd.DataFrame(
    [dense] + [dict(base, file=f"deploy/{r['variant']}/0.tflite", **r) for r in rows]
  )


def test_rule_smallest_passing_file_and_size_ties():
  frame = _frame(
    [
      {"variant": "a", "size_bytes": 500.0, "top1": 0.895, "top1_change": -0.005},
      {"variant": "b", "size_bytes": 503.0, "top1": 0.899, "top1_change": -0.001},  # within 1%
      {"variant": "c", "size_bytes": 100.0, "top1": 0.80, "top1_change": -0.10},  # over budget
      {
        "variant": "d",
        "size_bytes": 50.0,
        "top1": 0.9,
        "top1_change": 0.0,
        "gate": "fail",
        "reasons": "x",
      },
    ]
  )
  rec = verdict.recommend(frame, gates_lib.Gates())
  assert rec["variant"] == "b" and rec["file"] == "deploy/b/0.tflite"
  assert list(frame.verdict) == ["baseline", "pass", "recommended", "over budget", "fail"]
  # a 20-point budget lets c in: it is the smallest passing file.
  frame = _frame(
    [
      {"variant": "c", "size_bytes": 100.0, "top1": 0.8, "top1_change": -0.1},
      {"variant": "a", "size_bytes": 500.0, "top1": 0.9, "top1_change": 0.0},
    ]
  )
  rec = verdict.recommend(frame, gates_lib.Gates(max_accuracy_drop=0.2))
  assert rec["variant"] == "c" and "(--max_accuracy_drop)" in rec["rule"]


def test_rule_without_candidates_ships_dense_and_without_sizes_by_accuracy():
  frame = _frame([{"variant": "c", "size_bytes": 100.0, "top1": 0.8, "top1_change": -0.1}])
  assert verdict.recommend(frame, gates_lib.Gates())["variant"] == "dense"
  frame = _frame(
    [
      {"variant": "a", "size_bytes": np.nan, "top1": 0.895, "top1_change": -0.005},
      {"variant": "b", "size_bytes": np.nan, "top1": 0.899, "top1_change": -0.001},
    ]
  )
  frame.loc[0, "size_bytes"] = np.nan
  rec = verdict.recommend(frame, gates_lib.Gates())
  assert rec["variant"] == "b" and "No file sizes" in rec["rule"]


def test_wide_interval_and_small_k_caveats():
  frame = _frame(
    [
      {
        "variant": "a",
        "size_bytes": 10.0,
        "top1": 0.9,
        "top1_change": -0.005,
        "top1_low": -0.03,
        "members": 3,
      }
    ]
  )
  rec = verdict.recommend(frame, gates_lib.Gates())
  assert rec["variant"] == "a"
  assert any("reaches -3.00 pt" in c for c in rec["caveats"])
  assert any("K = 3" in c for c in rec["caveats"])


def _welch(a, b):
  """(low, high) of mean(b) − mean(a) by the Welch t formula (95%)."""
  va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
  df = (va + vb) ** 2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1))
  half = stats.t.ppf(0.975, df) * np.sqrt(va + vb)
  return b.mean() - a.mean() - half, b.mean() - a.mean() + half


def test_class_and_subgroup_intervals_by_the_t_formula(biased):
  """The verdict's worst class / subgroup intervals, recomputed from the predictions."""
  run, frame, _ = _verdict(biased, "digits_biased")
  row = frame.loc["prune_0.9"]
  p0, pt = run.eval["dense"], run.eval["prune_0.9"]
  c = list(run.class_names).index(row["worst_class"])
  low, high = _welch(
    accuracy.per_class_recall(p0.top1, p0.labels, 2)[:, c],
    accuracy.per_class_recall(pt.top1, pt.labels, 2)[:, c],
  )
  assert row["worst_class_low"] == pytest.approx(low)
  assert row["worst_class_high"] == pytest.approx(high)
  test = registry.get("digits_biased").load("test")
  mask = np.ones(test.labels.size, bool)
  for part in row["worst_subgroup"].split("&"):
    name, value = part.split("=")
    mask &= np.asarray(test.attributes[name], bool) == bool(int(value))
  pos = mask & (test.labels == 1)
  fnr = lambda top1: np.array([(t[pos] != 1).mean() for t in top1[:10]])
  low, high = _welch(fnr(p0.top1), fnr(pt.top1))
  assert row["worst_subgroup_low"] == pytest.approx(low)
  assert row["worst_subgroup_high"] == pytest.approx(min(high, 1.0))  # clipped to +100 pt
  assert row["worst_subgroup_low"] <= row["worst_subgroup_fnr_change"] <= row["worst_subgroup_high"]


def test_robustness_change_has_its_interval(tmp_path):
  """fake_run's gaussian_noise@s: dense wrong on 0.1·s·N + k examples, prune_0.9 on
  0.12·s·N + k, so its change averaged over s = 1..5 is −10·(1+…+5)/5/500 = −0.06 exactly."""
  fake_run.make_digits_run(str(tmp_path))
  run = collect.load_run(str(tmp_path), dataset_name="digits")
  t = unit_registry.core(run).tables["robustness"].set_index(["variant", "corruption"])
  row = t.loc[("prune_0.9", "gaussian_noise")]
  assert row["top1_change"] == pytest.approx(-0.06)
  assert row["top1_change_low"] <= -0.06 <= row["top1_change_high"]
  assert np.isnan(t.loc[("dense", "gaussian_noise"), "top1_change_low"])


def _deployment():
  """A `deployment` table as `deployment.table` builds it from encodings.json."""
  return pd.DataFrame(
    [
      {"variant": "dense", "encoding": "plain", "reason": "no sparse-encoded twin"},
      {"variant": "full_int8", "encoding": "plain", "reason": "no sparse-encoded twin"},
      {
        "variant": "prune_0.9",
        "encoding": "plain",
        "reason": "sparse file is 1.90x slower than plain (ratio interval 1.70–2.10x > max 1.5x)",
      },
      {"variant": "prune_0.5", "encoding": "sparse", "reason": "sparse file 0.5x ..."},
      {
        "variant": "prune_0.9+full_int8",
        "encoding": "plain",
        "reason": "sparse file disagrees with its plain twin: top-1 differs on 3 of 150 examples",
      },
    ]
  )


def test_why_a_pruned_variant_ships_plain_comes_from_the_recorded_reason():
  deploy = _deployment()
  assert verdict.ships_plain_why(deploy, "prune_0.9") == (
    "ships plain: sparse file is 1.90x slower than plain (ratio interval 1.70–2.10x > max 1.5x)"
  )
  assert verdict.ships_plain_why(deploy, "prune_0.9+full_int8") == (
    "ships plain: sparse file disagrees with its plain twin: top-1 differs on 3 of 150 examples"
  )
  # Not said for a variant that ships sparse, an unpruned one, or without a decision.
  assert verdict.ships_plain_why(deploy, "prune_0.5") == ""
  assert verdict.ships_plain_why(deploy, "full_int8") == ""
  assert verdict.ships_plain_why(deploy, "prune_0.75") == ""
  assert verdict.ships_plain_why(None, "prune_0.9") == ""


def test_verdict_table_shows_why_a_pruned_variant_ships_plain(digits):
  _, frame, _ = _verdict(digits, "digits")
  frame = frame.reset_index()
  frame["encoding"] = "plain"
  shown = verdict_unit.verdict_rows(frame, _deployment()).set_index("file to ship")
  assert (
    "deploy/prune_0.9/0.tflite (plain) — ships plain: sparse file is 1.90x slower than "
    "plain (ratio interval 1.70–2.10x > max 1.5x)"
  ) in shown.index
  assert "deploy/full_int8/0.tflite (plain)" in shown.index
  # Without the deployment table the cell is the file alone, as before.
  plain = verdict_unit.verdict_rows(frame)["file to ship"]
  assert "deploy/prune_0.9/0.tflite (plain)" in plain.values


def test_the_two_designs_share_one_interface():
  # K >= 2 and K = 1 answer the same questions of the verdict table (`verdict_cells.design`).
  methods = {"top1", "counts", "worst_class", "forgot", "worst_subgroup", "statement"}
  for design in (verdict_cells.POPULATION, verdict_cells.SINGLE_NETWORK):
    assert methods <= {m for m in dir(design) if not m.startswith("_")}
  k1 = types.SimpleNamespace(config={gate_inputs.K1_SETTINGS_KEY: {"reference": "dense/0"}})
  assert verdict_cells.design(k1) is verdict_cells.SINGLE_NETWORK
  assert verdict_cells.design(types.SimpleNamespace(config={})) is verdict_cells.POPULATION
  assert verdict_cells.POPULATION.counts({"significant_classes": 2}) == {}
  assert verdict_cells.SINGLE_NETWORK.counts({"significant_classes": 2}) == {
    "significant_classes": 2
  }
