"""003 prune potential, excess error and noise similarity (SPEC §6.6-6.7, §7.2)."""

import numpy as np
import pytest

from tf_forget.stats import lost_in_pruning as lip

# 003 Table 2: (train-distribution potential, test-distribution potential, printed Diff.) in %.
TABLE2 = {
    ("ResNet20", "WT"): (84.9, 66.7, -18.2), ("ResNet20", "FT"): (65.0, 55.3, -9.7),
    ("VGG16", "WT"): (98.0, 80.9, -17.1), ("VGG16", "FT"): (85.4, 66.3, -19.1),
    ("WRN16-8", "WT"): (98.0, 95.7, -2.3), ("WRN16-8", "FT"): (86.2, 75.7, -10.5),
    ("ResNet18", "WT"): (85.8, 63.6, -22.2), ("ResNet18", "FT"): (13.7, 13.5, -0.2),
}


@pytest.mark.parametrize("row", sorted(TABLE2))
def test_003_table2_diff_is_test_minus_train(row):
  """003 Table 2 "Diff." = Test − Train (SPEC §7.2); inputs and Diff. printed to 0.1."""
  train, test, printed = TABLE2[row]
  diff = lip.prune_potential_difference(train, test)
  assert abs(diff - printed) <= 0.05 + 0.05 + 0.05 + 1e-9


def test_prune_potential_definition1_by_hand():
  ratios = np.array([0.3, 0.5, 0.7, 0.9])
  # parent error 10%: ratios with error <= 10.5% qualify; the largest one wins, even if a
  # smaller ratio failed (Definition 1 maximises over all masks that meet the constraint).
  errors = np.array([[0.10, 0.104, 0.12, 0.105],   # 0.9 qualifies (boundary, <=)
                     [0.10, 0.104, 0.11, 0.2],     # 0.5
                     [0.2, 0.2, 0.2, 0.2]])        # none -> 0
  parent = np.array([0.10, 0.10, 0.10])
  np.testing.assert_allclose(lip.prune_potential(ratios, errors, parent), [0.9, 0.5, 0.0])
  np.testing.assert_allclose(lip.prune_potential(ratios, errors, parent, delta=0.0),
                             [0.3, 0.3, 0.0])


def test_prune_potential_summary_mean_sd_ddof0():
  pot = np.array([[0.8, 0.6, 0.0], [0.9, 0.7, 0.2]])  # reps x distributions
  out = lip.prune_potential_summary(pot)
  avgs = np.array([1.4 / 3, 1.8 / 3])
  assert out["average_mean"] == pytest.approx(avgs.mean())
  assert out["average_sd"] == pytest.approx(np.std(avgs))  # ddof = 0
  assert out["minimum_mean"] == pytest.approx(0.1)
  assert out["minimum_sd"] == pytest.approx(0.1)


def test_excess_error_and_difference():
  # Unpruned: nominal 5%, corruptions 10%, 20% -> e = 10%. Pruned: 6%, 14%, 28% -> ê = 15%.
  e = lip.excess_error([0.10, 0.20], 0.05)
  e_hat = lip.excess_error([0.14, 0.28], 0.06)
  assert e == pytest.approx(0.10) and e_hat == pytest.approx(0.15)
  assert lip.excess_error_difference(e_hat, e) == pytest.approx(0.05)
  np.testing.assert_allclose(lip.excess_error([[0.1, 0.2], [0.3, 0.3]], [0.0, 0.1]),
                             [0.15, 0.2])


def test_noise_similarity_by_hand():
  a = np.array([[[0.7, 0.3], [0.2, 0.8], [0.5, 0.5]]])  # [draws=1, examples=3, classes=2]
  b = np.array([[[0.6, 0.4], [0.9, 0.1], [0.5, 0.5]]])
  out = lip.noise_similarity(a, b)
  # argmax: a -> 0, 1, 0 (tie -> lowest); b -> 0, 0, 0 -> 2 of 3 match.
  assert out["matching"] == pytest.approx(2 / 3)
  want = (np.sqrt(0.02) + np.sqrt(0.98) + 0.0) / 3
  assert out["l2"] == pytest.approx(want)
  grid = lip.noise_similarity(np.stack([a, a]), np.stack([b, a]))  # [levels, draws, ex, C]
  np.testing.assert_allclose(grid["matching"], [2 / 3, 1.0])
  np.testing.assert_allclose(grid["l2"], [want, 0.0])


def test_matching_label_share():
  assert lip.matching_label_share([[1, 2, 3], [1, 0, 3]], [[1, 2, 0], [1, 0, 3]]) == 5 / 6
