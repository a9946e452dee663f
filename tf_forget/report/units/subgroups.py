"""Subgroups (004 Tables 3-5; docs/spec.md §4.2-4.3) and attribute over-indexing among the
Taxicab CIEs (004 Figure 2; docs/spec.md §4.4), only with protected attributes.

Error / FPR / FNR per subgroup of the protected attributes over the first `subgroup_members`
members (`subgroups`, with each subgroup's examples in `subgroup_counts`), each variant's worst
FNR increase (`worst_subgroups`), and the share of each attribute among the CIEs against its
share in the training split (`over_indexing`). The numbers come from `groups`.
"""

import pandas as pd

from tf_forget.report import groups
from tf_forget.report import html
from tf_forget.report import subgroup_plots
from tf_forget.report import unit


def _compute(run, cie, measure_options):
  o, tables, notes, worst = measure_options, {}, {}, {}
  sub, notes["subgroups"] = groups.subgroup_tables(run, o["subgroup_members"])
  if sub is not None:
    tables["subgroups"] = sub
    tables["subgroup_counts"] = groups.subgroup_counts(run)
    worst = groups.worst_subgroups(sub)
  over, notes["over_indexing"] = groups.over_indexing_table(
    run, cie, o["over_indexing_percentile"], o["seed"]
  )
  if over is not None:
    tables["over_indexing"] = over
  return unit.Part(tables, {k: v for k, v in notes.items() if v}, gives={"worst_subgroups": worst})


def subgroups_section(t, counts, variants, subgroup_members, notes):
  """The subgroups section (004 Tables 3-5).

  Args:
    t: the `subgroups` table (None: not measured).
    counts: the `subgroup_counts` table.
    variants: the variants' summaries.
    subgroup_members: the members averaged (the setting).
    notes: the `subgroups` notes.
  """
  if t is None:
    return unit.Skip.of(notes)
  groups = [c for c in t.columns if c not in ("variant", "model", "metric")]
  rates = t[t.model.isin(["baseline", "compressed"])]
  nd = t[t.model == "normalized_difference"]
  absolute = _with_intervals(t, groups)
  members = min(subgroup_members, min(s["members"] for s in variants.values()))
  return (
    "<p class=\"lead\">Rates averaged over the first "
    f"{html.esc(members)} members of each population (docs/spec.md §1.5); positive = class "
    "1; FPR / FNR are n/a in a subgroup without actual negatives / positives. Headline: the "
    "absolute difference, compressed − dense, in points with its 95% interval over the "
    "members [low, high]; below it the normalized difference 100·(compressed − dense)/dense "
    "in % (004 Table 3), which explodes on a near-zero baseline, and the rates themselves. "
    "n: the examples, positives (FNR's denominator) and negatives (FPR's) of each "
    "subgroup.</p>"
    + html.pair(
      subgroup_plots.subgroups(t),
      "subgroup absolute differences (points)",
      html.table(absolute),
      stacked=True,
    )
    + (
      ""
      if counts is None
      else "<h3>n per subgroup</h3>"
      + html.table(counts, {"examples": "int", "positives": "int", "negatives": "int"})
    )
    + "<h3>Normalized difference (relative, %; 004 Table 3)</h3>"
    + html.table(nd, {g: html.PTS for g in groups})
    + "<h3>Rates</h3>"
    + html.table(rates, {g: html.PCT for g in groups})
  )


def _interval_text(value, low, high):
  """'+17.90 [+12.01, +23.79]' (points) or 'n/a'."""
  if value != value:
    return "n/a"
  ci = "" if low != low or high != high else f" [{100 * low:+.2f}, {100 * high:+.2f}]"
  return f"{100 * value:+.2f}{ci}"


def _with_intervals(table, groups):
  """The absolute-difference rows with their 95% intervals as text (points)."""
  rows = []
  key = ["variant", "metric"]
  diff = table[table.model == "absolute_difference"].set_index(key)
  low = table[table.model == "absolute_low"].set_index(key)
  high = table[table.model == "absolute_high"].set_index(key)
  for (variant, metric), row in diff.iterrows():
    rows.append(
      {
        "variant": variant,
        "metric": metric,
        **{
          g: _interval_text(row[g], low.loc[(variant, metric), g], high.loc[(variant, metric), g])
          for g in groups
        },
      }
    )
  return pd.DataFrame(rows, columns=["variant", "metric"] + groups)


def over_indexing_section(t, p, notes):
  """The over-indexing section (004 Figure 2): `t` the table (None: not measured), `p` the CIE
  percentile, `notes` why it was not measured."""
  if t is None:
    return unit.Skip.of(notes)
  return (
    f"<p class=\"lead\">CIEs: Taxicab at percentile {html.esc(html.fmt(p, 'int'))} "
    "(docs/spec.md §4.4). Relative representation = share among CIEs / share in the training "
    "set; above 1 the attribute is over-indexed.</p>"
    + html.pair(
      subgroup_plots.over_indexing(t),
      "attribute over-indexing",
      html.table(t, {"train_share": html.PCT, "cie_share": html.PCT, "cie_count": "int"}),
    )
  )


def _subgroups(subgroups, subgroup_counts, variants, settings, notes):
  return subgroups_section(
    subgroups, subgroup_counts, variants, settings["subgroup_members"], notes.get("subgroups")
  )


def _over_indexing(over_indexing, settings, notes):
  return over_indexing_section(
    over_indexing, settings["over_indexing_percentile"], notes.get("over_indexing")
  )


UNIT = unit.Unit(
  "subgroups",
  reads=("run", "cie", "measure_options"),
  makes=("subgroups", "subgroup_counts", "over_indexing"),
  gives=("worst_subgroups",),
  compute=_compute,
  sections=(
    unit.Section(
      "subgroups",
      "4. Subgroups: error, FPR, FNR (004 Tables 3-5)",
      "4 Subgroups",
      ("subgroups", "subgroup_counts", "variants", "settings", "notes"),
      _subgroups,
      designs=(unit.POPULATION,),
    ),
    unit.Section(
      "over-indexing",
      "5. Attribute over-indexing among CIEs (004 Figure 2)",
      "5 Over-indexing",
      ("over_indexing", "settings", "notes"),
      _over_indexing,
      designs=(unit.POPULATION,),
    ),
  ),
)
