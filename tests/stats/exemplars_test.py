"""Modal label, PIE / Modal CIE and accuracy on PIE / non-PIE / all (000 §2.3,
docs/spec.md §3.4-3.5)."""

import numpy as np
import pandas as pd

from tf_forget.stats import exemplars


def test_modal_label_tie_goes_to_largest_label():
  # Columns: clear mode 2; tie 0/3 -> 3; three-way tie 1/2/4 -> 4; all agree 0; tie 0/1 -> 1.
  preds = np.array(
    [
      [2, 0, 1, 0, 0],
      [2, 3, 2, 0, 1],
      [1, 0, 4, 0, 0],
      [2, 3, 1, 0, 1],
      [0, 1, 2, 0, 2],
      [3, 2, 4, 0, 3],
    ]
  )
  modal, tied = exemplars.modal_label(preds, num_classes=5)
  np.testing.assert_array_equal(modal, [2, 3, 4, 0, 1])
  np.testing.assert_array_equal(tied, [False, True, True, False, True])


def test_tie_rule_matches_pandas_mode_max():
  # docs/spec.md §3.4 cites the authors' code: pandas mode().max() per example.
  rng = np.random.default_rng(0)
  preds = rng.integers(0, 4, (6, 500))  # small populations over few classes: many ties
  modal, tied = exemplars.modal_label(preds, num_classes=4)
  want = np.array([pd.Series(col).mode().max() for col in preds.T])
  np.testing.assert_array_equal(modal, want)
  want_tied = np.array([len(pd.Series(col).mode()) > 1 for col in preds.T])
  np.testing.assert_array_equal(tied, want_tied)
  assert 0 < tied.sum() < 500


def test_label_counts_rows_sum_to_members():
  preds = np.array([[0, 1, 1], [0, 2, 1], [1, 2, 1]])
  counts = exemplars.label_counts(preds, num_classes=3)
  np.testing.assert_array_equal(counts, [[2, 1, 0], [0, 1, 2], [0, 3, 0]])


def test_sorted_modal_label_equals_count_table_version():
  # modal_label sorts each example's labels; modal_from_counts uses the [examples, C] table.
  rng = np.random.default_rng(1)
  for members, classes in ((7, 50), (30, 3), (2, 2), (1, 5), (10, 1000)):
    preds = rng.integers(0, classes, (members, 1000))
    sorted_version = exemplars.modal_label(preds, classes)
    table_version = exemplars.modal_from_counts(exemplars.label_counts(preds, classes))
    np.testing.assert_array_equal(sorted_version[0], table_version[0])
    np.testing.assert_array_equal(sorted_version[1], table_version[1])


def test_pie_flags_and_count():
  dense = np.array([[0, 1, 2, 1], [0, 1, 2, 2], [1, 1, 0, 2]])  # modal 0, 1, 2, 2
  pruned = np.array([[0, 2, 2, 1], [0, 2, 2, 1], [1, 1, 2, 1], [0, 1, 0, 1]])  # 0, 2|1->2, 2, 1
  out = exemplars.pruning_identified_exemplars(dense, pruned, num_classes=3)
  np.testing.assert_array_equal(out["pie"], [False, True, False, True])
  assert out["count"] == 2 and out["ties_0"] == 0 and out["ties_t"] == 1
  assert exemplars.modal_cie is exemplars.pruning_identified_exemplars


def test_accuracy_on_subsets_by_hand():
  labels = np.array([0, 1, 1, 0])
  dense = np.array([[0, 1, 0, 0], [0, 0, 1, 1]])
  pruned = np.array([[1, 1, 1, 0]])
  pie = np.array([False, True, True, False])
  df = exemplars.accuracy_on_subsets(dense, pruned, labels, pie).set_index(["population", "subset"])
  # Mean over members of the accuracy on the subset (docs/spec.md §3.5).
  assert df.loc[("dense", "pie"), "top1"] == 0.5  # examples 1, 2: (1 + 0 + 0 + 1) / 4
  assert df.loc[("dense", "non_pie"), "top1"] == 0.75  # examples 0, 3: (1 + 1 + 1 + 0) / 4
  assert df.loc[("dense", "all"), "top1"] == 0.625
  assert df.loc[("compressed", "pie"), "top1"] == 1.0
  assert df.loc[("compressed", "non_pie"), "top1"] == 0.5
  assert df.loc[("compressed", "all"), "n"] == 4
  assert np.isnan(df.loc[("dense", "all"), "topk"])


def test_sampled_subsets_are_seeded_and_bounded():
  rng = np.random.default_rng(2)
  labels = rng.integers(0, 3, 400)
  dense = rng.integers(0, 3, (4, 400))
  pruned = rng.integers(0, 3, (4, 400))
  pie = rng.random(400) < 0.2
  a = exemplars.accuracy_on_subsets(dense, pruned, labels, pie, sample_size=50, seed=7)
  b = exemplars.accuracy_on_subsets(dense, pruned, labels, pie, sample_size=50, seed=7)
  c = exemplars.accuracy_on_subsets(dense, pruned, labels, pie, sample_size=50, seed=8)
  pd.testing.assert_frame_equal(a, b)
  assert not a["top1"].equals(c["top1"])
  assert (a["n"] == 50).all()
  big = exemplars.accuracy_on_subsets(dense, pruned, labels, pie, sample_size=10_000)
  full = exemplars.accuracy_on_subsets(dense, pruned, labels, pie)
  pd.testing.assert_frame_equal(big, full)


def test_empty_subset_gives_nan():
  labels = np.array([0, 1])
  preds = np.array([[0, 1]])
  df = exemplars.accuracy_on_subsets(preds, preds, labels, np.zeros(2, bool))
  assert np.isnan(df.loc[df["subset"] == "pie", "top1"]).all()
