"""Class-level measures of 000 §2.2 and Figure 2: which classes compression singles out.

* `mean_shifted_class_recall`: S_t^c = {β^c_{t,k} − β^M_{t,k}} (docs/spec.md §3.1).
* `welch_class_test`: two-tailed Welch t-test of S_t^c against S_0^c per class, p ≤ 0.05,
  optional Benjamini-Hochberg / Bonferroni correction (not in the paper, off by default).
* `count_significant_classes`: 000 Table 2 / Table 5 "# Signif classes".
* `relative_recall_difference`: 000 eq. 3 (docs/spec.md §3.2).
* `absolute_recall_difference`, `normalized_recall_difference`: 000 Figure 2 (docs/spec.md §3.3).
* `gained_lost_summary`: 000 §3.1 "Cannibalizing a small subset of classes" (docs/spec.md §3.3).

Inputs are per-member recalls `[members, classes]` and accuracies `[members]` from
`tf_forget.stats.accuracy` (paper: 000, docs/papers.md).
"""

import warnings

import numpy as np
import pandas as pd
from scipy import stats as sp_stats

from tf_forget.stats import validate

CENTERS = ("member", "population")
CORRECTIONS = (None, "bh", "bonferroni")


def _recall_and_accuracy(recall, accuracy, name):
  r = validate.check_finite(recall, f"{name}_recall", allow_nan=True, ndim=2)
  a = validate.check_finite(accuracy, f"{name}_accuracy", ndim=1)
  if r.shape[0] == 0:
    raise validate.StatsInputError(f"{name}_recall is an empty population (0 members)")
  if a.shape[0] != r.shape[0]:
    raise validate.StatsInputError(
      f"{name}_accuracy has {a.shape[0]} members but {name}_recall has {r.shape[0]}"
    )
  return r, a


def mean_shifted_class_recall(recall, accuracy, center="member"):
  """Mean-shifted class accuracy S^c = {β^c_k − β^M_k} (000 §2.2; docs/spec.md §3.1).

  Args:
    recall: float `[members, C]` per-class recall β^c_k.
    accuracy: float `[members]` overall accuracy β^M_k.
    center: "member" subtracts each member's own accuracy (000 §2.2 text, default);
      "population" subtracts the population mean accuracy (the authors' released code).

  Returns:
    float `[members, C]`.

  Raises:
    validate.StatsInputError: bad shapes or unknown `center`.
  """
  if center not in CENTERS:
    raise validate.StatsInputError(f"center must be one of {CENTERS}, got {center!r}")
  r, a = _recall_and_accuracy(recall, accuracy, "population")
  shift = a[:, None] if center == "member" else np.full((r.shape[0], 1), a.mean())
  return r - shift


def benjamini_hochberg(p_values):
  """Benjamini-Hochberg adjusted p-values; NaN entries stay NaN and are not counted.

  Args:
    p_values: float `[n]`.

  Returns:
    float `[n]` adjusted p-values (capped at 1).
  """
  p = np.asarray(p_values, dtype=np.float64)
  out = np.full_like(p, np.nan)
  ok = ~np.isnan(p)
  if ok.any():
    out[ok] = sp_stats.false_discovery_control(p[ok], method="bh")
  return out


def bonferroni(p_values, num_tests=None):
  """Bonferroni adjusted p-values min(1, p · m), m = number of non-NaN p-values by default."""
  p = np.asarray(p_values, dtype=np.float64)
  m = int((~np.isnan(p)).sum()) if num_tests is None else int(num_tests)
  return np.minimum(1.0, p * m)


def _constant_over_members(shifted):
  """bool `[C]`: the sample of a class has a single value (max == min over members).

  Decided exactly, not with `np.var(...) == 0`: the variance of bitwise identical floats is
  computed through their mean and can come out ~1e-33 instead of 0 (e.g. five copies of
  0.8 − 0.6), which scipy then treats as a real, tiny spread (docs/spec.md §3.1).
  """
  return np.all(shifted == shifted[:1], axis=0)


