"""The verdict table's cells that depend on the design: K >= 2 and K = 1, one interface.

A report has one of two designs (`design(measures)`), each an object with the same methods —
`top1` (the top-1 change's interval and its `pairing`), `counts` (cells only the design has),
`worst_class`, `forgot` (the classes and subgroups that changed significantly, in words),
`worst_subgroup` and `statement` (the design in one sentence, or None):

* `POPULATION` (K >= 2 dense members): the population tables — the top-1 interval over members
  (`tf_forget.stats.intervals`: Welch, or paired as `tf_forget.report.pairing` says), the worst
  class and the significant classes of `class_level` (Welch per class, docs/spec.md §3.1), the
  worst subgroup of `subgroups` (intervals over members, docs/spec.md §4.2);
* `SINGLE_NETWORK` (K = 1: one network against its own compressed files,
  `tf_forget.report.single_network`): the paired tests over the test examples — the Newcombe
  interval of `k1_topline`, the classes `k1_classes` marks significant (exact McNemar, BH) and
  their count, the subgroups whose FNR changed in `k1_subgroups`, and the worst subgroup of
  `gate_inputs.gate_measures` (paired bootstrap interval). A variant without paired tests keeps
  the population's top-1 interval.
"""

import numpy as np

from tf_forget.artifacts import names
from tf_forget.policy import gate_inputs
from tf_forget.report import pairing as pairing_lib
from tf_forget.report.words import verdict_sentences
from tf_forget.stats import accuracy
from tf_forget.stats import intervals

NAN = float("nan")


def _interval(values_0, values_t, paired, confidence):
  return intervals.mean_difference_interval(
    values_0, values_t, paired=paired, confidence=confidence, bounds=(0.0, 1.0)
  )


def _empty(paired):
  nan = float("nan")
  return {
    "difference": nan,
    "low": nan,
    "high": nan,
    "n_0": 0,
    "n_t": 0,
    "spread": nan,
    "method": "paired" if paired else "welch",
    "confidence": intervals.CONFIDENCE,
  }


def top1_interval(run, variant, confidence=intervals.CONFIDENCE):
  """The interval of the variant's top-1 change (fraction), `intervals` dict (NaN without a
  paired member: every parent link stale, `pairing.py`)."""
  p0, pt, paired = pairing_lib.comparison(run, variant)
  if not pt.members.size:
    return _empty(paired)
  return _interval(
    accuracy.top1_accuracy(p0.top1, p0.labels),
    accuracy.top1_accuracy(pt.top1, pt.labels),
    paired,
    confidence,
  )


def k1_top1(measures, variant):
  """The variant's `k1_topline` row as an interval dict (`difference`, `low`, `high`), or None
  when the report has no K = 1 tables (`single_network`) or none for the variant."""
  t = measures.tables.get("k1_topline")
  if t is None or variant not in set(t.variant):
    return None
  row = t[t.variant == variant].iloc[0]
  return {
    "difference": float(row["difference"]),
    "low": float(row["low"]),
    "high": float(row["high"]),
  }


def worst_class(run, class_rows):
  """The class with the largest mean recall loss, with n, interval and p-values.

  Args:
    run: `collect.Run`.
    class_rows: one variant's rows of the `class_level` table (columns `class`,
      `class_name`, `absolute_recall_difference`, `absolute_low` / `_high` (its 95% interval,
      `class_measures.class_table`), `p_value`, `p_bh`).

  Returns:
    dict `name`, `class`, `n` (test examples of the class), `difference`, `low`, `high`,
    `p_value`, `p_bh` (Benjamini-Hochberg over the variant's classes); None if no class has a
    defined difference.
  """
  diff = class_rows["absolute_recall_difference"].to_numpy(float)
  if class_rows.empty or np.isnan(diff).all():
    return None
  row = class_rows.iloc[int(np.nanargmin(diff))]
  c = int(row["class"])
  return {
    "name": str(row["class_name"]),
    "class": c,
    "n": int(np.sum(run.eval[names.DENSE].labels == c)),
    "difference": float(row["absolute_recall_difference"]),
    "low": float(row["absolute_low"]),
    "high": float(row["absolute_high"]),
    "p_value": float(row["p_value"]),
    "p_bh": float(row["p_bh"]),
  }


def k1_worst_class(k1_classes, variant):
  """The class with the largest recall drop in the variant's `k1_classes` rows (K = 1), as
  `worst_class`'s dict (`p_value`: exact McNemar; `p_bh`: Benjamini-Hochberg over the
  classes; interval: Newcombe's), or None without a defined change."""
  if k1_classes is None:
    return None
  rows = k1_classes[k1_classes.variant == variant]
  change = rows["change"].to_numpy(float)
  if rows.empty or np.isnan(change).all():
    return None
  row = rows.iloc[int(np.nanargmin(change))]
  return {
    "name": str(row["class_name"]),
    "class": int(row["class"]),
    "n": int(row["n"]),
    "difference": float(row["change"]),
    "low": float(row["low"]),
    "high": float(row["high"]),
    "p_value": float(row["p_value"]),
    "p_bh": float(row["p_adjusted"]),
  }


def k1_worst_subgroup(gate_measures):
  """The worst subgroup (FNR) of a variant's `gate_inputs.gate_measures` (K = 1), as
  `worst_subgroup`'s dict, or None without one."""
  worst = (gate_measures.get("worst_subgroup") or {}).get("fnr")
  if not worst:
    return None
  return {
    "name": worst["subgroup"],
    "n": worst["n"],
    "difference": worst["increase"],
    "low": NAN if worst["low"] is None else worst["low"],
    "high": NAN if worst["high"] is None else worst["high"],
  }


