"""The verdict (`tf_forget.report.verdict`): one row per variant (`verdict`) and the
recommendation, the file to ship (given as `recommendation`), with the repairs' sentences and
why a file forgot from the repair unit's tables and notes; shown first on the page.
"""

from tf_forget.report import repair_report
from tf_forget.report import unit
from tf_forget.report import verdict as verdict_lib
from tf_forget.report import verdict_view

# The tables the verdict, its gates (`gate_inputs.gate_measures`) and its words read.
TABLES = (
  "class_level",
  "subgroups",
  "subgroup_counts",
  "k1_topline",
  "k1_classes",
  "k1_subgroups",
  "divergence",
  "deployment",
  "repair",
)


def _compute(
  run,
  config,
  settings,
  notes,
  variants,
  class_level,
  subgroups,
  subgroup_counts,
  k1_topline,
  k1_classes,
  k1_subgroups,
  divergence,
  deployment,
  repair,
):
  tables = unit.Reads(
    TABLES,
    {
      "class_level": class_level,
      "subgroups": subgroups,
      "subgroup_counts": subgroup_counts,
      "k1_topline": k1_topline,
      "k1_classes": k1_classes,
      "k1_subgroups": k1_subgroups,
      "divergence": divergence,
      "deployment": deployment,
      "repair": repair,
    },
  )
  measures = unit.Measures(
    tables=tables, notes=dict(notes), config=dict(settings), values={"variants": variants}
  )
  user = config.get("user") or {}
  table, rec = verdict_lib.compute(
    run,
    measures,
    config.get("gates"),
    deployment=config.get("deployment"),
    scaling_checked=bool(user.get("input_scaling_check", False)),
  )
  skipped = notes.get(repair_report.NOT_REPAIRED_KEY, [])
  if rec is not None and (repair is not None or skipped):
    rec["repairs"] = repair_report.sentences(tables, skipped)
  if rec is not None and notes.get(repair_report.WHY_KEY):
    rec["why_forgot"] = list(notes[repair_report.WHY_KEY])
  return unit.Part({"verdict": table}, gives={"recommendation": rec})


def _render(verdict, deployment, recommendation):
  return verdict_view.section(verdict, deployment, recommendation)


UNIT = unit.Unit(
  "verdict",
  reads=("run", "config", "settings", "notes", "variants") + TABLES,
  makes=("verdict",),
  gives=("recommendation",),
  compute=_compute,
  sections=(
    unit.Section(
      "verdict",
      "Verdict: which file to ship, and what it costs",
      "Verdict",
      ("verdict", "deployment", "recommendation"),
      _render,
    ),
  ),
)