def welch_class_test(
  recall_0, accuracy_0, recall_t, accuracy_t, alpha=0.05, center="member", correction=None
):
  """Per-class two-tailed Welch t-test on mean-shifted class recall (000 §2.2; docs/spec.md §3.1).

  For each class c, tests S_t^c against S_0^c with
  `scipy.stats.ttest_ind(S_t^c, S_0^c, equal_var=False)`; the class is significant if
  p ≤ alpha (000: 0.05). A class whose two samples both have zero variance gets p = NaN and
  is not significant (docs/spec.md §3.1); so does a class absent from the test set (NaN recall).
  Populations need not be paired or of equal size.

  Zero variance is decided exactly: a sample is constant iff all its values are equal
  (max == min over members), not by `np.var(...) == 0`, which gives ~1e-33 on some runs of
  identical floats and lets scipy report p ≈ 0 for two constant samples. Exact equality
  is the right test for S_t^c = β^c_{t,k} − β^M_{t,k}: members with identical recall and
  accuracy get bitwise identical S (the same float subtraction; with
  `center="population"` the same scalar is subtracted from every member). It does not
  catch members whose S agree only in exact arithmetic (recall 0.7, accuracy 0.6 vs recall
  0.8, accuracy 0.7: 0.09999999999999998 vs 0.10000000000000009); such a sample counts as
  non-constant and scipy tests it as it is.

  Exactly one constant sample is not a special case: Welch's standard error is then that of
  the other sample alone (df = its size − 1) and scipy's finite p is kept.

  Args:
    recall_0: float `[K0, C]` per-class recall of the non-compressed population.
    accuracy_0: float `[K0]` accuracy of the non-compressed population.
    recall_t: float `[Kt, C]` per-class recall of the compressed population.
    accuracy_t: float `[Kt]` accuracy of the compressed population.
    alpha: significance level.
    center: see `mean_shifted_class_recall`.
    correction: None (default, as 000), "bh" (Benjamini-Hochberg) or "bonferroni",
      over the classes that have a p-value.

  Returns:
    DataFrame indexed by class with columns `t_statistic` (positive: the class gained
    relative to overall accuracy; ±inf if both samples are constant and differ, NaN if
    they are constant and equal), `p_value`, `p_adjusted` (= p_value if no correction),
    `significant` (bool), `mean_shift_0`, `mean_shift_t` (means of S_0^c, S_t^c).

  Raises:
    validate.StatsInputError: bad shapes, class counts differ, fewer than 2 members,
      unknown `correction`.
  """
  if correction not in CORRECTIONS:
    raise validate.StatsInputError(f"correction must be one of {CORRECTIONS}, got {correction!r}")
  s0 = mean_shifted_class_recall(recall_0, accuracy_0, center)
  st = mean_shifted_class_recall(recall_t, accuracy_t, center)
  if s0.shape[1] != st.shape[1]:
    raise validate.StatsInputError(
      f"recall_0 has {s0.shape[1]} classes but recall_t has {st.shape[1]}"
    )
  if s0.shape[0] < 2 or st.shape[0] < 2:
    raise validate.StatsInputError("Welch's t-test needs at least 2 members per population")
  with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
    # Constant samples (handled below by the NaN rule) make scipy warn about precision.
    warnings.simplefilter("ignore", RuntimeWarning)
    res = sp_stats.ttest_ind(st, s0, axis=0, equal_var=False)
  t_stat = np.asarray(res.statistic, dtype=np.float64)
  p = np.asarray(res.pvalue, dtype=np.float64)
  degenerate = _constant_over_members(s0) & _constant_over_members(st)
  missing = np.isnan(s0).any(axis=0) | np.isnan(st).any(axis=0)
  p = np.where(degenerate | missing, np.nan, p)
  # Two constant samples: t = ±inf if they differ, undefined if equal (scipy's value on
  # rounding-noise variances, e.g. -3.6e15, means nothing).
  with np.errstate(invalid="ignore"):
    t_degenerate = np.where(st[0] == s0[0], np.nan, np.copysign(np.inf, st[0] - s0[0]))
  t_stat = np.where(degenerate, t_degenerate, t_stat)
  t_stat = np.where(missing, np.nan, t_stat)
  if correction == "bh":
    p_adj = benjamini_hochberg(p)
  elif correction == "bonferroni":
    p_adj = bonferroni(p)
  else:
    p_adj = p.copy()
  significant = np.where(np.isnan(p_adj), False, p_adj <= alpha)
  return pd.DataFrame(
    {
      "t_statistic": t_stat,
      "p_value": p,
      "p_adjusted": p_adj,
      "significant": significant.astype(bool),
      "mean_shift_0": s0.mean(axis=0),
      "mean_shift_t": st.mean(axis=0),
    },
    index=pd.RangeIndex(s0.shape[1], name="class"),
  )


def count_significant_classes(test_result):
  """Number of significantly impacted classes (000 Table 2 / Table 5 "# Signif classes").

  Args:
    test_result: DataFrame from `welch_class_test`.

  Returns:
    int.
  """
  return int(np.asarray(test_result["significant"], dtype=bool).sum())


def relative_recall_difference(recall_0, recall_t):
  """Relative recall difference, 000 eq. 3: (1/K) Σ_k β^c_{t,k} / β^c_{0,k} (docs/spec.md §3.2).

  Members are paired by index k (docs/spec.md §1.3). A ratio of 1 means unchanged. A pair with
  β^c_{0,k} = 0 is left out of that class's mean and counted.

  Args:
    recall_0: float `[K, C]` per-class recall of the non-compressed population.
    recall_t: float `[K, C]` per-class recall of the compressed population.

  Returns:
    (ratio `[C]` float, NaN where no pair is usable; excluded `[C]` int, pairs left out).

  Raises:
    validate.StatsInputError: populations of different size (pairing needs equal K),
      shapes differ.
  """
  r0 = validate.check_finite(recall_0, "recall_0", allow_nan=True, ndim=2)
  rt = validate.check_finite(recall_t, "recall_t", allow_nan=True, ndim=2)
  validate.check_same_members(r0, rt, ("recall_0", "recall_t"), "eq. 3 pairs by index and")
  if r0.shape != rt.shape:
    raise validate.StatsInputError(f"recall_0 shape {r0.shape} != recall_t shape {rt.shape}")
  zero = r0 == 0
  usable = ~zero & ~np.isnan(r0) & ~np.isnan(rt)
  with np.errstate(invalid="ignore", divide="ignore"):
    ratio = np.where(usable, rt / np.where(usable, r0, 1.0), 0.0)
    n = usable.sum(axis=0)
    mean = np.where(n > 0, ratio.sum(axis=0) / np.maximum(n, 1), np.nan)
  return mean, zero.sum(axis=0).astype(np.int64)


