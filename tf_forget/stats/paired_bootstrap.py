"""The change of a subgroup's error rate, FNR or FPR between two files, with a paired bootstrap.

One network against its own compressed file (K = 1), as in `paired` (the measures of
the paired 2x2 table: flips, McNemar, Newcombe's interval): the test example is the unit, and
the reference prediction a_i and the candidate prediction b_i of example i are scored with the
same label y_i. Here the quantity is a rate of a subgroup (docs/spec.md §4.2: error rate, FNR, FPR)
and its change r_b − r_a, with a paired percentile bootstrap interval over the examples
(`scipy.stats.bootstrap`, at least 2000 resamples, seeded): the same resampled examples for
both files.

Inputs are int label arrays `[examples]` (y, a, b) and a boolean mask `[examples]` (the
subgroup). Pure numpy / scipy (no TensorFlow, nothing of the pipeline). Bad input raises
`validate.StatsInputError` (a `ValueError`) with a one-line message.
"""

import numpy as np
from scipy import stats

from tf_forget.stats import paired
from tf_forget.stats import validate

MIN_RESAMPLES = 2000
MEASURES = ("error", "fnr", "fpr")
BOOTSTRAP_METHOD = "paired_percentile_bootstrap"
# Resampled values held at once by the vectorized bootstrap (memory bound, not a tuning knob).
BOOTSTRAP_CELLS = 4_000_000


def rate_examples(y, a, b, mask, measure, positive):
  """Per-example indicators (a side, b side) whose mean is the rate, over its denominator set
  D (docs/spec.md §4.2): error = 1[ŷ ≠ y] over the subgroup; FNR = 1[ŷ ≠ +] over its actual
  positives; FPR = 1[ŷ = +] over its actual negatives (+ = `positive`)."""
  if measure == "error":
    keep = mask
    return (a[keep] != y[keep]), (b[keep] != y[keep])
  if measure == "fnr":  # FN / actual positives
    keep = mask & (y == positive)
    return a[keep] != positive, b[keep] != positive
  keep = mask & (y != positive)  # fpr: FP / actual negatives
  return a[keep] == positive, b[keep] == positive


def mean_change(err_a, err_b, axis=-1):
  """r_b − r_a = mean(e_b) − mean(e_a) of paired indicators (`rate_examples`) along `axis`."""
  return np.mean(err_b, axis=axis) - np.mean(err_a, axis=axis)


def paired_bootstrap_change(
  y,
  a,
  b,
  mask,
  measure,
  n_resamples=MIN_RESAMPLES,
  seed=0,
  confidence=paired.CONFIDENCE,
  positive=1,
):
  """Change of a subgroup's error / FNR / FPR with a paired percentile bootstrap interval.

  The rate r is a mean of per-example indicators over its denominator set D (docs/spec.md §4.2;
  positive = target `positive`): error: D = subgroup, [ŷ_i ≠ y_i]; FNR: D = subgroup
  positives, [ŷ_i ≠ positive]; FPR: D = subgroup negatives (y_i ≠ positive),
  [ŷ_i = positive]. The change is δ = r_b − r_a. Each of B resamples draws |D| indices from
  D with replacement, the same indices for a and b (paired), and recomputes δ*; the interval
  is the percentile interval [q_{α/2}(δ*), q_{1−α/2}(δ*)], α = 1 − confidence (Efron &
  Tibshirani 1993, ch. 13), via `scipy.stats.bootstrap(paired=True, vectorized=True,
  method="percentile")` with a numpy Generator seeded by `seed`. The bootstrap is conditional
  on |D| (the subgroup's positives are fixed for FNR), which is how the rate is defined.

  Args:
    y: int `[n]` true labels (binary target for fnr / fpr).
    a: int `[n]` reference predictions.
    b: int `[n]` candidate predictions.
    mask: bool `[n]` the subgroup (None: every example, the aggregate).
    measure: "error", "fnr" or "fpr".
    n_resamples: B >= 2000.
    seed: int (or numpy Generator) seeding the resampling; same seed, same interval.
    confidence: level in (0, 1).
    positive: the positive label for fnr / fpr.

  Returns:
    dict `measure`, `change` (δ), `rate_a`, `rate_b`, `low`, `high`, `n` (|D|),
    `n_resamples`, `confidence`, `method` ("paired_percentile_bootstrap"). `change` and the
    rates are NaN when D is empty; `low` / `high` are NaN when |D| < 2.

  Raises:
    validate.StatsInputError: as `paired.flips`, unknown measure, n_resamples < 2000, confidence
      outside (0, 1), negative `positive`.
  """
  if measure not in MEASURES:
    raise validate.StatsInputError(f"measure must be one of {MEASURES}, got {measure!r}")
  if int(n_resamples) != n_resamples or n_resamples < MIN_RESAMPLES:
    raise validate.StatsInputError(
      f"n_resamples must be an integer >= {MIN_RESAMPLES}, got {n_resamples}"
    )
  validate.check_confidence(confidence)
  if int(positive) != positive or positive < 0:
    raise validate.StatsInputError(f"positive must be a non-negative label, got {positive}")
  y, a, b, m = validate.check_triplet(y, a, b, mask)
  err_a, err_b = rate_examples(y, a, b, m, measure, int(positive))
  n = int(err_a.size)
  nan = float("nan")
  out = {
    "measure": measure,
    "n": n,
    "n_resamples": int(n_resamples),
    "confidence": confidence,
    "method": BOOTSTRAP_METHOD,
  }
  if n == 0:
    return dict(out, change=nan, rate_a=nan, rate_b=nan, low=nan, high=nan)
  out.update(
    change=float(mean_change(err_a, err_b)), rate_a=float(err_a.mean()), rate_b=float(err_b.mean())
  )
  if n < 2:
    return dict(out, low=nan, high=nan)
  res = stats.bootstrap(
    (err_a.astype(np.float64), err_b.astype(np.float64)),
    mean_change,
    n_resamples=int(n_resamples),
    batch=max(1, BOOTSTRAP_CELLS // n),
    vectorized=True,
    paired=True,
    confidence_level=confidence,
    method="percentile",
    rng=np.random.default_rng(seed),
  )
  return dict(out, low=float(res.confidence_interval.low), high=float(res.confidence_interval.high))
