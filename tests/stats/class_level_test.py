"""000 §2.2 class-level measures (docs/spec.md §3.1-3.3): Welch test, eq. 3, Figure 2
differences."""

import warnings

import numpy as np
import pytest
from scipy import stats as sp_stats

from tf_forget.stats import class_level


def _random_population(rng, members, classes):
  recall = rng.uniform(0.3, 1.0, (members, classes))
  acc = recall.mean(axis=1) + rng.normal(0, 0.01, members)
  return recall, acc


@pytest.mark.parametrize("seed,k0,kt", [(0, 30, 30), (1, 10, 7), (2, 5, 12)])
def test_welch_equals_scipy_ttest_ind(seed, k0, kt):
  rng = np.random.default_rng(seed)
  r0, a0 = _random_population(rng, k0, 20)
  rt, at = _random_population(rng, kt, 20)
  table = class_level.welch_class_test(r0, a0, rt, at)
  for c in range(20):
    want = sp_stats.ttest_ind(rt[:, c] - at, r0[:, c] - a0, equal_var=False)
    np.testing.assert_allclose(table["p_value"][c], want.pvalue, rtol=1e-12)
    np.testing.assert_allclose(table["t_statistic"][c], want.statistic, rtol=1e-12)
  assert (table["significant"] == (table["p_value"] <= 0.05)).all()


def test_welch_by_hand_df2():
  """Two members each: S_0 = {0, 0.2}, S_t = {-0.2, 0}.

  t = (-0.1 - 0.1) / sqrt(0.02/2 + 0.02/2) = -sqrt(2); Welch df = 2 (equal variances, n = 2);
  Student t with 2 df has F(t) = 1/2 + t / (2 sqrt(2 + t^2)), so the two-tailed
  p = 1 - |t| / sqrt(2 + t^2) = 1 - sqrt(2)/2.
  """
  r0 = np.array([[0.5], [0.7]])
  a0 = np.array([0.5, 0.5])
  rt = np.array([[0.4], [0.4]])
  at = np.array([0.6, 0.4])
  table = class_level.welch_class_test(r0, a0, rt, at)
  np.testing.assert_allclose(table["t_statistic"][0], -np.sqrt(2), rtol=1e-12)
  np.testing.assert_allclose(table["p_value"][0], 1 - np.sqrt(2) / 2, rtol=1e-12)
  assert not table["significant"][0]


def test_welch_center_population_by_hand_df1():
  """center="population" subtracts the mean accuracy: S_t = {-0.1, -0.1}, S_0 = {0, 0.2}.

  t = -0.2 / sqrt(0 + 0.01) = -2; Welch df = 0.01^2 / (0.01^2 / 1) = 1 (Cauchy), so
  p = 1 - 2 arctan(2) / pi.
  """
  r0 = np.array([[0.5], [0.7]])
  a0 = np.array([0.5, 0.5])
  rt = np.array([[0.4], [0.4]])
  at = np.array([0.6, 0.4])
  table = class_level.welch_class_test(r0, a0, rt, at, center="population")
  np.testing.assert_allclose(table["t_statistic"][0], -2.0, rtol=1e-12)
  np.testing.assert_allclose(table["p_value"][0], 1 - 2 * np.arctan(2) / np.pi, rtol=1e-12)
  shifted = class_level.mean_shifted_class_recall(rt, at, center="population")
  np.testing.assert_allclose(shifted[:, 0], [-0.1, -0.1])


def test_zero_variance_both_gives_nan_not_significant():
  r = np.array([[0.5, 0.9], [0.5, 0.8], [0.5, 0.7]])
  a = np.array([0.5, 0.5, 0.5])
  rt = np.array([[0.6, 0.2], [0.6, 0.3], [0.6, 0.1]])  # class 0: both samples constant
  table = class_level.welch_class_test(r, a, rt, a)
  assert np.isnan(table["p_value"][0]) and not table["significant"][0]
  assert table["significant"][1]
  assert class_level.count_significant_classes(table) == 1


def test_benjamini_hochberg_by_hand_and_bonferroni():
  p = np.array([0.01, 0.04, 0.03, 0.5, np.nan])
  np.testing.assert_allclose(
    class_level.benjamini_hochberg(p), [0.04, 0.16 / 3, 0.16 / 3, 0.5, np.nan]
  )
  np.testing.assert_allclose(class_level.bonferroni(p), [0.04, 0.16, 0.12, 1.0, np.nan])


