"""Subgroups (004 Tables 3-5; docs/spec.md §4.2-4.3) and attribute over-indexing among the
Taxicab CIEs (004 Figure 2; docs/spec.md §4.4), only with protected attributes.

Error / FPR / FNR per subgroup of the protected attributes over the first `subgroup_members`
members (`subgroups`, with each subgroup's examples in `subgroup_counts`), each variant's worst
FNR increase (`worst_subgroups`), and the share of each attribute among the CIEs against its
share in the training split (`over_indexing`). The numbers come from `groups`.
"""

from tf_forget.report import groups
from tf_forget.report import sections
from tf_forget.report import unit


def _compute(run, cie, measure_options):
  o, tables, notes, worst = measure_options, {}, {}, {}
  sub, notes["subgroups"] = groups.subgroup_tables(run, o["subgroup_members"])
  if sub is not None:
    tables["subgroups"] = sub
    tables["subgroup_counts"] = groups.subgroup_counts(run)
    worst = groups.worst_subgroups(sub)
  over, notes["over_indexing"] = groups.over_indexing_table(
      run, cie, o["over_indexing_percentile"], o["seed"])
  if over is not None:
    tables["over_indexing"] = over
  return unit.Part(tables, {k: v for k, v in notes.items() if v},
                   gives={"worst_subgroups": worst})


def _subgroups(subgroups, subgroup_counts, variants, settings, notes):
  # pylint: disable=redefined-outer-name
  return sections.subgroups(subgroups, subgroup_counts, variants, settings["subgroup_members"],
                            notes.get("subgroups"))


def _over_indexing(over_indexing, settings, notes):
  return sections.over_indexing(over_indexing, settings["over_indexing_percentile"],
                                notes.get("over_indexing"))


UNIT = unit.Unit(
    "subgroups", reads=("run", "cie", "measure_options"),
    makes=("subgroups", "subgroup_counts", "over_indexing"), gives=("worst_subgroups",),
    compute=_compute,
    sections=(
        unit.Section("subgroups", "4. Subgroups: error, FPR, FNR (004 Tables 3-5)",
                     "4 Subgroups", ("subgroups", "subgroup_counts", "variants", "settings",
                                     "notes"), _subgroups, designs=(unit.POPULATION,)),
        unit.Section("over-indexing", "5. Attribute over-indexing among CIEs (004 Figure 2)",
                     "5 Over-indexing", ("over_indexing", "settings", "notes"), _over_indexing,
                     designs=(unit.POPULATION,))))
