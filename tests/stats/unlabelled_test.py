"""Audits without labels: flip rate, the transition table, per-class shifts, Stuart–Maxwell.

Golden values are computed independently of the code under test: Clopper–Pearson limits from
the beta quantiles (`scipy.stats.beta.ppf`), exact McNemar p-values from the binomial
distribution (`scipy.stats.binom.cdf`), Benjamini–Hochberg by the step-up rule by hand,
Stuart–Maxwell on a 3x3 table by the Fleiss–Everitt closed form (Fleiss & Everitt 1971,
"Comparing the marginal totals of square contingency tables", Br. J. Math. Stat. Psychol.
24:117) and by the matrix formula with numpy, and on a 4x4 table against the published values
of Fagerland, Lydersen & Laake, *Statistical Analysis of Contingency Tables* (2017), ch. 9
(pretherapy susceptibility of pathogens, Peterson et al. 2007: Stuart T = 26.250, df 3,
P = 0.000008; McNemar–Bowker T = 26.250, df 6, P = 0.000200). The planted case (a file that
moves confident images of one class to another, overall flip rate < 1%) is in
unlabelled_confidence_test.py.
"""

import numpy as np
import pytest
from scipy import stats

from tf_forget.stats import unlabelled
from tf_forget.stats import validate


def _beta_interval(k, n, confidence=0.95):
  """Clopper–Pearson limits from the beta quantiles (Clopper & Pearson 1934)."""
  alpha = 1 - confidence
  low = 0.0 if k == 0 else stats.beta.ppf(alpha / 2, k, n - k + 1)
  high = 1.0 if k == n else stats.beta.ppf(1 - alpha / 2, k + 1, n - k)
  return low, high


def _mcnemar_by_binom(left, entered):
  """Exact two-sided McNemar p from the binomial CDF: min(1, 2 P(X <= min) | m, 1/2)."""
  m = left + entered
  return 1.0 if m == 0 else min(1.0, 2 * stats.binom.cdf(min(left, entered), m, 0.5))


@pytest.mark.parametrize("k, n", [(0, 10), (3, 10), (10, 10), (1, 1), (7, 250), (500, 1000)])
@pytest.mark.parametrize("confidence", [0.95, 0.9])
def test_clopper_pearson_equals_the_beta_quantiles(k, n, confidence):
  low, high = unlabelled.clopper_pearson(k, n, confidence)
  want = _beta_interval(k, n, confidence)
  assert (low, high) == pytest.approx(want, rel=1e-9, abs=1e-12)


def test_clopper_pearson_without_trials_is_nan():
  assert all(np.isnan(unlabelled.clopper_pearson(0, 0)))


# example: 0  1  2  3  4  5  6  7  8  9
A = [0, 1, 2, 0, 1, 2, 0, 1, 2, 0]
B = [0, 1, 2, 1, 1, 0, 0, 2, 2, 0]  # flips at 3 (0 → 1), 5 (2 → 0), 7 (1 → 2)


def test_flip_rate_by_hand():
  out = unlabelled.flip_rate(A, B)
  assert (out["n"], out["flips"]) == (10, 3)
  assert out["flip_rate"] == pytest.approx(0.3) and out["agreement"] == pytest.approx(0.7)
  assert (out["low"], out["high"]) == pytest.approx(_beta_interval(3, 10), rel=1e-9)
  # The agreement's interval is the Clopper–Pearson interval of its own count, 7 of 10.
  want = _beta_interval(7, 10)
  assert (out["agreement_low"], out["agreement_high"]) == pytest.approx(want, rel=1e-9)
  assert out["method"] == "clopper_pearson"


def test_flip_rate_with_a_mask_and_with_an_empty_one():
  mask = [True] * 5 + [False] * 5  # examples 0-4: one flip (example 3)
  out = unlabelled.flip_rate(A, B, mask=mask)
  assert (out["n"], out["flips"]) == (5, 1)
  assert (out["low"], out["high"]) == pytest.approx(_beta_interval(1, 5), rel=1e-9)
  empty = unlabelled.flip_rate(A, B, mask=[False] * 10)
  assert empty["n"] == 0 and np.isnan(empty["flip_rate"]) and np.isnan(empty["low"])


