"""Recall distortion measures of 002 §4-6 and appendices F, G (docs/spec.md §5); their t-tests
(§7, appendix A) are `tf_forget.stats.recall_tests`.

* `recall_balance` B^c = R^c − A; `normalized_recall_balance` B̄^c = (R^c − A) / A;
  `intensification_ratio` I^c_t = B̄^c_t / B̄^c (NaN where B̄^c = 0) (002 §4-5; docs/spec.md §5.1).
* `model_slope` α_t(m): OLS through the origin of B̄^c_t on B̄^c over classes (002 §5);
  `pooled_slope` α̂ over all models and classes with uncentered r² (002 §6.2 "Figures",
  appendix G); `mean_accuracy` Ā (docs/spec.md §5.2).
* `mean_slope_ci`: mean α over models with a t-based 99% CI and its label "<", ">" or "?"
  (002 §6.2 "Confidence intervals"; docs/spec.md §5.3).
* `recall_variance`: population variance (ddof = 0) of R^c over classes (002 Table 11;
  docs/spec.md §5.5).

Arrays are `[models, classes]` (one row per model m = one population member) and
`[models]`. Paper: 002 (docs/papers.md).
"""

import numpy as np
from scipy import stats as sp_stats

from tf_forget.stats import validate


def _recall_accuracy(recall, accuracy):
  r = validate.check_finite(recall, "recall", allow_nan=True)
  a = validate.check_finite(accuracy, "accuracy")
  if r.shape[:-1] != a.shape:
    raise validate.StatsInputError(
      f"recall shape {r.shape} does not match accuracy shape {a.shape} + [classes]"
    )
  return r, a


def recall_balance(recall, accuracy):
  """Recall balance B^c(m) = R^c(m) − A(m) (002 §4; docs/spec.md §5.1).

  Args:
    recall: float `[..., C]` per-class recall.
    accuracy: float `[...]` accuracy of the same models.

  Returns:
    float `[..., C]`.
  """
  r, a = _recall_accuracy(recall, accuracy)
  return r - a[..., None]


def normalized_recall_balance(recall, accuracy):
  """Normalized recall balance B̄^c(m) = (R^c(m) − A(m)) / A(m) (002 §4; docs/spec.md §5.1).

  Args:
    recall: float `[..., C]`.
    accuracy: float `[...]`, must be > 0.

  Returns:
    float `[..., C]`.

  Raises:
    validate.StatsInputError: an accuracy is 0 (B̄ undefined).
  """
  r, a = _recall_accuracy(recall, accuracy)
  if (a == 0).any():
    raise validate.StatsInputError("accuracy is 0 for some model; B̄ = B / A is undefined")
  return (r - a[..., None]) / a[..., None]


def intensification_ratio(nrb_before, nrb_after):
  """Intensification ratio I^c_t(m) = B̄^c_t(m) / B̄^c(m) (002 §5; docs/spec.md §5.1).

  Args:
    nrb_before: float `[..., C]` normalized recall balance before pruning.
    nrb_after: float `[..., C]` after pruning.

  Returns:
    float `[..., C]`; NaN where B̄^c = 0.
  """
  x = np.asarray(nrb_before, dtype=np.float64)
  y = np.asarray(nrb_after, dtype=np.float64)
  with np.errstate(invalid="ignore", divide="ignore"):
    return np.where(x != 0, y / np.where(x != 0, x, 1.0), np.nan)


def model_slope(nrb_before, nrb_after):
  """Model-level slope α_t(m) = Σ_c B̄^c B̄^c_t / Σ_c (B̄^c)² (002 §5; docs/spec.md §5.2).

  OLS through the origin over classes, one per model (row). Classes with NaN (absent from
  the test set) are left out.

  Args:
    nrb_before: float `[models, C]` B̄^c(m).
    nrb_after: float `[models, C]` B̄^c_t(m), the same models after pruning.

  Returns:
    float `[models]`; NaN where every B̄^c = 0.
  """
  x = np.asarray(nrb_before, dtype=np.float64)
  y = np.asarray(nrb_after, dtype=np.float64)
  if x.shape != y.shape:
    raise validate.StatsInputError(f"nrb_before shape {x.shape} != nrb_after shape {y.shape}")
  ok = ~(np.isnan(x) | np.isnan(y))
  x = np.where(ok, x, 0.0)
  y = np.where(ok, y, 0.0)
  sxx = (x * x).sum(axis=-1)
  with np.errstate(invalid="ignore", divide="ignore"):
    return np.where(sxx > 0, (x * y).sum(axis=-1) / np.where(sxx > 0, sxx, 1.0), np.nan)