def test_correction_changes_significance():
  rng = np.random.default_rng(5)
  r0, a0 = _random_population(rng, 30, 50)
  rt, at = _random_population(rng, 30, 50)
  rt[:, :3] -= 0.4  # three classes lose recall
  plain = class_level.welch_class_test(r0, a0, rt, at)
  bonf = class_level.welch_class_test(r0, a0, rt, at, correction="bonferroni")
  bh = class_level.welch_class_test(r0, a0, rt, at, correction="bh")
  assert (bonf["p_adjusted"] >= plain["p_value"] - 1e-15).all()
  n_plain, n_bh, n_bonf = (class_level.count_significant_classes(t) for t in (plain, bh, bonf))
  assert n_plain >= n_bh >= n_bonf >= 3
  np.testing.assert_array_equal(plain["p_adjusted"], plain["p_value"])


def test_relative_recall_difference_eq3_by_hand():
  r0 = np.array([[0.5, 0.0], [1.0, 0.5]])
  rt = np.array([[0.25, 0.3], [0.5, 0.5]])
  ratio, excluded = class_level.relative_recall_difference(r0, rt)
  np.testing.assert_allclose(ratio, [0.5, 1.0])  # class 1: pair k=0 has beta_0 = 0, left out
  np.testing.assert_array_equal(excluded, [0, 1])
  ratio, excluded = class_level.relative_recall_difference(np.zeros((2, 1)), np.ones((2, 1)))
  assert np.isnan(ratio[0]) and excluded[0] == 2


def test_absolute_and_normalized_recall_difference_by_hand():
  r0 = np.array([[0.8, 0.6], [0.6, 0.6]])  # class means 0.7, 0.6
  a0 = np.array([0.7, 0.6])  # mean 0.65
  rt = np.array([[0.5, 0.7], [0.5, 0.5], [0.5, 0.6]])  # class means 0.5, 0.6
  at = np.array([0.6, 0.5, 0.55])  # mean 0.55
  np.testing.assert_allclose(
    class_level.absolute_recall_difference(r0, rt), [-0.2, 0.0], atol=1e-15
  )
  np.testing.assert_allclose(
    class_level.normalized_recall_difference(r0, a0, rt, at), [-0.1, 0.1], atol=1e-15
  )


def test_gained_lost_summary():
  d = np.array([0.1, -0.3, 0.05, -0.5, 0.2])
  s = np.array([True, True, True, True, False])
  out = class_level.gained_lost_summary(d, s)
  assert out == {
    "n_significant": 4,
    "n_gained": 2,
    "n_lost": 2,
    "mean_gain": pytest.approx(0.075),
    "mean_loss": pytest.approx(-0.4),
  }
  none = class_level.gained_lost_summary(d, np.zeros(5, bool))
  assert none["n_gained"] == 0 and np.isnan(none["mean_gain"])


def test_class_level_report_columns_and_unequal_populations():
  rng = np.random.default_rng(9)
  r0, a0 = _random_population(rng, 6, 4)
  rt, at = _random_population(rng, 5, 4)
  table = class_level.class_level_report(r0, a0, rt, at)
  assert table["relative_recall_difference"].isna().all()  # unpaired: eq. 3 undefined
  table = class_level.class_level_report(r0, a0, r0 * 0.9, a0)
  np.testing.assert_allclose(table["relative_recall_difference"], 0.9)


def _identical_members(recall_row, accuracy, members=5):
  """A population whose `members` members all have the same recall vector and accuracy."""
  return (
    np.tile(np.asarray(recall_row, dtype=np.float64), (members, 1)),
    np.full(members, accuracy),
  )


def _scipy_welch(a, b):
  """scipy's Welch test, without its precision warning on (nearly) constant samples."""
  with warnings.catch_warnings():
    warnings.simplefilter("ignore", RuntimeWarning)
    return sp_stats.ttest_ind(a, b, equal_var=False)


# Class 1: S = 0.8 - 0.6, five bitwise-identical copies whose np.var is ~7.7e-34, not 0.
_RECALL_ROW = [0.9, 0.8, 0.7, 0.6, 0.35, 0.1]


