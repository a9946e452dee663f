"""Audits without labels: does the compressed file decide like its reference on these images?

Design (docs/spec.md §8). A deployment has many images and no labels, so accuracy cannot be
measured on them; what can be is whether the compressed file b takes the decisions of its
reference model a. As in `paired`, one network is audited (K = 1) and the example is the unit:
example i has the reference's top-1 prediction a_i and the file's b_i (argmax, the first class
on ties, docs/spec.md §1.2). A flip is a_i ≠ b_i. No measure here knows which side is right: a
flip is a decision the compression changed, not an error. Every conclusion is about this network
and this file on images like these (their class mix is the deployment's, not a test set's),
never about accuracy nor about the training recipe.

Methods on the predictions (the report names them as written here):

* `flip_rate`: flips / n and the agreement 1 − flips / n with Clopper–Pearson exact intervals
  (`clopper_pearson`: `scipy.stats.binomtest(...).proportion_ci(method="exact")`).
* `class_transitions`: the reference × file table of predictions; `largest_transitions`: its
  largest off-diagonal cells (which decisions moved, from which class to which).
* `per_class_shift`: per reference class, its flip rate with an exact interval, and the
  decisions that left the class against those that entered it: exact two-sided McNemar test
  (a binomial test) of the file's share of the class, Benjamini–Hochberg over the classes.
* `marginal_homogeneity`: Stuart–Maxwell test of marginal homogeneity (did the distribution of
  predicted classes shift?) and Bowker's test of symmetry (statsmodels' `SquareTable`).

The measures that need the logits (the reference's confidence, confident flips, the change of
the reference class's probability, KL) are in `unlabelled_confidence`.

Inputs: int predictions `[examples]` (a, b) and an optional boolean mask `[examples]` that
restricts a measure to a subset; the table functions take the `class_transitions` table. Pure
numpy / scipy / statsmodels (no TensorFlow, nothing of the pipeline). Bad input raises
`validate.StatsInputError` (a `ValueError`) with a one-line message.
"""

import numpy as np
import pandas as pd
from scipy import stats
from scipy.sparse import csgraph
from statsmodels.stats import contingency_tables

from tf_forget.stats import paired
from tf_forget.stats import validate

CONFIDENCE = 0.95
INTERVAL_METHOD = "clopper_pearson"  # exact binomial interval (Clopper & Pearson 1934)
FDR_ALPHA = 0.05  # Benjamini–Hochberg level of `per_class_shift`


def clopper_pearson(k, n, confidence=CONFIDENCE):
  """Clopper–Pearson exact interval (low, high) for k successes in n trials; NaNs when n = 0.

  low = B(α/2; k, n − k + 1), high = B(1 − α/2; k + 1, n − k) with B the beta quantile and
  α = 1 − confidence (low = 0 at k = 0, high = 1 at k = n), computed by
  `scipy.stats.binomtest(k, n).proportion_ci(confidence, method="exact")`.
  """
  if n == 0:
    return float("nan"), float("nan")
  ci = stats.binomtest(int(k), int(n)).proportion_ci(confidence, method="exact")
  return float(ci.low), float(ci.high)


def _check_pair(a, b, num_classes=None, mask=None):
  a = validate.check_labels(a, num_classes, name="a")
  b = validate.check_labels(b, num_classes, name="b")
  if b.shape[0] != a.shape[0]:
    raise validate.StatsInputError(f"b has {b.shape[0]} examples but a has {a.shape[0]}")
  return a, b, validate.check_mask(mask, a.shape[0])


def _check_num_classes(num_classes):
  if isinstance(num_classes, bool) or not isinstance(num_classes, (int, np.integer)):
    raise validate.StatsInputError(f"num_classes must be a positive int, got {num_classes!r}")
  if num_classes < 1:
    raise validate.StatsInputError(f"num_classes must be a positive int, got {num_classes}")
  return int(num_classes)


def flip_rate(a, b, mask=None, confidence=CONFIDENCE):
  """Share of examples whose top-1 decision the file changed, with an exact interval.

  f = #{i : a_i ≠ b_i} / n over the n selected examples, with the Clopper–Pearson interval of
  `clopper_pearson`; the agreement 1 − f has the interval (1 − high, 1 − low), the same
  interval counted from the other side.

  Args:
    a: int `[n]` reference top-1 predictions; b: the file's.
    mask: optional bool `[n]`, the examples counted.
    confidence: level in (0, 1).

  Returns:
    dict `n`, `flips`, `flip_rate`, `low`, `high`, `agreement`, `agreement_low`,
    `agreement_high` (NaN when the mask selects nothing), `confidence`, `method`.

  Raises:
    validate.StatsInputError: non-1-D, empty, negative or non-integer predictions, unequal
      lengths, a bad mask or a confidence outside (0, 1).
  """
  validate.check_confidence(confidence)
  a, b, m = _check_pair(a, b, mask=mask)
  n, k = int(m.sum()), int((m & (a != b)).sum())
  low, high = clopper_pearson(k, n, confidence)
  rate = k / n if n else float("nan")
  return {
    "n": n,
    "flips": k,
    "flip_rate": rate,
    "low": low,
    "high": high,
    "agreement": 1.0 - rate,
    "agreement_low": 1.0 - high,
    "agreement_high": 1.0 - low,
    "confidence": confidence,
    "method": INTERVAL_METHOD,
  }


