"""The ship rule (tf_forget/policy/ship_rule.py) on hand-made verdict tables: the target, the
latency bound on the ratio's interquartile range, the front, and the paired "as good"."""

import numpy as np
import pandas as pd
import pytest

from tf_forget.policy import file_pairs
from tf_forget.policy import gates as gates_lib
from tf_forget.policy import ship_rule
from tf_forget.report import user_verdict
from tf_forget.report import verdict
from tf_forget.report import verdict_cells


def _frame(rows):
  base = {
    "members": 1,
    "top1": 0.98,
    "top1_change": 0.0,
    "top1_low": -0.001,
    "top1_high": 0.001,
    "pairing": "paired examples",
    "gate": "pass",
    "reasons": "",
    "size_vs_dense": np.nan,
    "latency_batch": 64,
  }
  dense = dict(
    base, variant="dense", size_bytes=100000.0, gzip_bytes=90000.0, verdict="baseline", reason=""
  )
  return pd.DataFrame(
    [dense] + [dict(base, file=f"deploy/{r['variant']}/0.tflite", **r) for r in rows]
  ).assign(file=lambda f: "deploy/" + f.variant + "/0.tflite")


def _pairs(flips, n=10000):
  """Each variant flips its first `flips[v]` examples (the reference right on all)."""
  share = {"dense": np.zeros(n)}
  for v, f in flips.items():
    share[v] = (np.arange(n) < f).astype(float)
  return file_pairs.Pairs(
    n,
    share,
    {v: 1 - s for v, s in share.items()},
    {v: (s > 0).astype(int)[None] for v, s in share.items()},
    {v: [0] for v in share},
  )


def test_difference_is_the_paired_t_interval():
  """3 flips of 500 against none: mean 0.006, t interval 0.006 ± t(0.975, 499)·s/√500."""
  d = file_pairs.difference(np.r_[np.ones(3), np.zeros(497)])
  s = np.std(np.r_[np.ones(3), np.zeros(497)], ddof=1)
  half = 1.9647 * s / np.sqrt(500)  # t(0.975, 499)
  assert d.mean == pytest.approx(0.006) and d.count == pytest.approx(3)
  assert (d.low, d.high) == pytest.approx((0.006 - half, 0.006 + half), abs=1e-5)
  assert not d.significant()
  assert file_pairs.difference(np.zeros(10)) == file_pairs.Difference(0, 0, 0, 0)


def test_a_slow_file_is_too_slow_only_when_its_lower_quartile_is_past_the_bound():
  row = {
    "latency_vs_dense": 2.4,
    "latency_vs_dense_low": 1.9,
    "latency_vs_dense_high": 2.6,
    "latency_batch": 64,
    "runtime": "XNNPACK 3/3 ops",
  }
  assert ship_rule.too_slow(row, 2.0) == ""  # the spread reaches under 2x: not shown slower
  row.update(
    latency_batch_vs_dense=9.7,
    latency_batch_vs_dense_low=9.1,
    latency_batch_vs_dense_high=10.2,
    runtime="reference kernels, 0/5 ops delegated",
  )
  assert ship_rule.too_slow(row, 2.0) == (
    "9.7x the float reference's latency at batch 64 (interquartile 9.1-10.2x over the "
    "timing rounds, this machine), over the --max_latency_ratio of 2x: reference kernels, "
    "0/5 ops delegated"
  )


def test_target_then_gates_budget_and_speed_decide_eligibility():
  frame = _frame(
    [
      {
        "variant": "dyn",
        "size_bytes": 25000.0,
        "runs_on_target": False,
        "target_reason": "dynamic-range int8: its activations are float",
        "gate": "fail",
        "reasons": "x",
      },
      {
        "variant": "x16",
        "size_bytes": 26000.0,
        "runs_on_target": True,
        "latency_vs_dense": 6.0,
        "latency_vs_dense_low": 5.8,
        "latency_vs_dense_high": 6.9,
      },
      {
        "variant": "u8",
        "size_bytes": 25500.0,
        "runs_on_target": True,
        "latency_vs_dense": 0.9,
        "latency_vs_dense_low": 0.8,
        "latency_vs_dense_high": 1.0,
      },
    ]
  )
  settings = ship_rule.Settings(target="integer_only")
  rec = verdict.recommend(frame, gates_lib.Gates(), settings, _pairs({"dyn": 4, "x16": 4, "u8": 4}))
  v = frame.set_index("variant")
  assert v.loc["dyn", "verdict"] == "not for target"  # before its failed gate
  assert v.loc["dyn", "reason"] == (
    "integer_only cannot run it: dynamic-range int8: its activations are float"
  )
  assert v.loc["x16", "verdict"] == "too slow" and rec["variant"] == "u8"
  assert any("not the integer_only target's" in c for c in rec["caveats"])


