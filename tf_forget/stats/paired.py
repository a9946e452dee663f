"""Paired per-example measures of one network against its own compressed file.

Design. The papers compare populations of K trained networks (docs/spec.md §1.3), so their tests and
intervals (`class_level.welch_class_test`, `intervals.mean_difference_interval`) treat the
training seed as the unit and need K >= 2. A user who audits ONE network (K = 1: their
model.keras against their int8 .tflite) has no spread over seeds; the uncertainty left is that of
the finite test set, and the two files are scored on the same examples. Here the test example is
the unit and every measure is paired per example: for example i, the reference prediction a_i and
the candidate prediction b_i are compared with the same label y_i. The conclusions are about
this trained network on data like this test set, never about the training recipe (another seed
may forget other examples).

Methods (the report names them as written here):

* `flips`: per-example broken / fixed / changed / unchanged categories and their counts.
* `mcnemar_exact`: exact two-sided McNemar test of top-1 correctness (McNemar 1947), the
  binomial test of the discordant pairs, `scipy.stats.binomtest`; `forgot_significantly`: a
  file worth repairing (more than a few broken examples, McNemar significant).
* `paired_accuracy_difference`: acc(b) − acc(a) with Newcombe's hybrid score interval for paired
  proportions (Newcombe 1998, method 10) built from Wilson intervals.
* `per_class_recall_change`: recall change per class, exact McNemar per class,
  Benjamini-Hochberg adjusted p-values (`scipy.stats.false_discovery_control`).

The change of a subgroup's error rate / FNR / FPR with a paired bootstrap over the same
examples is `paired_bootstrap.paired_bootstrap_change`.

Inputs are int label arrays `[examples]` (labels y, reference predictions a, candidate
predictions b) and optional boolean masks `[examples]` that restrict a measure to a subset.
Pure numpy / scipy (no TensorFlow, nothing of the pipeline). Bad input raises
`validate.StatsInputError` (a `ValueError`) with a one-line message.
"""

import dataclasses

import numpy as np
from scipy import stats

from tf_forget.stats import validate

CONFIDENCE = 0.95
INTERVAL_METHOD = "newcombe_hybrid_score"  # Newcombe (1998) method 10
# `forgot_significantly`: more broken examples than this, and McNemar p <= REPAIR_ALPHA.
REPAIR_MIN_BROKEN = 3
REPAIR_ALPHA = 0.05


@dataclasses.dataclass(frozen=True)
class Flips:
  """Per-example flip categories; the four masks are disjoint and cover the selected examples.

  Attributes:
    broken: bool `[n]`, a right and b wrong (n01).
    fixed: bool `[n]`, a wrong and b right (n10).
    changed: bool `[n]`, a wrong, b wrong and b != a (a different wrong label).
    unchanged: bool `[n]`, both right, or both wrong with the same label.
    selected: bool `[n]`, the examples counted (the mask; all True without one).
  """

  broken: np.ndarray
  fixed: np.ndarray
  changed: np.ndarray
  unchanged: np.ndarray
  selected: np.ndarray

  @property
  def counts(self):
    """dict category -> int count, plus `n` (selected examples)."""
    return {
      "broken": int(self.broken.sum()),
      "fixed": int(self.fixed.sum()),
      "changed": int(self.changed.sum()),
      "unchanged": int(self.unchanged.sum()),
      "n": int(self.selected.sum()),
    }


