"""Robustness to corruptions (000 Table 3; docs/spec.md §3.6): per (variant, corruption) top-1
(top-5) averaged over members and severities, normalized to dense, and the change in points with
its 95% interval (`robustness`, from `groups.robustness_measures`), when the run evaluated
corrupted splits.
"""

from tf_forget.report import groups
from tf_forget.report import sections
from tf_forget.report import unit


def _compute(run):
  table, notes = groups.robustness_measures(run)
  return unit.Part({} if table is None else {"robustness": table},
                   {"robustness": notes} if notes else {})


def _render(robustness, notes):  # pylint: disable=redefined-outer-name
  return sections.robustness(robustness, notes.get("robustness"))


UNIT = unit.Unit(
    "robustness", reads=("run",), makes=("robustness",), compute=_compute,
    sections=(unit.Section("robustness", "6. Robustness to corruptions (000 Table 3)",
                           "6 Robustness", ("robustness", "notes"), _render),))
