"""002 recall distortion (docs/spec.md §5): worked example, Proposition 4.1, slopes, CIs."""

import hypothesis
from hypothesis import strategies as st
import numpy as np
import pytest
from scipy import stats as sp_stats

from tf_forget.stats import accuracy
from tf_forget.stats import recall_distortion as rd
from tf_forget.stats import validate


def _worked_example_predictions():
  """002 §4-5 example on a balanced set: 10 examples each of X (0) and Y (1).

  Before: R^X = 9/10, R^Y = 7/10, A = 0.8. After: R^X = 7/10, R^Y = 5/10, A_t = 0.6.
  """
  labels = np.repeat([0, 1], 10)

  def member(correct_x, correct_y):
    p = 1 - labels
    p[:correct_x] = 0
    p[10 : 10 + correct_y] = 1
    return p[None, :]

  return labels, member(9, 7), member(7, 5)


def test_002_worked_example():
  """002 §4: B^X = B^X_t = 10%; B̄^X = 1/8, B̄^X_t = 1/6; §5: I^X = I^Y = 4/3
  (docs/spec.md §7.2)."""
  labels, before, after = _worked_example_predictions()
  r0 = accuracy.per_class_recall(before, labels)
  rt = accuracy.per_class_recall(after, labels)
  a0 = accuracy.top1_accuracy(before, labels)
  at = accuracy.top1_accuracy(after, labels)
  np.testing.assert_allclose([a0[0], at[0]], [0.8, 0.6])
  np.testing.assert_allclose(rd.recall_balance(r0, a0), [[0.1, -0.1]], atol=1e-15)
  np.testing.assert_allclose(rd.recall_balance(rt, at), [[0.1, -0.1]], atol=1e-15)
  nb0 = rd.normalized_recall_balance(r0, a0)
  nbt = rd.normalized_recall_balance(rt, at)
  np.testing.assert_allclose(nb0, [[1 / 8, -1 / 8]], rtol=1e-12)
  np.testing.assert_allclose(nbt, [[1 / 6, -1 / 6]], rtol=1e-12)
  np.testing.assert_allclose(rd.intensification_ratio(nb0, nbt), [[4 / 3, 4 / 3]], rtol=1e-12)
  # With every I^c = 4/3 the slope, a weighted mean of the I^c (002 §5), is 4/3 too.
  np.testing.assert_allclose(rd.model_slope(nb0, nbt), [4 / 3], rtol=1e-12)


@st.composite
def _balanced(draw):
  classes = draw(st.integers(2, 8))
  per_class = draw(st.integers(1, 12))
  members = draw(st.integers(1, 4))
  labels = np.repeat(np.arange(classes), per_class)
  seed = draw(st.integers(0, 2**32 - 1))
  rng = np.random.default_rng(seed)
  p_correct = rng.random()
  preds = np.where(
    rng.random((members, labels.size)) < p_correct,
    labels,
    rng.integers(0, classes, (members, labels.size)),
  )
  return labels, preds


@hypothesis.settings(max_examples=150, deadline=None)
@hypothesis.given(_balanced())
def test_proposition_4_1_balance_sums_to_zero(data):
  """002 Proposition 4.1 (and Corollary 4.1.1): Σ_c B^c = 0 on a balanced test set."""
  labels, preds = data
  r = accuracy.per_class_recall(preds, labels)
  a = accuracy.top1_accuracy(preds, labels)
  np.testing.assert_allclose(rd.recall_balance(r, a).sum(axis=1), 0.0, atol=1e-12)
  ok = a > 0
  if ok.any():
    np.testing.assert_allclose(
      rd.normalized_recall_balance(r[ok], a[ok]).sum(axis=1), 0.0, atol=1e-10
    )


def test_proposition_needs_balance():
  labels = np.array([0, 0, 0, 1])
  preds = np.array([[0, 0, 0, 0]])
  b = rd.recall_balance(
    accuracy.per_class_recall(preds, labels), accuracy.top1_accuracy(preds, labels)
  )
  assert b.sum() == pytest.approx(-0.5)  # imbalanced: (1 - .75) + (0 - .75) != 0


def test_intensification_nan_where_balance_zero():
  out = rd.intensification_ratio([[0.0, 0.2]], [[0.1, 0.1]])
  assert np.isnan(out[0, 0]) and out[0, 1] == pytest.approx(0.5)


def test_model_slope_is_ols_through_origin():
  rng = np.random.default_rng(0)
  x = rng.normal(size=(4, 10))
  y = 1.3 * x + rng.normal(scale=0.1, size=x.shape)
  alphas = rd.model_slope(x, y)
  for m in range(4):
    want = np.linalg.lstsq(x[m][:, None], y[m], rcond=None)[0][0]
    assert alphas[m] == pytest.approx(want, rel=1e-12)
  assert np.isnan(rd.model_slope(np.zeros((1, 3)), np.ones((1, 3)))[0])


def test_pooled_slope_and_uncentered_r2_by_hand():
  # Points (1, 2), (2, 3), (-1, -2): α̂ = (2 + 6 + 2) / (1 + 4 + 1) = 5/3;
  # residuals 2 - 5/3, 3 - 10/3, -2 + 5/3 -> SSR = 1/9 + 1/9 + 1/9 = 1/3; Σy² = 17.
  out = rd.pooled_slope([[1, 2], [-1, 0]], [[2, 3], [-2, 0]])
  assert out["alpha_hat"] == pytest.approx(5 / 3)
  assert out["r2"] == pytest.approx(1 - (1 / 3) / 17)
  assert out["points"] == 4


def test_mean_slope_ci_and_label():
  alphas = np.array([1.1, 1.2, 1.3, 1.25, 1.15])
  out = rd.mean_slope_ci(alphas)
  half = sp_stats.t.ppf(0.995, 4) * alphas.std(ddof=1) / np.sqrt(5)
  assert out["mean"] == pytest.approx(1.2)
  assert out["low"] == pytest.approx(1.2 - half) and out["high"] == pytest.approx(1.2 + half)
  assert out["label"] == ">"
  assert rd.mean_slope_ci(alphas - 0.5)["label"] == "<"
  assert rd.mean_slope_ci(alphas - 0.2)["label"] == "?"
  assert rd.mean_slope_ci([1.0, np.nan, 1.2])["n"] == 2
  with pytest.raises(validate.StatsInputError, match="at least 2"):
    rd.mean_slope_ci([1.0])


def test_recall_variance_ddof0():
  r = np.array([[0.9, 0.7, 0.8], [1.0, 0.0, np.nan]])
  np.testing.assert_allclose(rd.recall_variance(r), [0.02 / 3, 0.25])


def test_summary_on_worked_example():
  labels, before, after = _worked_example_predictions()
  two_before = np.concatenate([before, before])
  two_after = np.concatenate([after, after])
  out = rd.recall_distortion_summary(
    accuracy.per_class_recall(two_before, labels),
    accuracy.top1_accuracy(two_before, labels),
    accuracy.per_class_recall(two_after, labels),
    accuracy.top1_accuracy(two_after, labels),
  )
  np.testing.assert_allclose(out["alphas"], [4 / 3, 4 / 3])
  assert out["alpha_hat"] == pytest.approx(4 / 3) and out["r2"] == pytest.approx(1.0)
  assert out["mean_accuracy_t"] == pytest.approx(0.6)
  assert out["recall_variance_0"] == pytest.approx(0.01)