def test_class_transitions_by_hand():
  t = unlabelled.class_transitions(A, B, num_classes=4)
  want = np.array(
    [
      [3, 1, 0, 0],  # a = 0: examples 0, 6, 9 stay, 3 goes to 1
      [0, 2, 1, 0],  # a = 1: 1, 4 stay, 7 goes to 2
      [1, 0, 2, 0],  # a = 2: 2, 8 stay, 5 goes to 0
      [0, 0, 0, 0],  # class 3: predicted by neither
    ]
  )
  np.testing.assert_array_equal(t, want)
  masked = unlabelled.class_transitions(A, B, 4, mask=[i != 3 for i in range(10)])
  assert masked[0, 1] == 0 and masked.sum() == 9


def test_largest_transitions_order_and_shares():
  t = np.array([[50, 4, 1], [4, 30, 0], [9, 0, 2]])
  df = unlabelled.largest_transitions(t, m=3)
  # Off-diagonal cells: (2,0)=9, (0,1)=4, (1,0)=4, (0,2)=1; ties by reference class.
  assert list(zip(df["reference"], df["candidate"], df["count"])) == [
    (2, 0, 9),
    (0, 1, 4),
    (1, 0, 4),
  ]
  np.testing.assert_allclose(df["share_of_flips"], [9 / 18, 4 / 18, 4 / 18])
  np.testing.assert_allclose(df["share_of_reference"], [9 / 11, 4 / 55, 4 / 34])
  assert len(unlabelled.largest_transitions(np.eye(3, dtype=int) * 5)) == 0


def test_per_class_shift_by_hand():
  # rows: reference class, columns: the file's. Class 4 is predicted by neither, class 3 only
  # by the file.
  t = np.array(
    [
      [80, 10, 2, 3, 0],
      [1, 60, 0, 0, 0],
      [0, 1, 40, 0, 0],
      [0, 0, 0, 0, 0],
      [0, 0, 0, 0, 0],
    ]
  )
  out = unlabelled.per_class_shift(t)
  # left = row sum − diagonal, entered = column sum − diagonal
  np.testing.assert_array_equal(out["n"], [95, 61, 41, 0, 0])
  np.testing.assert_array_equal(out["n_candidate"], [81, 71, 42, 3, 0])
  np.testing.assert_array_equal(out["left"], [15, 1, 1, 0, 0])
  np.testing.assert_array_equal(out["entered"], [1, 11, 2, 3, 0])
  np.testing.assert_allclose(out["flip_rate"][:3], [15 / 95, 1 / 61, 1 / 41])
  assert np.isnan(out["flip_rate"][3:]).all()
  for c, (k, n) in enumerate([(15, 95), (1, 61), (1, 41)]):
    assert (out["low"][c], out["high"][c]) == pytest.approx(_beta_interval(k, n), rel=1e-9)
  np.testing.assert_allclose(out["share_change"], np.array([-14, 10, 1, 3, 0]) / 197)
  p = [_mcnemar_by_binom(15, 1), _mcnemar_by_binom(1, 11), _mcnemar_by_binom(1, 2)]
  p.append(_mcnemar_by_binom(0, 3))  # 2 · 1/8 = 0.25
  np.testing.assert_allclose(out["p_value"][:4], p, rtol=1e-12)
  assert out["p_value"][3] == pytest.approx(0.25) and np.isnan(out["p_value"][4])
  # BH by hand over the m = 4 classes either file predicts, step-up from the largest p:
  # sorted p(1) ≤ ... ≤ p(4); p̃(i) = min_{j ≥ i} min(1, 4 p(j) / j).
  order = np.argsort(p)
  ranked = np.minimum(1, 4 * np.array(p)[order] / np.arange(1, 5))
  adjusted = np.minimum.accumulate(ranked[::-1])[::-1]
  want = np.empty(4)
  want[order] = adjusted
  np.testing.assert_allclose(out["p_adjusted"][:4], want, rtol=1e-12)
  assert out["num_tests"] == 4 and np.isnan(out["p_adjusted"][4])
  np.testing.assert_array_equal(out["significant"], np.append(want <= 0.05, False))


