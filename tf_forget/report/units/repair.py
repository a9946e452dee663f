"""Why a full int8 file forgot, and its repair (`repair_report`): per-layer error, the causal
ranking and the repaired files; the section is left out without a layer analysis.
"""

from tf_forget.report import repair_report
from tf_forget.report import repair_view
from tf_forget.report import unit


def _compute(run, config):
  asked = bool((config.get("repair") or {}).get("repairs"))
  return unit.Part(*repair_report.compute(run, repair_asked=asked))


def _render(layers, repair, notes):
  return repair_view.section(
    layers,
    repair,
    notes.get(repair_report.WHY_KEY, ()),
    notes.get(repair_report.NOT_REPAIRED_KEY, ()),
  )


UNIT = unit.Unit(
  "repair",
  reads=("run", "config"),
  makes=("layers", "repair"),
  compute=_compute,
  sections=(
    unit.Section(
      "why",
      "1d. Why a full int8 file forgot: per-layer error, and its repair",
      "1d Why",
      ("layers", "repair", "notes"),
      _render,
      optional=True,
    ),
  ),
)
