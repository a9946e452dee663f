"""000's human study (§3.3, Table 7; `tf_forget.report.human_study`), when the report is built
with its options: the blind-annotation export (given as `export`, written beside the report)
and / or Table 7 from filled annotations (`human_study`).
"""

from tf_forget.report import human_study
from tf_forget.report import human_study_view
from tf_forget.report import unit


def _compute(run, cie, settings, options):
  if options["human_study"] is None:
    return unit.Part()
  measures = unit.Measures(
    tables=unit.Reads((), {}), notes={}, config=dict(settings), values={"cie": cie}
  )
  study = human_study.compute(run, measures, options["human_study"])
  return unit.Part(
    study.tables,
    {"human_study": study.notes} if study.notes else {},
    {"human_study": study.settings},
    {"export": study.export},
  )


def _render(human_study, settings, notes):
  return human_study_view.section(
    human_study, settings.get("human_study"), notes.get("human_study") or []
  )


UNIT = unit.Unit(
  "human_study",
  reads=("run", "cie", "settings", "options"),
  makes=("human_study",),
  gives=("export",),
  compute=_compute,
  sections=(
    unit.Section(
      "human-study",
      "3b. Human study: what the PIEs (CIEs) are (000 Table 7, Figure 5)",
      "3b Human study",
      ("human_study", "settings", "notes"),
      _render,
      optional=True,
    ),
  ),
)