def worst_subgroup(measures, variant):
  """The subgroup whose FNR rose most (`groups.worst_subgroups`), with n and interval.

  Returns:
    dict `name`, `n` (actual positives in the subgroup, `subgroup_counts`), `difference`,
    `low`, `high` (the `subgroups` table's absolute difference and its 95% interval over the
    first members, docs/spec.md §1.5); None without subgroups.
  """
  worst = ((measures.variants[variant].get("worst_subgroup") or {}).get("fnr")) or None
  if not worst:
    return None
  name = worst["subgroup"]
  t = measures.tables["subgroups"]
  t = t[(t.variant == variant) & (t.metric == "fnr")].set_index("model")[name]
  counts = measures.tables["subgroup_counts"].set_index("subgroup")
  return {
    "name": name,
    "n": int(counts.loc[name, "positives"]),
    "difference": float(t["absolute_difference"]),
    "low": float(t["absolute_low"]),
    "high": float(t["absolute_high"]),
  }


def significant_changes(rows, variant, k1):
  """[(class name, recall change)] of the classes whose recall changed significantly, the
  largest loss first: the `class_level` rows' Welch test (`significant`, 000 §2.2) or, with
  K = 1, the `k1_classes` rows' exact McNemar test after Benjamini-Hochberg (`significant`);
  [] without rows."""
  if rows is None or rows.empty:
    return []
  rows = rows[rows.variant == variant] if "variant" in rows else rows
  change = "change" if k1 else "absolute_recall_difference"
  hits = rows[rows["significant"].astype(bool)]
  hits = hits.sort_values(change, kind="stable")
  return [(str(r["class_name"]), float(r[change])) for _, r in hits.iterrows()]


def significant_subgroups(k1_subgroups, variant):
  """[(subgroup, FNR change)] of the protected subgroups whose false-negative rate changed
  significantly with K = 1 (the `k1_subgroups` FNR rows whose paired bootstrap 95% interval
  excludes 0), the largest rise first; [] without rows."""
  if k1_subgroups is None or k1_subgroups.empty:
    return []
  rows = k1_subgroups[(k1_subgroups.variant == variant) & (k1_subgroups.measure == "fnr")]
  rows = rows[(rows["low"] > 0) | (rows["high"] < 0)].sort_values(
    "change", ascending=False, kind="stable"
  )
  return [(str(r["subgroup"]), float(r["change"])) for _, r in rows.iterrows()]


def _listed(changes, shown):
  n = len(changes)
  listed = ", ".join(f"{name} {100 * c:+.2f} pt" for name, c in changes[:shown])
  return listed + (f", {n - shown} more" if n > shown else "")


def forgot_words(changes, subgroups=(), shown=3):
  """'2 classes changed significantly: 8 −2.05 pt, 4 +1.10 pt' (the first `shown`), or
  'no class changed significantly'; then the subgroups whose FNR changed significantly
  ('FNR changed significantly in 1 subgroup: Male=1 +4.00 pt')."""
  n = len(changes)
  out = (
    f"{n} class{'' if n == 1 else 'es'} changed significantly: {_listed(changes, shown)}"
    if changes
    else "no class changed significantly"
  )
  if subgroups:
    m = len(subgroups)
    out += (
      f"; FNR changed significantly in {m} subgroup{'' if m == 1 else 's'}: "
      f"{_listed(list(subgroups), shown)}"
    )
  return out


class Population:
  """K >= 2: the cells from the population tables (intervals over members)."""

  def top1(self, run, measures, variant, confidence):
    """(the top-1 change's interval dict, its `pairing`: "paired" or "independent")."""
    top = top1_interval(run, variant, confidence)
    return top, "paired" if top["method"] == "paired" else "independent"

  def counts(self, gate_measures):
    """Cells of this design only: none."""
    return {}

  def worst_class(self, run, measures, variant):
    classes = measures.tables["class_level"]
    return worst_class(run, classes[classes.variant == variant])

  def forgot(self, measures, variant):
    classes = measures.tables["class_level"]
    return forgot_words(significant_changes(classes[classes.variant == variant], variant, False))

  def worst_subgroup(self, measures, variant, gate_measures):
    return worst_subgroup(measures, variant)

  def statement(self, run, measures):
    """The design in one sentence for the first screen: none (the usual design)."""
    return None


class SingleNetwork:
  """K = 1: the cells from the paired tests over the test examples."""

  def top1(self, run, measures, variant, confidence):
    """(`k1_topline`'s interval, "paired examples"); the population's without paired tests."""
    top = k1_top1(measures, variant)
    return (
      (top, verdict_sentences.K1_PAIRING)
      if top
      else POPULATION.top1(run, measures, variant, confidence)
    )

  def counts(self, gate_measures):
    """The number of classes `k1_classes` marks significant (`significant_classes`)."""
    return {"significant_classes": gate_measures["significant_classes"]}

  def worst_class(self, run, measures, variant):
    return k1_worst_class(measures.tables.get("k1_classes"), variant)

  def forgot(self, measures, variant):
    return forgot_words(
      significant_changes(measures.tables.get("k1_classes"), variant, True),
      significant_subgroups(measures.tables.get("k1_subgroups"), variant),
    )

  def worst_subgroup(self, measures, variant, gate_measures):
    return k1_worst_subgroup(gate_measures)

  def statement(self, run, measures):
    """The design in one sentence for the first screen (`verdict_sentences.design`)."""
    return verdict_sentences.design(run, measures)


POPULATION = Population()
SINGLE_NETWORK = SingleNetwork()


def design(measures):
  """The report's design: `SINGLE_NETWORK` when its settings carry the K = 1 design
  (`gate_inputs.K1_SETTINGS_KEY`), else `POPULATION`."""
  if measures.config.get(gate_inputs.K1_SETTINGS_KEY) is None:
    return POPULATION
  return SINGLE_NETWORK
