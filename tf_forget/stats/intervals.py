"""Confidence intervals of a change between two populations of models.

The papers report population means (000 Table 2, 004 Tables 3-5) and significance tests
(000 §2.2 Welch, 002 §7 paired t-tests); a user deciding which file to ship also needs the
uncertainty of each difference. One quantity here: the t-based interval of the difference of
mean per-member measures, compressed minus dense,

  * independent populations (gradual pruning, docs/spec.md §1.3: member k of each trained variant
    has its own seed): Welch's interval, `scipy.stats.ttest_ind(equal_var=False)` — the same test
    000 §2.2 uses per class;
  * paired populations (a quantized member and the dense member it quantizes; a one-shot or
    prune-retrain member and its dense parent, 002 §6.2): the paired interval of the
    per-pair differences, `scipy.stats.ttest_rel` — the test 002 §7 uses.

Pure numpy / scipy (no TensorFlow). Undefined intervals (fewer than 2 values on a side or
pair, NaN inputs) are NaN, never a guess. Where the values have no spread at all (every paired
difference equal, or both populations constant) the t interval degenerates to the point
estimate; that is what scipy's formula gives and it is reported as is, with `spread` = 0 so a
reader can tell.
"""

import numpy as np
from scipy import stats

from tf_forget.stats import validate

CONFIDENCE = 0.95
# Spreads below this (relative to the values' scale) are rounding noise of identical values
# (e.g. the same accuracy summed in another order), not variation between members.
_TINY = 1e-12


def _no_spread(spread, values):
  return spread <= _TINY * max(1.0, float(np.max(np.abs(values))))


def _values(values, name):
  v = np.asarray(values, dtype=np.float64)
  if v.ndim != 1:
    raise validate.StatsInputError(f"{name} must be 1-D (one value per member), got {v.shape}")
  return v[~np.isnan(v)]


def _clip(out, bounds):
  """The interval limited to what a difference of values in `bounds` can be."""
  if bounds is None:
    return out
  width = bounds[1] - bounds[0]
  clipped = dict(out)
  for key in ("low", "high"):
    if out[key] == out[key]:
      clipped[key] = float(min(max(out[key], -width), width))
  return clipped


def mean_difference_interval(values_0, values_t, paired=False, confidence=CONFIDENCE, bounds=None):
  """Difference of means (t minus 0) with its t-based confidence interval.

  Args:
    values_0: float `[K0]` per-member measure of the dense population (e.g. top-1 accuracy,
      a class's recall, a subgroup's FNR). NaN values (an undefined rate) are dropped.
    values_t: float `[Kt]` the same measure of the compressed population. With `paired`, row
      i of `values_t` is paired with row i of `values_0` (K0 == Kt) and a pair with a NaN on
      either side is dropped.
    paired: paired (`scipy.stats.ttest_rel`) instead of Welch (`ttest_ind(equal_var=False)`).
    confidence: level of the interval in (0, 1).
    bounds: optional (lo, hi) the values are known to lie in (a rate: (0, 1)); the interval
      is then clipped to the differences possible, [−(hi − lo), hi − lo] (a t interval can
      reach past them: +99 points ± 3 is not +102).

  Returns:
    dict with `difference` (mean_t − mean_0, or the mean paired difference), `low`, `high`
    (NaN when undefined), `n_0`, `n_t` (values used), `method` ("welch" or "paired"),
    `confidence`, `spread` (sample SD of the paired differences, or the larger of the two
    samples' SDs; NaN with fewer than 2 values).

  Raises:
    validate.StatsInputError: non-1-D inputs, unequal lengths when paired, or a confidence
      outside (0, 1).
  """
  return _clip(_difference_interval(values_0, values_t, paired, confidence), bounds)


def _difference_interval(values_0, values_t, paired, confidence):
  if not 0 < confidence < 1:
    raise validate.StatsInputError(f"confidence must be in (0, 1), got {confidence}")
  nan = float("nan")
  if paired:
    a = np.asarray(values_0, dtype=np.float64)
    b = np.asarray(values_t, dtype=np.float64)
    if a.ndim != 1 or b.shape != a.shape:
      raise validate.StatsInputError(
        f"paired values must be 1-D of equal length, got {a.shape} and {b.shape}"
      )
    keep = ~(np.isnan(a) | np.isnan(b))
    a, b = a[keep], b[keep]
    out = {"n_0": int(a.size), "n_t": int(b.size), "method": "paired", "confidence": confidence}
    if not a.size:
      return dict(out, difference=nan, low=nan, high=nan, spread=nan)
    d = b - a
    out.update(difference=float(d.mean()), spread=float(d.std(ddof=1)) if d.size > 1 else nan)
    if d.size < 2:
      return dict(out, low=nan, high=nan)
    if _no_spread(out["spread"], d):
      return dict(out, low=out["difference"], high=out["difference"], spread=0.0)
    ci = stats.ttest_rel(b, a).confidence_interval(confidence)
    return dict(out, low=float(ci.low), high=float(ci.high))
  a, b = _values(values_0, "values_0"), _values(values_t, "values_t")
  out = {"n_0": int(a.size), "n_t": int(b.size), "method": "welch", "confidence": confidence}
  if not (a.size and b.size):
    return dict(out, difference=nan, low=nan, high=nan, spread=nan)
  out["difference"] = float(b.mean() - a.mean())
  if a.size < 2 or b.size < 2:
    return dict(out, low=nan, high=nan, spread=nan)
  out["spread"] = float(max(a.std(ddof=1), b.std(ddof=1)))
  if _no_spread(out["spread"], np.concatenate([a, b])):
    return dict(out, low=out["difference"], high=out["difference"], spread=0.0)
  ci = stats.ttest_ind(b, a, equal_var=False).confidence_interval(confidence)
  return dict(out, low=float(ci.low), high=float(ci.high))


def mean_interval(values, confidence=CONFIDENCE):
  """Mean of a per-member measure with its one-sample t interval (mean ± t·s/√K).

  Args:
    values: float `[K]` (NaN dropped).
    confidence: level in (0, 1).

  Returns:
    dict `mean`, `low`, `high` (NaN with fewer than 2 values; the mean itself when the values
    do not vary), `n`.
  """
  if not 0 < confidence < 1:
    raise validate.StatsInputError(f"confidence must be in (0, 1), got {confidence}")
  v = _values(values, "values")
  nan = float("nan")
  if not v.size:
    return {"mean": nan, "low": nan, "high": nan, "n": 0}
  mean = float(v.mean())
  if v.size < 2:
    return {"mean": mean, "low": nan, "high": nan, "n": 1}
  sd = float(v.std(ddof=1))
  if _no_spread(sd, v):
    return {"mean": mean, "low": mean, "high": mean, "n": int(v.size)}
  half = float(stats.t.ppf(0.5 + confidence / 2, v.size - 1)) * sd / np.sqrt(v.size)
  return {"mean": mean, "low": mean - half, "high": mean + half, "n": int(v.size)}