def absolute_recall_difference(recall_0, recall_t):
  """Absolute recall difference, 000 Figure 2 bars: mean_k β^c_{t,k} − mean_k β^c_{0,k}.

  docs/spec.md §3.3. Populations may differ in size.

  Args:
    recall_0: float `[K0, C]`.
    recall_t: float `[Kt, C]`.

  Returns:
    float `[C]` (fractions; NaN for a class absent from the test set).
  """
  r0 = validate.check_finite(recall_0, "recall_0", allow_nan=True, ndim=2)
  rt = validate.check_finite(recall_t, "recall_t", allow_nan=True, ndim=2)
  if r0.shape[1] != rt.shape[1]:
    raise validate.StatsInputError(
      f"recall_0 has {r0.shape[1]} classes but recall_t has {rt.shape[1]}"
    )
  return rt.mean(axis=0) - r0.mean(axis=0)


def normalized_recall_difference(recall_0, accuracy_0, recall_t, accuracy_t):
  """Normalized recall difference, 000 Figure 2 points (docs/spec.md §3.3).

  (mean_k β^c_{t,k} − mean_k β^c_{0,k}) − (mean_k β^M_{t,k} − mean_k β^M_{0,k}).

  Args:
    recall_0: float `[K0, C]`; accuracy_0: float `[K0]`.
    recall_t: float `[Kt, C]`; accuracy_t: float `[Kt]`.

  Returns:
    float `[C]`.
  """
  r0, a0 = _recall_and_accuracy(recall_0, accuracy_0, "baseline")
  rt, at = _recall_and_accuracy(recall_t, accuracy_t, "compressed")
  return absolute_recall_difference(r0, rt) - (at.mean() - a0.mean())


def gained_lost_summary(difference, significant):
  """Gains and losses among significant classes (000 §3.1 "Cannibalizing"; docs/spec.md §3.3).

  Args:
    difference: float `[C]` per-class change (e.g. `normalized_recall_difference`).
    significant: bool `[C]` (e.g. `welch_class_test(...)["significant"]`).

  Returns:
    dict: `n_significant`, `n_gained`, `n_lost` (difference > 0 / < 0 among significant
    classes), `mean_gain`, `mean_loss` (mean difference over gained / lost classes; NaN if
    none; `mean_loss` is negative).
  """
  d = np.asarray(difference, dtype=np.float64)
  s = np.asarray(significant, dtype=bool)
  if d.shape != s.shape:
    raise validate.StatsInputError(f"difference shape {d.shape} != significant shape {s.shape}")
  gained = s & (d > 0)
  lost = s & (d < 0)
  return {
    "n_significant": int(s.sum()),
    "n_gained": int(gained.sum()),
    "n_lost": int(lost.sum()),
    "mean_gain": float(d[gained].mean()) if gained.any() else float("nan"),
    "mean_loss": float(d[lost].mean()) if lost.any() else float("nan"),
  }


def class_level_report(
  recall_0, accuracy_0, recall_t, accuracy_t, alpha=0.05, center="member", correction=None
):
  """All per-class measures of 000 §2.2 / Figure 2 in one table.

  Args:
    recall_0, accuracy_0, recall_t, accuracy_t, alpha, center, correction: see
      `welch_class_test`. Relative recall difference (eq. 3) is included only when the
      populations have equal size (pairing by index, docs/spec.md §1.3); otherwise its columns are
      NaN.

  Returns:
    DataFrame indexed by class: the `welch_class_test` columns plus
    `absolute_recall_difference`, `normalized_recall_difference`,
    `relative_recall_difference`, `relative_excluded_pairs`.
  """
  table = welch_class_test(recall_0, accuracy_0, recall_t, accuracy_t, alpha, center, correction)
  table["absolute_recall_difference"] = absolute_recall_difference(recall_0, recall_t)
  table["normalized_recall_difference"] = normalized_recall_difference(
    recall_0, accuracy_0, recall_t, accuracy_t
  )
  if np.shape(recall_0)[0] == np.shape(recall_t)[0]:
    rel, excluded = relative_recall_difference(recall_0, recall_t)
  else:
    rel = np.full(table.shape[0], np.nan)
    excluded = np.zeros(table.shape[0], dtype=np.int64)
  table["relative_recall_difference"] = rel
  table["relative_excluded_pairs"] = excluded
  return table