def flips(y, a, b, mask=None):
  """Per-example flip categories between a reference and a candidate prediction.

  With r_i = [a_i = y_i] and s_i = [b_i = y_i]:
  broken_i = r_i ∧ ¬s_i, fixed_i = ¬r_i ∧ s_i, changed_i = ¬r_i ∧ ¬s_i ∧ (b_i ≠ a_i),
  unchanged_i = the rest (r_i ∧ s_i, or ¬r_i ∧ ¬s_i ∧ b_i = a_i).

  Args:
    y: int `[n]` true labels.
    a: int `[n]` reference top-1 predictions (e.g. the Keras model).
    b: int `[n]` candidate top-1 predictions (e.g. its compressed file).
    mask: optional bool `[n]`; only these examples are categorized (the others are False in
      every mask).

  Returns:
    `Flips` with full-length boolean masks (indices into the test set) and `counts`.

  Raises:
    validate.StatsInputError: non-1-D, empty, negative or non-integer labels, unequal lengths.
  """
  y, a, b, m = validate.check_triplet(y, a, b, mask)
  right_a, right_b = a == y, b == y
  broken = right_a & ~right_b & m
  fixed = ~right_a & right_b & m
  changed = ~right_a & ~right_b & (a != b) & m
  unchanged = m & ~(broken | fixed | changed)
  return Flips(broken=broken, fixed=fixed, changed=changed, unchanged=unchanged, selected=m)


def _mcnemar_p(n01, n10):
  """Exact two-sided McNemar p for the discordant counts (1 when there is none)."""
  m = n01 + n10
  if m == 0:
    return 1.0
  return float(stats.binomtest(min(n01, n10), m, 0.5, alternative="two-sided").pvalue)


def mcnemar_p(broken, fixed):
  """The exact two-sided McNemar p of `mcnemar_exact` from the discordant counts."""
  return _mcnemar_p(int(broken), int(fixed))


def forgot_significantly(broken, fixed, min_broken=REPAIR_MIN_BROKEN, alpha=REPAIR_ALPHA):
  """Whether a compressed file forgot something worth repairing.

  It did when it broke more than `min_broken` examples (right in the reference, wrong in the
  file) and the exact McNemar test of broken vs fixed rejects equal accuracy at `alpha`: a
  file that breaks as many examples as it fixes, or a handful, forgot nothing a repair could
  show to be won back.

  Args:
    broken, fixed: the file's flip counts against its reference (`flips`).
    min_broken: broken examples at most which nothing counts as forgotten.
    alpha: level of the McNemar test.

  Returns:
    (bool, the McNemar p-value).
  """
  p = mcnemar_p(broken, fixed)
  return bool(int(broken) > min_broken and p <= alpha), p


def mcnemar_exact(y, a, b, mask=None):
  """Exact two-sided McNemar test of top-1 correctness (McNemar 1947; exact form).

  Only discordant examples carry information: n01 = broken (a right, b wrong), n10 = fixed
  (a wrong, b right), m = n01 + n10. Under H0 (equal accuracy) n01 ~ Binomial(m, 1/2), so

    p = min(1, 2 · Σ_{k=0}^{min(n01, n10)} C(m, k) 2^{−m}),

  computed with `scipy.stats.binomtest(min(n01, n10), m, 0.5)`; p = 1 when m = 0.

  Args:
    y: int `[n]` true labels.
    a: int `[n]` reference predictions.
    b: int `[n]` candidate predictions.
    mask: optional bool `[n]` subset of examples.

  Returns:
    dict `broken` (n01), `fixed` (n10), `discordant` (m), `statistic` (min(n01, n10), the
    binomial test's k), `p_value`, `n` (examples tested).

  Raises:
    validate.StatsInputError: as `flips`.
  """
  c = flips(y, a, b, mask).counts
  n01, n10 = c["broken"], c["fixed"]
  return {
    "broken": n01,
    "fixed": n10,
    "discordant": n01 + n10,
    "statistic": min(n01, n10),
    "p_value": _mcnemar_p(n01, n10),
    "n": c["n"],
  }


