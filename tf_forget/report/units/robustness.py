"""Robustness to corruptions (000 Table 3; docs/spec.md §3.6): per (variant, corruption) top-1
(top-5) averaged over members and severities, normalized to dense, and the change in points with
its 95% interval (`robustness`, from `groups.robustness_measures`), when the run evaluated
corrupted splits.
"""

from tf_forget.report import groups
from tf_forget.report import html
from tf_forget.report import plots
from tf_forget.report import unit


def _compute(run):
  table, notes = groups.robustness_measures(run)
  return unit.Part(
    {} if table is None else {"robustness": table}, {"robustness": notes} if notes else {}
  )


def section(t, notes):
  """The robustness section (000 Table 3): `t` the table (None: no corrupted split)."""
  if t is None:
    return unit.Skip.of(notes)
  return (
    "<p class=\"lead\">Accuracy averaged over members and severities first, then "
    "normalized to dense on the same corruption: 100·(A_t/A_0 − 1) (docs/spec.md §3.6); "
    "top1_change is the same change in points with its 95% interval over members "
    "(low / high).</p>"
    + html.pair(
      plots.robustness(t),
      "robustness per corruption",
      html.table(
        html.without_empty(html.without_empty(t, "top5_norm"), "top5"),
        {
          "top1": html.PCT,
          "top5": html.PCT,
          "top1_norm": html.PTS,
          "top5_norm": html.PTS,
          "severities": "int",
          "members": "int",
          "top1_change": html.PTS_ABS,
          "top1_change_low": html.PTS_ABS,
          "top1_change_high": html.PTS_ABS,
        },
        max_rows=60,
      ),
      stacked=True,
    )
  )


def _render(robustness, notes):
  return section(robustness, notes.get("robustness"))


UNIT = unit.Unit(
  "robustness",
  reads=("run",),
  makes=("robustness",),
  compute=_compute,
  sections=(
    unit.Section(
      "robustness",
      "6. Robustness to corruptions (000 Table 3)",
      "6 Robustness",
      ("robustness", "notes"),
      _render,
    ),
  ),
)