def test_identical_populations_constant_samples_decided_exactly():
  """docs/spec.md §3.1: every member identical in both populations -> every class p NaN, 0
  signif."""
  r0, a0 = _identical_members(_RECALL_ROW, 0.6)
  rt, at = _identical_members(_RECALL_ROW, 0.6)
  s = class_level.mean_shifted_class_recall(r0, a0)
  # Precondition: the samples are bitwise constant, yet np.var is not exactly 0 for some
  # class, so an `np.var(...) == 0` rule would let scipy test them.
  assert (s == s[0]).all()
  assert (np.var(s, axis=0) > 0).any()
  table = class_level.welch_class_test(r0, a0, rt, at)
  assert table["p_value"].isna().all()
  assert table["p_adjusted"].isna().all()
  assert not table["significant"].any()
  assert class_level.count_significant_classes(table) == 0
  assert table["t_statistic"].isna().all()  # constant and equal: t undefined


def test_two_different_constant_populations_are_not_significant():
  """Both samples constant but different: p NaN (docs/spec.md §3.1), where scipy alone gives
  p ~ 0."""
  r0, a0 = _identical_members(_RECALL_ROW, 0.6)
  rt, at = _identical_members(np.asarray(_RECALL_ROW) - 0.05, 0.6)
  s0 = class_level.mean_shifted_class_recall(r0, a0)
  st = class_level.mean_shifted_class_recall(rt, at)
  # Precondition: class 1 has a rounding-noise variance and scipy calls it significant.
  assert np.var(s0[:, 1]) > 0
  assert _scipy_welch(st[:, 1], s0[:, 1]).pvalue <= 0.05
  for correction in class_level.CORRECTIONS:
    table = class_level.welch_class_test(r0, a0, rt, at, correction=correction)
    assert table["p_value"].isna().all()
    assert class_level.count_significant_classes(table) == 0
    np.testing.assert_array_equal(table["t_statistic"], -np.inf)  # the class lost recall


def test_exactly_one_constant_sample_keeps_scipy_p():
  """One constant sample is not docs/spec.md §3.1's case: Welch reduces to a one-sample t-test of
  the other sample against the constant (df = K - 1), and scipy's finite p is kept."""
  rng = np.random.default_rng(3)
  r0, a0 = _identical_members(_RECALL_ROW, 0.6)
  rt = rng.uniform(0.3, 1.0, (7, len(_RECALL_ROW)))
  at = rt.mean(axis=1)
  s0 = class_level.mean_shifted_class_recall(r0, a0)
  st = class_level.mean_shifted_class_recall(rt, at)
  table = class_level.welch_class_test(r0, a0, rt, at)
  assert np.isfinite(table["p_value"]).all() and np.isfinite(table["t_statistic"]).all()
  for c in range(len(_RECALL_ROW)):
    want = _scipy_welch(st[:, c], s0[:, c])
    np.testing.assert_allclose(table["p_value"][c], want.pvalue, rtol=1e-12)
    one_sample = sp_stats.ttest_1samp(st[:, c], s0[0, c])
    np.testing.assert_allclose(table["p_value"][c], one_sample.pvalue, rtol=1e-9)
  # The other way round (compressed population constant) as well.
  table = class_level.welch_class_test(rt, at, r0, a0)
  assert np.isfinite(table["p_value"]).all()


def test_count_significant_classes_mixed_constant_and_varied_classes():
  """Only both-constant classes are dropped; the rest is scipy's Welch test, p <= 0.05."""
  rng = np.random.default_rng(11)
  k0, kt, classes = 8, 6, 12
  r0 = rng.uniform(0.3, 1.0, (k0, classes))
  rt = rng.uniform(0.3, 1.0, (kt, classes))
  rt[:, 4:8] -= 0.25  # some classes lose recall
  a0 = np.full(k0, 0.6)
  at = np.full(kt, 0.6)
  r0[:, :2] = 0.8  # classes 0, 1: both samples constant
  rt[:, 0] = 0.8
  rt[:, 1] = 0.75
  r0[:, 2] = 0.8  # class 2: only the baseline sample constant
  table = class_level.welch_class_test(r0, a0, rt, at)
  s0 = r0 - a0[:, None]
  st = rt - at[:, None]
  want = [_scipy_welch(st[:, c], s0[:, c]).pvalue <= 0.05 for c in range(2, classes)]
  assert table["p_value"][:2].isna().all() and np.isfinite(table["p_value"][2:]).all()
  np.testing.assert_array_equal(table["significant"][2:], want)
  assert class_level.count_significant_classes(table) == sum(want) > 0
