"""Deployment gates: user-set bounds on what a compressed variant may change (issue #6, #18).

A gate is a bound on a variant's change relative to the dense population:
  * `max_accuracy_drop`: mean top-1 of the dense population minus that of the variant, in
    accuracy points (fractions: 0.01 = one percentage point);
  * `max_subgroup_fnr_increase`: the largest increase of a subgroup's false-negative rate
    (fraction, compressed minus baseline, 004 Table 3), over the protected subgroups;
  * `max_significant_classes`: classes whose recall changed significantly (000 §2.2).
A variant fails if it exceeds any gate; the dense baseline is never gated. The audit's exit
status (eval/audit.py) and the bundle's manifest (eval/deploy.py) use these verdicts; the
report's verdict block (`verdict.py`) shows them. One implementation, here.
"""

import dataclasses
import math
from typing import Optional

DENSE = "dense"  # tf_forget.artifacts.names.DENSE


@dataclasses.dataclass(frozen=True)
class Gates:
  """User-set bounds; None disables a gate."""
  max_accuracy_drop: Optional[float] = None
  max_subgroup_fnr_increase: Optional[float] = None
  max_significant_classes: Optional[int] = None

  @classmethod
  def from_json(cls, doc):
    """Gates from their JSON dict (the run config's `gates`); None or {} -> no gate."""
    doc = doc or {}
    return cls(**{f.name: doc.get(f.name) for f in dataclasses.fields(cls)})

  def any(self):
    """True if at least one gate is set."""
    return any(getattr(self, f.name) is not None for f in dataclasses.fields(self))


def _finite(value):
  return value is not None and not (isinstance(value, float) and math.isnan(value))


def verdict(variant, summary, gates):
  """Checks one variant's report summary against the gates.

  Args:
    variant: variant name.
    summary: `report.json["variants"][variant]` (top1_change, significant_classes,
      worst_subgroup).
    gates: `Gates`.

  Returns:
    (passed: bool, reasons: list of one-line strings).
  """
  if variant == DENSE:
    return True, []
  reasons = []
  drop = -summary.get("top1_change", 0.0)
  if gates.max_accuracy_drop is not None and _finite(drop) and drop > gates.max_accuracy_drop:
    reasons.append(f"top-1 accuracy drops by {100 * drop:.2f} points "
                   f"(max {100 * gates.max_accuracy_drop:.2f})")
  worst = (summary.get("worst_subgroup") or {}).get("fnr") or {}
  increase = worst.get("increase")
  if (gates.max_subgroup_fnr_increase is not None and _finite(increase) and
      increase > gates.max_subgroup_fnr_increase):
    reasons.append(f"FNR of subgroup {worst.get('subgroup')} rises by {100 * increase:.2f} "
                   f"points (max {100 * gates.max_subgroup_fnr_increase:.2f})")
  significant = summary.get("significant_classes")
  if (gates.max_significant_classes is not None and _finite(significant) and
      significant > gates.max_significant_classes):
    reasons.append(f"{int(significant)} classes change significantly "
                   f"(max {gates.max_significant_classes})")
  return not reasons, reasons
