"""The class-level measures of one compressed variant against the dense population.

000 §2.2 and Figure 2 (docs/spec.md §3.1-3.3), computed with `tf_forget.stats.class_level` on a
`collect.Run`: per class, the Welch test of the recall over members, the absolute / normalized
recall difference and eq. 3's relative one (over paired members, `tf_forget.report.pairing`),
the interval of each class's recall change and the Benjamini-Hochberg adjusted p;
and the counts of significant classes the variant's summary shows. The `classes` unit
(`units.classes`) puts these in the report.
"""

import numpy as np
import pandas as pd

from tf_forget.artifacts import names
from tf_forget.report import pairing as pairing_lib
from tf_forget.stats import accuracy
from tf_forget.stats import class_level
from tf_forget.stats import intervals
from tf_forget.stats import validate


def recall_and_accuracy(pop, num_classes):
  """(per-class recall float `[members, C]`, top-1 accuracy float `[members]`) of a
  population's rows (`collect.SplitPredictions`)."""
  return (
    accuracy.per_class_recall(pop.top1, pop.labels, num_classes),
    accuracy.top1_accuracy(pop.top1, pop.labels),
  )


def class_table(run, variant, alpha=0.05, center="member", correction=None):
  """Per-class Welch test and recall differences of one variant vs dense (000 Figure 2).

  Uses every member for the test and the absolute / normalized differences, the shared
  member indices for eq. 3's relative difference (docs/spec.md §3.2). With fewer than 2 members in
  a population the test columns are NaN (not significant).

  Returns:
    (DataFrame indexed by class: `class_name` plus the `class_level.class_level_report`
    columns; list of notes).
  """
  notes = []
  pop_0, pop_t = run.eval[names.DENSE], run.eval[variant]
  r0, a0 = recall_and_accuracy(pop_0, run.num_classes)
  rt, at = recall_and_accuracy(pop_t, run.num_classes)
  try:
    table = class_level.class_level_report(
      r0, a0, rt, at, alpha=alpha, center=center, correction=correction
    )
  except validate.StatsInputError as e:
    notes.append(f"{variant}: Welch test not computed ({e})")
    nan = np.full(run.num_classes, np.nan)
    table = pd.DataFrame(
      {
        "t_statistic": nan,
        "p_value": nan,
        "p_adjusted": nan,
        "significant": np.zeros(run.num_classes, bool),
        "mean_shift_0": nan,
        "mean_shift_t": nan,
        "absolute_recall_difference": class_level.absolute_recall_difference(r0, rt),
        "normalized_recall_difference": class_level.normalized_recall_difference(r0, a0, rt, at),
      },
      index=pd.RangeIndex(run.num_classes, name="class"),
    )
  q0, qt = pairing_lib.paired_with_dense(run, variant)
  if q0.members.size:
    rel, excluded = class_level.relative_recall_difference(
      recall_and_accuracy(q0, run.num_classes)[0], recall_and_accuracy(qt, run.num_classes)[0]
    )
  else:
    notes.append(f"{variant}: no member paired with dense; eq. 3 not computed")
    rel, excluded = np.full(run.num_classes, np.nan), np.zeros(run.num_classes, np.int64)
  table["relative_recall_difference"] = rel
  table["relative_excluded_pairs"] = excluded
  # The interval of each class's recall change (uncertainty wherever a mean is shown): Welch over
  # independent members, paired for the same network (`pairing_lib.comparison`).
  c0, ct, is_paired = pairing_lib.comparison(run, variant)
  lows, highs = np.full(run.num_classes, np.nan), np.full(run.num_classes, np.nan)
  if ct.members.size:
    rc0 = accuracy.per_class_recall(c0.top1, c0.labels, run.num_classes)
    rct = accuracy.per_class_recall(ct.top1, ct.labels, run.num_classes)
    for c in range(run.num_classes):
      ci = intervals.mean_difference_interval(
        rc0[:, c], rct[:, c], paired=is_paired, bounds=(0.0, 1.0)
      )
      lows[c], highs[c] = ci["low"], ci["high"]
  table["absolute_low"], table["absolute_high"] = lows, highs
  # Shown beside every p-value: the Benjamini-Hochberg adjusted p over the
  # variant's classes, whatever `correction` decides `significant` with (docs/spec.md §3.1: none).
  table["p_bh"] = class_level.benjamini_hochberg(table["p_value"].to_numpy(float))
  class_names = (
    list(run.class_names)
    if len(run.class_names) == run.num_classes
    else [str(c) for c in range(run.num_classes)]
  )
  table.insert(0, "class_name", class_names)
  return table, notes


def class_summary(run, variant, table, alpha):
  """The class-level fields of a variant's summary (`units.overview.summaries`).

  The Welch test's counts of significant classes (000 §2.2), `significant_classes` and
  `significant_classes_bh` (by `p_bh`), or None for both when one side has a single member:
  the test needs two (K = 1: the paired tests of `single_network`). Then the classes gained
  and lost (`class_level.gained_lost_summary`): `gained`, `lost`, `mean_gain`, `mean_loss`.

  Args:
    run: a `collect.Run`.
    variant: the compressed variant.
    table: its `class_table`.
    alpha: significance level of the BH count.
  """
  gl = class_level.gained_lost_summary(table["normalized_recall_difference"], table["significant"])
  if min(run.eval[names.DENSE].members.size, run.eval[variant].members.size) < 2:
    out = {"significant_classes": None, "significant_classes_bh": None}
  else:
    out = {
      "significant_classes": gl["n_significant"],
      "significant_classes_bh": int(np.sum(table["p_bh"].to_numpy(float) <= alpha)),
    }
  return dict(
    out,
    gained=gl["n_gained"],
    lost=gl["n_lost"],
    mean_gain=gl["mean_gain"],
    mean_loss=gl["mean_loss"],
  )
