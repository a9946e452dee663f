"""Relative representation of an attribute in two groups: a ratio of two binomial proportions.

000's human study (§3.3 "Human study", appendix C, Table 7, Figure 5) codes attributes
("corrupted image", "multiple objects", ...) on a balanced random sample of PIE and non-PIE
images and reports, per attribute, its share among PIEs, its share among non-PIEs and their
relative representation

    ratio = (x_1 / n_1) / (x_0 / n_0)

(x_g images of group g coded with the attribute, n_g images of group g coded; 1 = the same
share in both groups, above 1 = over-indexed among PIEs). 000 gives no uncertainty; here:

* the 95% interval of the ratio by the Katz log method (Katz, Baptista, Azen & Pike 1978,
  "Obtaining confidence intervals for the risk ratio in cohort studies", Biometrics 34),
  exactly as `scipy.stats.contingency.relative_risk(...).confidence_interval` computes it:
  exp(log ratio ± z · sqrt(1/x_1 − 1/n_1 + 1/x_0 − 1/n_0)), z the normal quantile;
* where x_1 or x_0 is 0 that interval is undefined (log 0); then the same formula on
  x + 0.5 and n + 0.5 in both groups (the "log-adjusted" interval of Pettigrew, Gart & Thomas
  1986, statsmodels' `confint_proportions_2indep(method="log-adjusted", compare="ratio")`),
  `method` "katz-log-adjusted"; the ratio itself stays the plain ratio of shares (0 or inf).
  Both 0: the attribute was never coded, ratio and interval NaN;
* a two-sided p-value of "same share in both groups": Fisher's exact test on the 2×2 table
  (`scipy.stats.fisher_exact`), valid at the small samples of a human study.
* each share's own 95% interval: Wilson's score interval (Wilson 1927), as
  `scipy.stats.binomtest(x, n).proportion_ci(method="wilson")` computes it (000 Figure 5's
  shares, with their uncertainty).

Pure numpy / scipy (no TensorFlow, nothing of the pipeline). Bad counts raise
`validate.StatsInputError`.
"""

import math

from scipy import stats
from scipy.stats import contingency

from tf_forget.stats import validate

CONFIDENCE = 0.95
KATZ = "katz-log"
KATZ_ADJUSTED = "katz-log-adjusted"
UNDEFINED = "undefined"


def _count(value, name):
  """A non-negative whole number as int (bool / numpy integers / whole floats accepted)."""
  try:
    f = float(value)
  except (TypeError, ValueError):
    raise validate.StatsInputError(f"{name} must be a whole number, got {value!r}") from None
  if not math.isfinite(f) or f != round(f) or f < 0:
    raise validate.StatsInputError(f"{name} must be a whole number >= 0, got {value!r}")
  return int(round(f))


def _log_interval(x_1, n_1, x_0, n_0, z):
  ratio = (x_1 / n_1) / (x_0 / n_0)
  se = math.sqrt(1.0 / x_1 - 1.0 / n_1 + 1.0 / x_0 - 1.0 / n_0)
  return ratio * math.exp(-z * se), ratio * math.exp(z * se)


def relative_representation(count_1, n_1, count_0, n_0, confidence=CONFIDENCE):
  """An attribute's share in group 1 over its share in group 0, with interval and p-value.

  Args:
    count_1: x_1, members of group 1 (e.g. the PIEs of the sample) with the attribute.
    n_1: members of group 1 (>= 1).
    count_0: x_0, members of group 0 (non-PIEs) with the attribute.
    n_0: members of group 0 (>= 1).
    confidence: level of the interval in (0, 1).

  Returns:
    dict: `count_1`, `n_1`, `share_1` (x_1/n_1), `share_1_low`, `share_1_high` (its Wilson
    interval), `count_0`, `n_0`, `share_0`, `share_0_low`, `share_0_high`, `ratio`
    (share_1 / share_0; inf when only x_0 = 0, NaN when both are 0), `low`, `high` (the
    interval; NaN when undefined), `method` (`KATZ`, `KATZ_ADJUSTED` or `UNDEFINED`),
    `p_value` (Fisher's exact test, two-sided), `confidence`.

  Raises:
    validate.StatsInputError: a count that is not a whole number >= 0, n < 1, x > n, or a
      confidence outside (0, 1).
  """
  x_1, n_1 = _count(count_1, "count_1"), _count(n_1, "n_1")
  x_0, n_0 = _count(count_0, "count_0"), _count(n_0, "n_0")
  for x, n, side in ((x_1, n_1, "1"), (x_0, n_0, "0")):
    if n < 1:
      raise validate.StatsInputError(f"n_{side} must be >= 1 (an empty group has no share)")
    if x > n:
      raise validate.StatsInputError(f"count_{side} = {x} exceeds n_{side} = {n}")
  if not 0.0 < float(confidence) < 1.0:
    raise validate.StatsInputError(f"confidence must be in (0, 1), got {confidence!r}")
  share_1, share_0 = x_1 / n_1, x_0 / n_0
  nan = float("nan")
  if x_1 > 0 and x_0 > 0:
    ci = contingency.relative_risk(x_1, n_1, x_0, n_0).confidence_interval(
      confidence_level=float(confidence)
    )
    ratio, low, high, method = share_1 / share_0, float(ci.low), float(ci.high), KATZ
  elif x_1 == 0 and x_0 == 0:
    ratio, low, high, method = nan, nan, nan, UNDEFINED
  else:
    z = float(stats.norm.ppf(0.5 + float(confidence) / 2.0))
    low, high = _log_interval(x_1 + 0.5, n_1 + 0.5, x_0 + 0.5, n_0 + 0.5, z)
    ratio = 0.0 if x_1 == 0 else float("inf")
    method = KATZ_ADJUSTED
  p_value = float(
    stats.fisher_exact([[x_1, n_1 - x_1], [x_0, n_0 - x_0]], alternative="two-sided")[1]
  )
  wilson_1 = stats.binomtest(x_1, n_1).proportion_ci(float(confidence), method="wilson")
  wilson_0 = stats.binomtest(x_0, n_0).proportion_ci(float(confidence), method="wilson")
  return {
    "count_1": x_1,
    "n_1": n_1,
    "share_1": share_1,
    "share_1_low": float(wilson_1.low),
    "share_1_high": float(wilson_1.high),
    "count_0": x_0,
    "n_0": n_0,
    "share_0": share_0,
    "share_0_low": float(wilson_0.low),
    "share_0_high": float(wilson_0.high),
    "ratio": float(ratio),
    "low": float(low),
    "high": float(high),
    "method": method,
    "p_value": p_value,
    "confidence": float(confidence),
  }