def test_per_class_shift_alpha_decides_significance():
  t = np.array([[90, 10], [1, 99]])  # p = 2 · P(X ≤ 1 | 11, 1/2) = 24/2048 ≈ 0.0117, both classes
  assert unlabelled.per_class_shift(t, alpha=0.05)["significant"].tolist() == [True, True]
  assert unlabelled.per_class_shift(t, alpha=0.01)["significant"].tolist() == [False, False]


TABLE_3X3 = np.array([[20, 6, 2], [3, 15, 9], [1, 4, 30]])


def test_stuart_maxwell_3x3_by_the_fleiss_everitt_closed_form():
  # d = n_i· − n_·i = (4, 2, −6); n̄_jk = (n_jk + n_kj) / 2: n̄12 = 4.5, n̄13 = 1.5, n̄23 = 6.5.
  # X² = (n̄23 d1² + n̄13 d2² + n̄12 d3²) / (2 (n̄12 n̄23 + n̄12 n̄13 + n̄13 n̄23))
  #    = (104 + 6 + 162) / (2 · 45.75) = 272 / 91.5 = 544 / 183.
  out = unlabelled.marginal_homogeneity(TABLE_3X3)
  sm = out["stuart_maxwell"]
  assert sm["statistic"] == pytest.approx(544 / 183, rel=1e-12) and sm["df"] == 2
  assert sm["p_value"] == pytest.approx(np.exp(-544 / 183 / 2), rel=1e-12)  # χ²₂ tail: e^{−x/2}
  # Bowker: (6 − 3)²/9 + (2 − 1)²/3 + (9 − 4)²/13 = 1 + 1/3 + 25/13 = 127/39, three pairs.
  bowker = out["bowker"]
  assert bowker["statistic"] == pytest.approx(127 / 39, rel=1e-12) and bowker["df"] == 3
  assert bowker["p_value"] == pytest.approx(stats.chi2.sf(127 / 39, 3), rel=1e-12)
  assert out["classes"].tolist() == [0, 1, 2] and out["groups"] == 1
  assert (out["flips"], out["n"]) == (25, 90)


def test_stuart_maxwell_by_the_matrix_formula():
  # X² = dᵀ V⁻¹ d over the first C − 1 classes, V_jj = n_j· + n_·j − 2 n_jj, V_jk = −(n_jk + n_kj)
  rng = np.random.default_rng(7)
  t = rng.integers(0, 20, size=(5, 5)) + np.diag(rng.integers(50, 100, size=5))
  d = (t.sum(axis=1) - t.sum(axis=0))[:-1]
  v = -(t + t.T).astype(float)
  np.fill_diagonal(v, t.sum(axis=1) + t.sum(axis=0) - 2 * np.diag(t))
  want = d @ np.linalg.solve(v[:-1, :-1], d)
  assert unlabelled.marginal_homogeneity(t)["stuart_maxwell"]["statistic"] == pytest.approx(want)


def test_marginal_homogeneity_published_4x4_example():
  # Fagerland, Lydersen & Laake (2017) ch. 9: Peterson et al. (2007) pathogens.
  t = np.array([[596, 18, 6, 5], [0, 2, 0, 0], [0, 0, 42, 0], [11, 0, 0, 0]])
  out = unlabelled.marginal_homogeneity(t)
  sm, bowker = out["stuart_maxwell"], out["bowker"]
  assert sm["statistic"] == pytest.approx(26.250, abs=5e-4) and sm["df"] == 3
  assert round(sm["p_value"], 6) == 0.000008
  assert bowker["statistic"] == pytest.approx(26.250, abs=5e-4)
  # The book counts all C(C − 1)/2 = 6 pairs (P = 0.000200); three of them hold no flip, and
  # here (docs/spec.md §8.4) df counts the pairs with a flip.
  assert round(stats.chi2.sf(bowker["statistic"], 6), 6) == 0.000200
  assert bowker["df"] == 3
  assert bowker["p_value"] == pytest.approx(stats.chi2.sf(26.25, 3), rel=1e-9)