def class_transitions(a, b, num_classes, mask=None):
  """int64 `[C, C]` table T of the two files' predictions: T_jk = #{i : a_i = j, b_i = k}.

  Rows are the reference's class, columns the file's; the diagonal holds the agreements, the
  off-diagonal cells the flips (from row class to column class).

  Raises:
    validate.StatsInputError: as `flip_rate`, predictions out of [0, num_classes).
  """
  c = _check_num_classes(num_classes)
  a, b, m = _check_pair(a, b, c, mask)
  return np.bincount(a[m] * c + b[m], minlength=c * c).reshape(c, c).astype(np.int64)


def _check_table(table):
  t = validate.check_finite(table, "table", ndim=2)
  if t.shape[0] != t.shape[1]:
    raise validate.StatsInputError(f"table must be square [C, C], got shape {t.shape}")
  if (t < 0).any() or (t != np.round(t)).any():
    raise validate.StatsInputError("table must hold counts (whole numbers >= 0)")
  return t.astype(np.int64)


def largest_transitions(table, m=10):
  """The m largest off-diagonal cells of a `class_transitions` table, as a DataFrame.

  One row per (reference, candidate) class pair with T_jk > 0, j ≠ k, by count descending
  (ties: lower reference, then candidate class first): `count` = T_jk, `share_of_flips` =
  T_jk / Σ_{j≠k} T_jk, `share_of_reference` = T_jk / Σ_k T_jk (of the reference's class j).

  Raises:
    validate.StatsInputError: not a square table of counts, m not an integer >= 0.
  """
  t = _check_table(table)
  if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 0:
    raise validate.StatsInputError(f"m must be an integer >= 0, got {m!r}")
  off = t.copy()
  np.fill_diagonal(off, 0)
  j, k = np.nonzero(off)  # row-major: ties stay by (reference, candidate)
  order = np.argsort(-off[j, k], kind="stable")[: int(m)]
  j, k = j[order], k[order]
  return pd.DataFrame(
    {
      "reference": j,
      "candidate": k,
      "count": off[j, k],
      "share_of_flips": off[j, k] / max(int(off.sum()), 1),
      "share_of_reference": off[j, k] / t.sum(axis=1)[j],
    }
  )


def per_class_shift(table, alpha=FDR_ALPHA, confidence=CONFIDENCE):
  """Per reference class: its flip rate, and whether the file's share of the class changed.

  From T = `class_transitions`, for class c: n_c = Σ_k T_ck (a = c), left_c = n_c − T_cc
  (a = c, b ≠ c: the class's flips), entered_c = Σ_j T_jc − T_cc (a ≠ c, b = c). The flip rate
  left_c / n_c has a Clopper–Pearson interval (as `flip_rate`). The file's share of c changes
  by (entered_c − left_c) / N; the exact two-sided McNemar test of the 2x2 table "c or not c"
  under a and b tests it: under H0 left_c ~ Binomial(left_c + entered_c, 1/2),
  p = min(1, 2 Σ_{k ≤ min(left, entered)} C(m, k) 2^{−m}) (`paired.mcnemar_p`; 1 without a
  flip). Benjamini–Hochberg adjusted p over the classes either file predicts
  (`scipy.stats.false_discovery_control(method="bh")`); c is significant iff p̃_c ≤ alpha.
  A class neither file predicts has NaN rates and p, and is outside the BH family.

  A file that swaps two classes evenly (as many decisions c → d as d → c) leaves both shares
  unchanged, so this test does not see it: its trace is the class's flip rate (and `high`),
  which a per-class flip-rate bound checks, and the table's cells.

  Args:
    table: int `[C, C]` from `class_transitions`.
    alpha: false discovery rate level in (0, 1).
    confidence: level of the flip-rate intervals in (0, 1).

  Returns:
    dict of arrays `[C]`: `n` (a = c), `n_candidate` (b = c), `left`, `entered`, `flip_rate`,
    `low`, `high`, `share_change`, `p_value`, `p_adjusted`, `significant` (bool); and
    `num_tests` (int, classes in the BH family).

  Raises:
    validate.StatsInputError: not a square table of counts, alpha or confidence outside (0, 1).
  """
  validate.check_confidence(alpha, "alpha")
  validate.check_confidence(confidence)
  t = _check_table(table)
  diag, n, n_b = np.diag(t), t.sum(axis=1), t.sum(axis=0)
  left, entered = n - diag, n_b - diag
  c = t.shape[0]
  out: dict  # arrays [C], and the int `num_tests`
  out = {"n": n, "n_candidate": n_b, "left": left, "entered": entered}
  out["flip_rate"] = np.divide(left, n, out=np.full(c, np.nan), where=n > 0)
  out["low"], out["high"] = np.full(c, np.nan), np.full(c, np.nan)
  for k in np.flatnonzero(n):
    out["low"][k], out["high"][k] = clopper_pearson(left[k], n[k], confidence)
  out["share_change"] = (entered - left) / max(int(t.sum()), 1)
  tested = (n + n_b) > 0
  out["p_value"], out["p_adjusted"] = np.full(c, np.nan), np.full(c, np.nan)
  out["p_value"][tested] = [paired.mcnemar_p(left[k], entered[k]) for k in np.flatnonzero(tested)]
  if tested.any():
    out["p_adjusted"][tested] = stats.false_discovery_control(out["p_value"][tested], method="bh")
  out["significant"] = np.where(tested, out["p_adjusted"] <= alpha, False).astype(bool)
  out["num_tests"] = int(tested.sum())
  return out


