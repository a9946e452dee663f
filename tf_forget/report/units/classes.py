"""Class level: which classes changed (000 §2.2, Figure 2; docs/spec.md §3.1-3.3).

Per compressed variant against dense, the per-class Welch test and recall differences of
`class_measures.class_table` (`class_level`) and the counts of significant, gained and lost
classes each variant's summary shows (`class_summaries`); the section folds a quantized child
that repeats its trained variant (`fold_families`).
"""

import numpy as np
import pandas as pd

from tf_forget.artifacts import names
from tf_forget.report import class_measures
from tf_forget.report import html
from tf_forget.report import plots
from tf_forget.report import unit

MAX_CLASS_ROWS = 60
FOLD_TOLERANCE = 0.005  # recall difference (fraction) within which a child repeats its lead


def concat(frames, first):
  """Concatenates per-variant frames, `first` columns in front (empty frame if none)."""
  if not frames:
    return pd.DataFrame(columns=first)
  out = pd.concat(frames, ignore_index=True)
  return out[first + [c for c in out.columns if c not in first]]


def _compute(run, measure_options):
  rows, summaries, notes = [], {}, []
  for variant in run.eval:
    if variant == names.DENSE:
      continue
    o = measure_options
    table, n = class_measures.class_table(run, variant, o["alpha"], o["center"], o["correction"])
    notes += n
    rows.append(table.reset_index().assign(variant=variant))
    summaries[variant] = class_measures.class_summary(run, variant, table, o["alpha"])
  return unit.Part(
    {"class_level": concat(rows, ["variant", "class"])},
    {"class_level": notes} if notes else {},
    gives={"class_summaries": summaries},
  )


def section(t, variants, notes):
  """The class-level section: per variant, the figure beside its classes (families folded).

  Args:
    t: the `class_level` table.
    variants: the variants' summaries (`units.overview.summaries`).
    notes: the `class_level` notes (None: none).
  """
  if t.empty:
    return unit.Skip.of(notes or ["no compressed variant"])
  parts = [
    "<p class=\"lead\">Bars: absolute recall difference (compressed − dense, mean over "
    "members); plum bars: the class's mean-shifted recall differs significantly (two-"
    "tailed Welch test, docs/spec.md §3.1); green points: normalized recall difference "
    "(minus the change of overall accuracy); relative: 000 eq. 3 ratio (1 = unchanged).</p>"
  ]
  k = min(s["members"] for s in variants.values())
  if k < 10:
    parts.append(
      f"<p class=\"caveat\">⚠ K = {k} members per population (the papers use 30) "
      "and no multiple-testing correction (000's protocol): at p ≤ 0.05 about 1 "
      "class in 20 is flagged by chance. The p (BH) column is the "
      "Benjamini-Hochberg adjusted p-value over the variant's classes.</p>"
    )
  blocks = {variant: rows for variant, rows in t.groupby("variant", sort=False)}
  for lead, folded in fold_families(blocks):
    parts.append(_class_block(variants, lead, blocks[lead]))
    if folded:
      names_ = ", ".join(folded)
      parts.append(
        f"<details><summary>{html.esc(names_)}: the same as {html.esc(lead)} "
        f"(same significant classes, every class within "
        f"{100 * FOLD_TOLERANCE:g} pt) — click to show</summary>"
        + "".join(_class_block(variants, v, blocks[v]) for v in folded)
        + "</details>"
      )
  return "".join(parts)


def fold_families(blocks):
  """Groups class-level blocks by variant family (the trained variant a file comes from).

  In each family the lead is the trained variant itself (or its first child when the family
  is dense's); a child whose significant classes equal the lead's and whose absolute recall
  difference is within `FOLD_TOLERANCE` of the lead's in every class is folded under it.

  Args:
    blocks: variant -> its `class_level` rows (report order).

  Returns:
    list of (lead, [folded variants]) in report order; unfolded children are leads themselves.
  """
  families = {}
  for variant in blocks:
    families.setdefault(names.family(variant), []).append(variant)
  out = []
  for family, members in families.items():
    members = sorted(members, key=lambda v: v != family)  # the trained variant first
    lead, rest = members[0], members[1:]
    folded, shown = [], []
    for v in rest:
      a, b = blocks[lead], blocks[v]
      diff = np.abs(
        a.absolute_recall_difference.to_numpy(float) - b.absolute_recall_difference.to_numpy(float)
      )
      same = list(a.significant) == list(b.significant) and bool(
        np.all(np.nan_to_num(diff) <= FOLD_TOLERANCE)
      )
      (folded if same else shown).append(v)
    out.append((lead, folded))
    out += [(v, []) for v in shown]
  return out


def _class_block(variants, variant, rows):
  cols = [
    "class_name",
    "absolute_recall_difference",
    "absolute_95ci",
    "normalized_recall_difference",
    "relative_recall_difference",
    "p_value",
    "p_bh",
    "significant",
  ]
  short = {
    "class_name": "class",
    "absolute_recall_difference": "absolute",
    "normalized_recall_difference": "normalized",
    "relative_recall_difference": "relative",
    "p_value": "p",
    "p_bh": "p (BH)",
    "absolute_95ci": "95% CI (pt)",
  }
  s = variants[variant]
  count = (
    "n/a (Welch's test needs 2 members a side; K = 1: section 1b)"
    if s["significant_classes"] is None
    else s["significant_classes"]
  )
  head = (
    f"<h3>{html.esc(variant)}: {count} significant classes "
    f"({'n/a' if s.get('significant_classes_bh') is None else s['significant_classes_bh']}"
    " after Benjamini-Hochberg; "
    f"{s['gained']} gained, {s['lost']} lost; mean gain "
    f"{html.esc(html.fmt(s['mean_gain'], html.PTS_ABS))}, mean loss "
    f"{html.esc(html.fmt(s['mean_loss'], html.PTS_ABS))})</h3>"
  )
  ci = [
    ("n/a" if lo != lo else f"[{100 * lo:+.2f}, {100 * hi:+.2f}]")
    for lo, hi in zip(
      rows.get("absolute_low", rows.p_value * float("nan")),
      rows.get("absolute_high", rows.p_value * float("nan")),
    )
  ]
  shown = rows.assign(_abs=rows.absolute_recall_difference.abs(), absolute_95ci=ci).sort_values(
    ["significant", "_abs"], ascending=[False, False], kind="stable"
  )[cols]
  shown = shown.rename(columns=short)
  return head + html.pair(
    plots.class_level(rows, variant),
    f"per-class recall difference, {variant}",
    html.table(
      shown,
      {"absolute": html.PTS_ABS, "normalized": html.PTS_ABS, "p": "p", "p (BH)": "p"},
      highlight=shown.significant.tolist(),
      max_rows=MAX_CLASS_ROWS,
    ),
  )


def _render(class_level, variants, notes):
  return section(class_level, variants, notes.get("class_level"))


UNIT = unit.Unit(
  "classes",
  reads=("run", "measure_options"),
  makes=("class_level",),
  gives=("class_summaries",),
  compute=_compute,
  sections=(
    unit.Section(
      "class-level",
      "2. Class level: which classes changed (000 Figure 2)",
      "2 Classes",
      ("class_level", "variants", "notes"),
      _render,
      designs=(unit.POPULATION,),
    ),
  ),
)
