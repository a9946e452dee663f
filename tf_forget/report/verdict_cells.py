"""The verdict table's worst-class and worst-subgroup cells (K >= 2 and K = 1).

The cells `verdict`'s table reads: per compressed variant, the class with the largest
recall loss and the protected subgroup whose false-negative rate rose most, each with its
number of test examples (positives), interval and p-values — from the population tables
(`class_level`, `subgroups`: intervals over members, docs/spec.md §3.1, §4.2) or, with one dense
member, from the paired tests (`k1_classes`, `gate_inputs.gate_measures`' K = 1 worst subgroup).
"""

import numpy as np

from tf_forget.artifacts import names

NAN = float("nan")


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
