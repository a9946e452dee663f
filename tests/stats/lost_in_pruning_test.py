"""003 prune potential, excess error and noise similarity (docs/spec.md §6.6-6.7, §7.2)."""

import numpy as np
import pytest

from tf_forget.stats import lost_in_pruning as lip

# 003 Table 2: (train-distribution potential, test-distribution potential, printed Diff.) in %.
TABLE2 = {
  ("ResNet20", "WT"): (84.9, 66.7, -18.2),
  ("ResNet20", "FT"): (65.0, 55.3, -9.7),
  ("VGG16", "WT"): (98.0, 80.9, -17.1),
  ("VGG16", "FT"): (85.4, 66.3, -19.1),
  ("WRN16-8", "WT"): (98.0, 95.7, -2.3),
  ("WRN16-8", "FT"): (86.2, 75.7, -10.5),
  ("ResNet18", "WT"): (85.8, 63.6, -22.2),
  ("ResNet18", "FT"): (13.7, 13.5, -0.2),
}


@pytest.mark.parametrize("row", sorted(TABLE2))
def test_003_table2_diff_is_test_minus_train(row):
  """003 Table 2 "Diff." = Test − Train (docs/spec.md §7.2); inputs and Diff. printed to 0.1."""
  train, test, printed = TABLE2[row]
  diff = lip.prune_potential_difference(train, test)
  assert abs(diff - printed) <= 0.05 + 0.05 + 0.05 + 1e-9


def test_prune_potential_definition1_by_hand():
  ratios = np.array([0.3, 0.5, 0.7, 0.9])
  # parent error 10%: ratios with error <= 10.5% qualify; the largest one wins, even if a
  # smaller ratio failed (Definition 1 maximises over all masks that meet the constraint).
  errors = np.array(
    [
      [0.10, 0.104, 0.12, 0.105],  # 0.9 qualifies (boundary, <=)
      [0.10, 0.104, 0.11, 0.2],  # 0.5
      [0.2, 0.2, 0.2, 0.2],
    ]
  )  # none -> 0
  parent = np.array([0.10, 0.10, 0.10])
  np.testing.assert_allclose(lip.prune_potential(ratios, errors, parent), [0.9, 0.5, 0.0])
  np.testing.assert_allclose(
    lip.prune_potential(ratios, errors, parent, delta=0.0), [0.3, 0.3, 0.0]
  )


def test_prune_potential_exactly_parent_plus_delta_qualifies_from_accuracy_floats():
  """docs/spec.md §6.6 boundary: parent 0 / 10,000 errors, pruned 50 / 10,000 -> exactly parent + δ.

  Errors as the report computes them, 1 − accuracy; 1 − 0.995 = 0.0050000000000000044 is
  above the float 0 + 0.005, so a float comparison rejected the network.
  """
  ratios = np.array([0.5, 0.9])
  parent = 1 - 10000 / 10000
  at_delta = 1 - 9950 / 10000  # 50 errors
  above = 1 - 9949 / 10000  # 51 errors
  assert at_delta > parent + lip.DELTA  # precondition: the float comparison fails here
  errors = np.array([[0.0, at_delta], [at_delta, above], [above, above]])
  np.testing.assert_array_equal(lip.prune_potential(ratios, errors, parent), [0.9, 0.5, 0.0])
  np.testing.assert_array_equal(
    lip.prune_potential(ratios, errors, parent, num_examples=10000), [0.9, 0.5, 0.0]
  )
  np.testing.assert_array_equal(
    lip.prune_potential(ratios, errors, np.full(3, parent), delta="0.005"), [0.9, 0.5, 0.0]
  )


def test_prune_potential_exact_boundary_from_counts():
  """The same boundary from error counts k / n; also with a nonzero parent error."""
  n = 10000
  ratios = np.array([0.3, 0.7])
  errors = np.array([[0, 50], [50, 51]]) / n
  np.testing.assert_array_equal(
    lip.prune_potential(ratios, errors, 0.0, num_examples=n), [0.7, 0.3]
  )
  # Parent 266 errors: 316 qualifies, 317 does not (0.0316 > 0.0266 + 0.005 in floats).
  errors = np.array([[316, 317]]) / n
  assert errors[0, 0] > 266 / n + lip.DELTA  # precondition
  for kwargs in ({}, {"num_examples": n}):
    np.testing.assert_array_equal(lip.prune_potential(ratios, errors, [266 / n], **kwargs), [0.3])
  # 003's noise protocol (1000 images x 100 draws): δ·n = 500 errors.
  n = 100_000
  errors = 1 - np.array([[97_000, 96_999]]) / n
  for kwargs in ({}, {"num_examples": n}):
    np.testing.assert_array_equal(
      lip.prune_potential(ratios, errors, [1 - 97_500 / n], **kwargs), [0.3]
    )


def test_prune_potential_float_path_matches_counts_up_to_max_denominator():
  """Without num_examples, float64 errors k/n (as 1 − accuracy) are recovered exactly for
  n ≤ MAX_DENOMINATOR: the decision at k_parent + ⌊δ·n⌋ and one error more equals the
  integer one."""
  rng = np.random.default_rng(0)
  ratios = np.array([0.5, 0.9])
  for n in list(rng.integers(1, lip.MAX_DENOMINATOR, 200)) + [lip.MAX_DENOMINATOR]:
    n = int(n)
    k_parent = int(rng.integers(0, n - n // 200))
    k_edge = k_parent + (n // 200)  # ⌊0.005·n⌋ = ⌊n / 200⌋
    errors = np.array([1 - (n - k_edge) / n, 1 - (n - k_edge - 1) / n])
    parent = 1 - (n - k_parent) / n
    assert lip.prune_potential(ratios, errors, parent) == 0.5, (n, k_parent)
    assert lip.prune_potential(ratios, errors, parent, num_examples=n) == 0.5, (n, k_parent)


def test_prune_potential_num_examples_must_fit_the_errors():
  with pytest.raises(lip.validate.StatsInputError, match="whole error counts"):
    lip.prune_potential([0.5], [0.0051], 0.0, num_examples=1000)
  with pytest.raises(lip.validate.StatsInputError, match="num_examples"):
    lip.prune_potential([0.5], [0.005], 0.0, num_examples=0)
  with pytest.raises(lip.validate.StatsInputError, match="num_examples"):
    lip.prune_potential([0.5], [0.005], 0.0, num_examples=1000.0)
  with pytest.raises(lip.validate.StatsInputError, match="delta"):
    lip.prune_potential([0.5], [0.005], 0.0, delta=float("nan"))


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
  np.testing.assert_allclose(lip.excess_error([[0.1, 0.2], [0.3, 0.3]], [0.0, 0.1]), [0.15, 0.2])


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