def _newcombe_interval(both, fixed, broken, neither, confidence):
  """Newcombe (1998) method 10 for p_b − p_a from the paired 2x2 counts; (low, high)."""
  n = both + fixed + broken + neither
  right_b, right_a = both + fixed, both + broken
  p_b, p_a = right_b / n, right_a / n
  l_b, u_b = stats.binomtest(right_b, n).proportion_ci(confidence, method="wilson")
  l_a, u_a = stats.binomtest(right_a, n).proportion_ci(confidence, method="wilson")
  margins = [right_b, n - right_b, right_a, n - right_a]
  cross = both * neither - fixed * broken
  if min(margins) == 0 or 0 <= cross <= n / 2:
    phi = 0.0
  else:
    phi = (cross - n / 2 if cross > 0 else cross) / np.sqrt(np.prod(margins, dtype=np.float64))
  d = p_b - p_a
  low = d - np.sqrt((p_b - l_b) ** 2 - 2 * phi * (p_b - l_b) * (u_a - p_a) + (u_a - p_a) ** 2)
  high = d + np.sqrt((p_a - l_a) ** 2 - 2 * phi * (p_a - l_a) * (u_b - p_b) + (u_b - p_b) ** 2)
  return float(max(low, -1.0)), float(min(high, 1.0))


def paired_accuracy_difference(y, a, b, confidence=CONFIDENCE, mask=None):
  """acc(b) − acc(a) on the same examples with Newcombe's paired hybrid score interval.

  Δ = p_b − p_a = (n10 − n01) / n (n10 fixed, n01 broken). The interval is Newcombe (1998)
  method 10 (Newcombe, "Improved confidence intervals for the difference between binomial
  proportions based on paired data", Statistics in Medicine 17:2635-2650), as given by
  Fagerland, Lydersen & Laake (Statistical Analysis of Contingency Tables, 2017, ch. 8,
  "Newcombe square-and-add"). With Wilson intervals (l_b, u_b) for p_b and (l_a, u_a) for p_a
  (`scipy.stats.binomtest(...).proportion_ci(method="wilson")`):

    L = Δ − sqrt((p_b − l_b)² − 2φ(p_b − l_b)(u_a − p_a) + (u_a − p_a)²)
    U = Δ + sqrt((p_a − l_a)² − 2φ(p_a − l_a)(u_b − p_b) + (u_b − p_b)²)

  where φ estimates the correlation of the two correctness indicators from the 2x2 table
  (both right r, fixed s, broken t, both wrong u; margins e..h): with A = ru − st,
  φ = (A − n/2)/sqrt(efgh) if A > n/2, 0 if 0 ≤ A ≤ n/2, A/sqrt(efgh) if A < 0, and 0 if a
  margin is empty. Limits are clipped to [−1, 1]. The interval accounts for the pairing (a
  correlation near 1, the usual case for a compressed copy, narrows it) and does not
  collapse when there is no discordant pair.

  Args:
    y: int `[n]` true labels.
    a: int `[n]` reference predictions.
    b: int `[n]` candidate predictions.
    confidence: level in (0, 1).
    mask: optional bool `[n]` subset of examples.

  Returns:
    dict `difference`, `low`, `high` (NaN if no example is selected), `accuracy_a`,
    `accuracy_b`, `broken`, `fixed`, `n`, `confidence`, `method` ("newcombe_hybrid_score").

  Raises:
    validate.StatsInputError: as `flips`, or a confidence outside (0, 1).
  """
  validate.check_confidence(confidence)
  y, a, b, m = validate.check_triplet(y, a, b, mask)
  return _paired_proportions(a[m] == y[m], b[m] == y[m], confidence)


def _paired_proportions(right_a, right_b, confidence):
  n = int(right_a.size)
  out = {
    "n": n,
    "confidence": confidence,
    "method": INTERVAL_METHOD,
    "broken": int((right_a & ~right_b).sum()),
    "fixed": int((~right_a & right_b).sum()),
  }
  if n == 0:
    nan = float("nan")
    return dict(out, difference=nan, low=nan, high=nan, accuracy_a=nan, accuracy_b=nan)
  both = int((right_a & right_b).sum())
  neither = n - both - out["broken"] - out["fixed"]
  low, high = _newcombe_interval(both, out["fixed"], out["broken"], neither, confidence)
  return dict(
    out,
    difference=(out["fixed"] - out["broken"]) / n,
    low=low,
    high=high,
    accuracy_a=float(right_a.mean()),
    accuracy_b=float(right_b.mean()),
  )