def test_classes_without_flips_are_left_out():
  # TABLE_3X3 embedded in a 6x6 table: class 1 predicted by neither, class 4 never flipped,
  # class 5 predicted by neither; the result is the 3x3 one.
  t = np.zeros((6, 6), dtype=int)
  keep = [0, 2, 3]
  t[np.ix_(keep, keep)] = TABLE_3X3
  t[4, 4] = 40
  out, small = unlabelled.marginal_homogeneity(t), unlabelled.marginal_homogeneity(TABLE_3X3)
  assert out["classes"].tolist() == keep
  for test in ("stuart_maxwell", "bowker"):
    assert out[test] == pytest.approx(small[test], rel=1e-12)


def test_disconnected_groups_add_their_statistics():
  # Flips only within {0, 1} and within {2, 3}: V is block-diagonal; each block is a 2x2 table,
  # where Stuart–Maxwell is McNemar's (n01 − n10)² / (n01 + n10) without continuity correction.
  t = np.array([[50, 9, 0, 0], [3, 40, 0, 0], [0, 0, 30, 2], [0, 0, 8, 60]])
  out = unlabelled.marginal_homogeneity(t)
  want = (9 - 3) ** 2 / 12 + (2 - 8) ** 2 / 10
  assert out["stuart_maxwell"]["statistic"] == pytest.approx(want, rel=1e-12)
  assert out["stuart_maxwell"]["df"] == 2 and out["groups"] == 2
  assert out["bowker"]["statistic"] == pytest.approx(want, rel=1e-12)  # the same two pairs
  assert out["bowker"]["df"] == 2


@pytest.mark.parametrize("table", [[[7]], np.diag([5, 0, 9]), np.zeros((3, 3), dtype=int)])
def test_no_flip_gives_statistic_zero_and_p_one(table):
  out = unlabelled.marginal_homogeneity(table)
  for test in ("stuart_maxwell", "bowker"):
    assert out[test] == {"statistic": 0.0, "df": 0, "p_value": 1.0}
  assert out["classes"].size == 0 and out["flips"] == 0


@pytest.mark.parametrize(
  "call, match",
  [
    (lambda: unlabelled.flip_rate([0, 1], [0, 1, 2]), "b has 3 examples but a has 2"),
    (lambda: unlabelled.flip_rate([0, -1], [0, 1]), "a has a negative label"),
    (lambda: unlabelled.flip_rate([0, 1.5], [0, 1]), "non-integer"),
    (lambda: unlabelled.flip_rate([], []), "empty"),
    (lambda: unlabelled.flip_rate([0, 1], [0, 1], mask=[1]), "mask has shape"),
    (lambda: unlabelled.flip_rate([0, 1], [0, 1], confidence=1.0), "confidence must be in"),
    (lambda: unlabelled.class_transitions([0, 3], [0, 1], 3), "out of range for num_classes=3"),
    (lambda: unlabelled.class_transitions([0, 1], [0, 1], 0), "num_classes must be a positive"),
    (lambda: unlabelled.class_transitions([0, 1], [0, 1], 2.5), "num_classes must be a positive"),
    (lambda: unlabelled.per_class_shift(np.ones((2, 3))), "must be square"),
    (lambda: unlabelled.per_class_shift([[1, -1], [0, 1]]), "counts"),
    (lambda: unlabelled.per_class_shift([[1, 0.5], [0, 1]]), "counts"),
    (lambda: unlabelled.per_class_shift(np.eye(2), alpha=0), "alpha must be in"),
    (lambda: unlabelled.marginal_homogeneity([1, 2]), "table must be 2-D"),
    (lambda: unlabelled.marginal_homogeneity([[np.nan]]), "table contains NaN"),
    (lambda: unlabelled.largest_transitions(np.eye(2), m=-1), "m must be an integer"),
  ],
)
def test_bad_input_is_one_line(call, match):
  with pytest.raises(validate.StatsInputError, match=match) as e:
    call()
  assert "\n" not in str(e.value)