def test_the_front_names_a_dominating_file_on_it():
  """c is beaten by b (smaller, as many flips), b by a (smaller still): both are named as
  dominated by a, the front's file."""
  frame = _frame(
    [
      {"variant": "a", "size_bytes": 20000.0},
      {"variant": "b", "size_bytes": 22000.0},
      {"variant": "c", "size_bytes": 24000.0},
      {"variant": "d", "size_bytes": 30000.0},
    ]
  )
  rec = verdict.recommend(
    frame, gates_lib.Gates(), None, _pairs({"a": 50, "b": 50, "c": 50, "d": 0})
  )
  assert rec["front"] == ["a", "d"] and rec["variant"] == "a"
  assert rec["front_note"] == (
    "Front (size in bytes × flips × latency): a, d; dominated: b (by a), c (by a)."
  )
  v = frame.set_index("variant")
  assert v.loc["b", "reason"] == "a is as good and smaller (19.5 vs 21.5 KiB)"
  (gives,) = rec["gives_up"]
  assert gives.startswith("a flips 50 more test examples than d (+0.50 pt") and "1.50x" in gives


def test_the_other_size_measure_is_named_only_when_it_changes_the_choice_clearly():
  frame = _frame(
    [
      {"variant": "dyn", "size_bytes": 24000.0, "gzip_bytes": 19000.0},
      {"variant": "pruned", "size_bytes": 24100.0, "gzip_bytes": 8000.0},
    ]
  )
  rec = verdict.recommend(frame, gates_lib.Gates(), None, _pairs({"dyn": 8, "pruned": 9}))
  assert rec["variant"] == "dyn"
  assert rec["size_note"].startswith(
    "Weighed by gzip size (the download), the rule would "
    "choose pruned (7.8 KiB against 18.6 KiB for dyn)."
  )
  frame = _frame(
    [
      {"variant": "dyn", "size_bytes": 24000.0, "gzip_bytes": 19000.0},
      {"variant": "pruned", "size_bytes": 24100.0, "gzip_bytes": 8000.0},
    ]
  )
  rec = verdict.recommend(
    frame, gates_lib.Gates(), ship_rule.Settings(size="gzip"), _pairs({"dyn": 8, "pruned": 9})
  )
  assert rec["variant"] == "pruned" and "gzip size (the download)" in rec["rule"]
  assert "size_note" not in rec  # by bytes dyn is 0.4% smaller: the same size (1%)


def test_forgotten_classes_and_subgroups_in_words():
  """The classes and (K = 1) protected subgroups whose change is significant, in words."""
  classes = pd.DataFrame(
    {
      "variant": ["q"] * 4,
      "class_name": ["a", "b", "c", "d"],
      "change": [-0.0205, 0.011, -0.3, 0.0],
      "significant": [1, 1, 0, 0],
    }
  )
  changes = verdict_cells.significant_changes(classes, "q", True)
  assert changes == [("a", -0.0205), ("b", 0.011)]
  groups = pd.DataFrame(
    {
      "variant": ["q"] * 3,
      "measure": ["fnr", "fnr", "fpr"],
      "subgroup": ["Male=1", "Male=0", "Male=1"],
      "change": [0.04, 0.01, 0.05],
      "low": [0.01, -0.02, 0.02],
      "high": [0.07, 0.04, 0.08],
    }
  )
  subgroups = verdict_cells.significant_subgroups(groups, "q")
  assert subgroups == [("Male=1", 0.04)]  # the FPR row and the interval around 0 left out
  assert verdict_cells.forgot_words(changes, subgroups) == (
    "2 classes changed significantly: a -2.05 pt, b +1.10 pt; FNR changed significantly in "
    "1 subgroup: Male=1 +4.00 pt"
  )
  assert verdict_cells.forgot_words([]) == "no class changed significantly"


def test_under_gzip_a_users_file_is_weighed_and_told_by_its_gzip_size():
  """Same bytes, gzip 19.0 vs 7.9 KiB: the sentence gives the gzip ratio, not the bytes'."""
  frame = _frame(
    [
      {"variant": "user_dyn", "size_bytes": 24200.0, "gzip_bytes": 19456.0},
      {"variant": "user_clustered", "size_bytes": 24200.0, "gzip_bytes": 8090.0},
    ]
  )
  pairs = _pairs({"user_dyn": 8, "user_clustered": 9})
  settings = ship_rule.Settings(size="gzip")
  rec = verdict.recommend(frame, gates_lib.Gates(), settings, pairs)
  assert rec["variant"] == "user_clustered"
  (clustered, dyn) = user_verdict.sentences(frame, rec, pairs, False, "gzip_bytes")[::-1]
  assert "not chosen: it is 2.40x the gzip size" in dyn, dyn