def per_class_recall_change(y, a, b, num_classes, alpha=0.05, confidence=CONFIDENCE, mask=None):
  """Per-class recall change with exact McNemar tests and Benjamini-Hochberg adjustment.

  For class c over its examples E_c = {i : y_i = c} (n_c = |E_c|): recall R^c_a = mean[a_i = c],
  ΔR^c = R^c_b − R^c_a = (n10^c − n01^c) / n_c, an exact McNemar p^c as in `mcnemar_exact`, a
  Newcombe interval as in `paired_accuracy_difference`, and BH adjusted p-values
  p̃^(i) = min_{j ≥ i} min(1, m p^(j) / j) over the m classes that have examples
  (`scipy.stats.false_discovery_control(method="bh")`). Class c is significant iff
  p̃^c ≤ alpha. A class with no example (in the mask) gets NaN change, p and adjusted p, is
  never significant, and is left out of the BH family (m counts only classes with examples).

  Args:
    y: int `[n]` true labels in [0, num_classes).
    a: int `[n]` reference predictions in [0, num_classes).
    b: int `[n]` candidate predictions in [0, num_classes).
    num_classes: C.
    alpha: false discovery rate level in (0, 1).
    confidence: level of the per-class intervals in (0, 1).
    mask: optional bool `[n]` subset of examples.

  Returns:
    dict of arrays `[C]`: `n` (examples of the class), `recall_a`, `recall_b`, `change`,
    `low`, `high`, `broken`, `fixed`, `p_value`, `p_adjusted`, `significant` (bool); and
    `num_tests` (int m, classes in the BH family).

  Raises:
    validate.StatsInputError: as `flips`, labels out of range, alpha or confidence outside
      (0, 1).
  """
  if num_classes is None or int(num_classes) < 1:
    raise validate.StatsInputError(f"num_classes must be a positive int, got {num_classes}")
  validate.check_confidence(alpha, "alpha")
  validate.check_confidence(confidence)
  y, a, b, m = validate.check_triplet(y, a, b, mask, int(num_classes))
  nan = np.full(num_classes, np.nan)
  out: dict  # arrays [C], and the int `num_tests`
  out = {
    "n": np.zeros(num_classes, dtype=np.int64),
    "recall_a": nan.copy(),
    "recall_b": nan.copy(),
    "change": nan.copy(),
    "low": nan.copy(),
    "high": nan.copy(),
    "broken": np.zeros(num_classes, dtype=np.int64),
    "fixed": np.zeros(num_classes, dtype=np.int64),
    "p_value": nan.copy(),
  }
  for c in range(num_classes):
    sel = m & (y == c)
    if not sel.any():
      continue
    r = _paired_proportions(a[sel] == c, b[sel] == c, confidence)
    out["n"][c], out["broken"][c], out["fixed"][c] = r["n"], r["broken"], r["fixed"]
    out["recall_a"][c], out["recall_b"][c] = r["accuracy_a"], r["accuracy_b"]
    out["change"][c], out["low"][c], out["high"][c] = r["difference"], r["low"], r["high"]
    out["p_value"][c] = _mcnemar_p(r["broken"], r["fixed"])
  tested = ~np.isnan(out["p_value"])
  out["p_adjusted"] = nan.copy()
  if tested.any():
    out["p_adjusted"][tested] = stats.false_discovery_control(out["p_value"][tested], method="bh")
  out["significant"] = np.where(tested, out["p_adjusted"] <= alpha, False).astype(bool)
  out["num_tests"] = int(tested.sum())
  return out