def pooled_slope(nrb_before, nrb_after):
  """Pooled slope α̂ over all models and classes, with uncentered r² (002 §6.2; docs/spec.md §5.2).

  α̂ = Σ x y / Σ x² over every (model, class) point; r² = 1 − Σ (y − α̂ x)² / Σ y²
  (the coefficient of determination of a regression without intercept).

  Args:
    nrb_before: float `[models, C]`; nrb_after: float `[models, C]`.

  Returns:
    dict `alpha_hat`, `r2` (NaN when undefined), `points` (number of points used).
  """
  x = np.asarray(nrb_before, dtype=np.float64).ravel()
  y = np.asarray(nrb_after, dtype=np.float64).ravel()
  if x.shape != y.shape:
    raise validate.StatsInputError("nrb_before and nrb_after differ in shape")
  ok = ~(np.isnan(x) | np.isnan(y))
  x, y = x[ok], y[ok]
  sxx, syy = float((x * x).sum()), float((y * y).sum())
  alpha = float((x * y).sum() / sxx) if sxx > 0 else float("nan")
  r2 = float(1.0 - ((y - alpha * x) ** 2).sum() / syy) if syy > 0 and sxx > 0 else float("nan")
  return {"alpha_hat": alpha, "r2": r2, "points": int(x.size)}


def mean_accuracy(accuracy):
  """Ā, the mean accuracy across models (002 §6.2 "Figures"; docs/spec.md §5.2)."""
  return float(validate.check_finite(accuracy, "accuracy").mean())


def ci_label(low, high):
  """002 §6.2 label: "<" CI below 1 (de-intensification), ">" above 1, "?" contains 1."""
  if high < 1:
    return "<"
  if low > 1:
    return ">"
  return "?"


def mean_slope_ci(alphas, confidence=0.99):
  """Mean α over models with a t-based CI and its label (002 §6.2; docs/spec.md §5.3).

  CI = mean ± t_{(1+confidence)/2, K−1} · s / √K, s the sample SD (ddof = 1). NaN slopes
  (undefined α) are left out; K counts the rest.

  Args:
    alphas: float `[models]`.
    confidence: CI level (002: 0.99).

  Returns:
    dict `mean`, `low`, `high`, `label`, `n`.

  Raises:
    validate.StatsInputError: fewer than 2 defined slopes.
  """
  a = np.asarray(alphas, dtype=np.float64).ravel()
  a = a[~np.isnan(a)]
  if a.size < 2:
    raise validate.StatsInputError(f"a t-based CI needs at least 2 slopes, got {a.size}")
  mean = float(a.mean())
  half = float(sp_stats.t.ppf((1 + confidence) / 2, a.size - 1) * a.std(ddof=1) / np.sqrt(a.size))
  low, high = mean - half, mean + half
  return {"mean": mean, "low": low, "high": high, "label": ci_label(low, high), "n": int(a.size)}


def recall_variance(recall):
  """Recall variance over classes, ddof = 0 (002 appendix F, Table 11; docs/spec.md §5.5).

  Args:
    recall: float `[..., C]` per-class recall (NaN classes left out).

  Returns:
    float `[...]`; 002 Table 11 reports its mean over models.
  """
  r = validate.check_finite(recall, "recall", allow_nan=True)
  return np.nanvar(r, axis=-1, ddof=0)


def recall_distortion_summary(recall_0, accuracy_0, recall_t, accuracy_t, confidence=0.99):
  """All of 002 §5-6 for one (variant, ratio): slopes, pooled fit, CI, variances.

  Args:
    recall_0: float `[K, C]` before pruning; accuracy_0: float `[K]`.
    recall_t: float `[K, C]` after pruning (member k is the pruned dense member k);
      accuracy_t: float `[K]`.
    confidence: CI level.

  Returns:
    dict: `alphas` `[K]`, `mean_alpha` (dict from `mean_slope_ci`, or NaN fields if fewer
    than 2 slopes), `alpha_hat`, `r2`, `mean_accuracy_0`, `mean_accuracy_t`,
    `recall_variance_0`, `recall_variance_t` (means over models, Table 11).
  """
  validate.check_same_members(
    recall_0,
    recall_t,
    ("recall_0", "recall_t"),
    "002's slope pairs each model with its pruned self and",
  )
  x = normalized_recall_balance(recall_0, accuracy_0)
  y = normalized_recall_balance(recall_t, accuracy_t)
  alphas = model_slope(x, y)
  try:
    ci = mean_slope_ci(alphas, confidence)
  except validate.StatsInputError:
    ci = {
      "mean": float("nan"),
      "low": float("nan"),
      "high": float("nan"),
      "label": "?",
      "n": int((~np.isnan(alphas)).sum()),
    }
  pooled = pooled_slope(x, y)
  return {
    "alphas": alphas,
    "mean_alpha": ci,
    "alpha_hat": pooled["alpha_hat"],
    "r2": pooled["r2"],
    "mean_accuracy_0": mean_accuracy(accuracy_0),
    "mean_accuracy_t": mean_accuracy(accuracy_t),
    "recall_variance_0": float(recall_variance(recall_0).mean()),
    "recall_variance_t": float(recall_variance(recall_t).mean()),
  }