def _chi2_result(statistic, df):
  """statistic, df and its χ² upper tail; with df = 0 (nothing tested) 0, 0 and p = 1."""
  if df == 0:
    return {"statistic": 0.0, "df": 0, "p_value": 1.0}
  return {
    "statistic": float(statistic),
    "df": int(df),
    "p_value": float(stats.chi2.sf(statistic, df)),
  }


def marginal_homogeneity(table):
  """Stuart–Maxwell test of marginal homogeneity and Bowker's test of symmetry.

  Stuart–Maxwell (Stuart 1955, Maxwell 1970): H0 the reference's and the file's predicted-class
  distributions are equal. With d_j = n_j· − n_·j and V_jj = n_j· + n_·j − 2 n_jj,
  V_jk = −(n_jk + n_kj) over C − 1 classes (the last dropped: Σ d_j = 0), X² = dᵀ V⁻¹ d ~ χ²
  with C − 1 df. Bowker (1948): H0 n_jk and n_kj have equal expectations for every pair,
  X² = Σ_{j<k} (n_jk − n_kj)² / (n_jk + n_kj). Statistics from statsmodels
  (`SquareTable(shift_zeros=False)`: `.homogeneity("stuart_maxwell")`, `.symmetry("bowker")`),
  p from `scipy.stats.chi2.sf`.

  Classes (docs/spec.md §8.4): only the classes with at least one flip (in or out) are tested;
  the others, among them every class neither file predicts, have d_j = 0 and add nothing to
  either statistic but a singular V or degrees of freedom. When the flips fall into
  disconnected groups of classes (no flip between groups), V is block-diagonal and singular if
  kept whole: X² is the sum of the groups' Stuart–Maxwell statistics with Σ (C_g − 1) df.
  Bowker's df counts the class pairs with a flip (a pair without one has a term of 0 whatever
  H0 says); statsmodels' C(C − 1)/2 would give a 1000-class model 5·10⁵ df and no power. No
  flip at all (a 1×1 table, or agreement everywhere): statistics 0, df 0, p = 1.

  Args:
    table: int `[C, C]` from `class_transitions`.

  Returns:
    dict `stuart_maxwell` and `bowker` (each a dict `statistic`, `df`, `p_value`), `classes`
    (int64 indices of the classes tested), `groups` (connected groups of them), `flips`, `n`.

  Raises:
    validate.StatsInputError: not a square table of counts.
  """
  t = _check_table(table)
  pairs = t + t.T
  np.fill_diagonal(pairs, 0)
  classes = np.flatnonzero(pairs.any(axis=1))
  out = {"classes": classes.astype(np.int64), "flips": int(pairs.sum()) // 2, "n": int(t.sum())}
  if classes.size == 0:
    return dict(out, stuart_maxwell=_chi2_result(0.0, 0), bowker=_chi2_result(0.0, 0), groups=0)
  sub, linked = t[np.ix_(classes, classes)], pairs[np.ix_(classes, classes)] > 0
  groups, group_of = csgraph.connected_components(linked, directed=False)
  stuart = 0.0
  for g in range(groups):
    idx = np.flatnonzero(group_of == g)
    square = contingency_tables.SquareTable(sub[np.ix_(idx, idx)], shift_zeros=False)
    stuart += float(square.homogeneity(method="stuart_maxwell").statistic)
  bowker = contingency_tables.SquareTable(sub, shift_zeros=False).symmetry(method="bowker")
  return dict(
    out,
    stuart_maxwell=_chi2_result(stuart, classes.size - groups),
    bowker=_chi2_result(bowker.statistic, int(linked.sum()) // 2),
    groups=int(groups),
  )
