"""The 002 reproduction: the per-network table and α recomputed by hand; the page is the CSV's."""

import os
import sys

import numpy as np
import pandas as pd
import pytest

from tf_forget.report import collect
from tf_forget.report import reproduction_002

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
PAGE_DIR = os.path.join(ROOT, "docs", "reproductions")
sys.path.insert(0, os.path.join(ROOT, "tools"))
import reproduce_002

C = 10


def _predictions(top1, labels, members):
  top1 = np.asarray(top1, np.int32)
  return collect.SplitPredictions(
    np.asarray(members, np.int64),
    np.arange(len(labels)),
    np.asarray(labels, np.int64),
    top1[:, :, None],
    tuple({} for _ in members),
  )


def _run(seed=0, parents=4, n=200):
  """A hand-made run: parents and their children at ratios 2 and 50, children paired by k."""
  rng = np.random.default_rng(seed)
  labels = np.arange(n) % C
  preds = {}
  for ratio, wrong in ((1, 0.05), (2, 0.07), (50, 0.3)):
    top1 = np.where(rng.random((parents, n)) < wrong, rng.integers(0, C, (parents, n)), labels)
    preds[reproduction_002.variant_of(ratio)] = {"test": _predictions(top1, labels, range(parents))}
  pairing = {
    v: {"kind": "parent", "pairs": [(k, k) for k in range(parents)]} for v in preds if v != "dense"
  }
  return collect.Run(
    run_dir="",
    dataset_name="mnist",
    dataset_options={},
    num_classes=C,
    class_names=tuple(map(str, range(C))),
    eval_split="test",
    protected_attributes=(),
    predictions=preds,
    attributes={},
    train_attribute_shares={},
    pairing=pairing,
  )


def _alpha_by_hand(before, after, labels):
  """002 §5 from its definitions: B̄^c = (R^c − A)/A, α = Σ_c B̄ B̄_t / Σ_c B̄²."""

  def nrb(top1):
    recall = np.array([np.mean(top1[labels == c] == c) for c in range(C)])
    acc = np.mean(top1 == labels)
    return (recall - acc) / acc

  x, y = nrb(before), nrb(after)
  return float((x * y).sum() / (x * x).sum())


def test_table_rows_and_alpha_equal_a_hand_computation():
  run = _run()
  table = reproduction_002.members_table(run, ratios=(2, 50))
  assert len(table) == 4 * 3 and list(table.columns[:3]) == ["model", "ratio", "accuracy"]
  labels = run.eval["dense"].labels
  for ratio in (2, 50):
    by_hand = [
      _alpha_by_hand(
        run.eval["dense"].top1[k], run.eval[reproduction_002.variant_of(ratio)].top1[k], labels
      )
      for k in range(4)
    ]
    np.testing.assert_allclose(reproduction_002.alphas(table, ratio), by_hand, rtol=1e-6)
    result = reproduction_002.compute(table)
    assert result["alpha"][ratio]["mean"] == pytest.approx(np.mean(by_hand), rel=1e-9)
  # Table 11's recall variance: ddof 0 over the ten classes of each network, then the mean.
  parent = run.eval["dense"].top1[0]
  recall = [np.mean(parent[labels == c] == c) for c in range(C)]
  first = reproduction_002.compute(table)["recall_variance"][1]
  assert first["n"] == 4
  row = table[(table.model == 0) & (table.ratio == 1)]
  np.testing.assert_allclose(row[[f"recall_{c}" for c in range(C)]].to_numpy()[0], recall)


def test_where_a_published_value_lies():
  ours = {"mean": 0.5, "low": 0.4, "high": 0.6}
  assert reproduction_002._where(0.45, ours) == "inside our interval"
  assert reproduction_002._where(0.3, ours) == "below our interval by 0.1000"
  assert reproduction_002.p_text(0.0004) == "<0.001" and reproduction_002.p_text(0.0712) == "0.071"


def test_table3_decisions_compare_at_005():
  tests = pd.DataFrame(
    {"first": [2, 20], "second": [4, 50], "statistic": [-0.5, -6.0], "p_bonferroni": [1.0, 0.0001]}
  )
  rows = reproduction_002.test_rows({"ratio_tests": tests})
  assert rows == [
    ("2 vs 4", "0.389", "1.000", "-0.50", "yes"),
    ("20 vs 50", "<0.001", "<0.001", "-6.00", "yes"),
  ]


def test_the_committed_page_is_its_csvs_page():
  with open(os.path.join(PAGE_DIR, reproduce_002.PAGE)) as f:
    assert f.read() == reproduce_002.page_of(PAGE_DIR)


def test_a_parent_without_all_its_children_is_left_out_of_every_column():
  table = reproduction_002.members_table(_run(), ratios=(2, 50))
  partial = table[~((table.model == 3) & (table.ratio == 50))]
  result = reproduction_002.compute(partial)
  assert result["models"] == 3
  assert result["recall_variance"][1]["n"] == result["recall_variance"][2]["n"] == 3
  assert result["accuracy"]["mean"] == pytest.approx(
    table[(table.ratio == 1) & (table.model < 3)].accuracy.mean()
  )
