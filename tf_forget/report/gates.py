"""Deployment gates: user-set bounds on what a compressed variant may change (issue #6, #18).

A gate is a bound on a variant's change relative to the dense population:
  * `max_accuracy_drop`: mean top-1 of the dense population minus that of the variant, in
    accuracy points (fractions: 0.01 = one percentage point);
  * `max_subgroup_fnr_increase`: the largest increase of a subgroup's false-negative rate
    (fraction, compressed minus baseline, 004 Table 3), over the protected subgroups;
  * `max_significant_classes`: classes whose recall changed significantly (000 §2.2).
A variant fails if it exceeds any gate, or if a gate's measure is missing or undefined (the
gate cannot be evaluated, issue #25); the dense baseline is never gated. Bounds must be finite
numbers >= 0 (`GateError`). The audit's exit status (eval/audit.py) and the bundle's manifest
(eval/deploy.py) use these verdicts; the report's verdict block (`verdict.py`) shows them. One
implementation, here.
"""

import dataclasses
import math
import numbers
from typing import Optional

from tf_forget.artifacts import errors
from tf_forget.artifacts import names



class GateError(errors.Error):
  """A gate bound that is not a finite number >= 0 (one line)."""


def _finite(value):
  """Whether `value` is a real number (not a bool) and finite."""
  return (isinstance(value, numbers.Real) and not isinstance(value, bool) and
          math.isfinite(value))


@dataclasses.dataclass(frozen=True)
class Gates:
  """User-set bounds; None disables a gate.

  Raises:
    GateError: a bound that is not a finite number >= 0 (NaN, infinity, negative, a string).
  """
  max_accuracy_drop: Optional[float] = None
  max_subgroup_fnr_increase: Optional[float] = None
  max_significant_classes: Optional[int] = None

  def __post_init__(self):
    for f in dataclasses.fields(self):
      value = getattr(self, f.name)
      if value is not None and not (_finite(value) and value >= 0):
        raise GateError(f"gate {f.name} must be a finite number >= 0, got {value!r}")

  @classmethod
  def from_json(cls, doc):
    """Gates from their JSON dict (the run config's `gates`); None or {} -> no gate."""
    doc = doc or {}
    return cls(**{f.name: doc.get(f.name) for f in dataclasses.fields(cls)})

  def any(self):
    """True if at least one gate is set."""
    return any(getattr(self, f.name) is not None for f in dataclasses.fields(self))


def _check(gate, bound, value, missing, exceeded):
  """The reason one gate fails, or None (gate off, or `value` within `bound`).

  Args:
    gate: the gate's name (the flag without dashes).
    bound: the gate's bound, None if off.
    value: the measure (None / NaN if missing or undefined: the gate fails).
    missing: why the gate cannot be evaluated when `value` is missing or undefined.
    exceeded: callable() -> the reason when `value` > `bound`.
  """
  if bound is None:
    return None
  if not _finite(value):
    return f"gate {gate} could not be evaluated: {missing}"
  return exceeded() if value > bound else None


def verdict(variant, summary, gates):
  """Checks one variant's report summary against the gates.

  A gate whose measure is missing or undefined (None / NaN: no protected attributes for the
  subgroup gate, no paired member for the top-1 change) fails the variant: a gate that cannot be
  evaluated is not passed.

  Args:
    variant: variant name.
    summary: `report.json["variants"][variant]` (top1_change, significant_classes,
      worst_subgroup).
    gates: `Gates`.

  Returns:
    (passed: bool, reasons: list of one-line strings).
  """
  if variant == names.DENSE:
    return True, []
  change = summary.get("top1_change")
  drop = -change if _finite(change) else None
  worst = (summary.get("worst_subgroup") or {}).get("fnr") or {}
  increase = worst.get("increase")
  significant = summary.get("significant_classes")
  reasons = [
      _check("max_accuracy_drop", gates.max_accuracy_drop, drop, "top-1 change undefined",
             lambda: (f"top-1 accuracy drops by {100 * drop:.2f} points "
                      f"(max {100 * gates.max_accuracy_drop:.2f})")),
      _check("max_subgroup_fnr_increase", gates.max_subgroup_fnr_increase, increase,
             "no subgroup FNR change (no protected attributes, or undefined)",
             lambda: (f"FNR of subgroup {worst.get('subgroup')} rises by {100 * increase:.2f} "
                      f"points (max {100 * gates.max_subgroup_fnr_increase:.2f})")),
      _check("max_significant_classes", gates.max_significant_classes, significant,
             "significant classes undefined",
             lambda: (f"{int(significant)} classes change significantly "
                      f"(max {gates.max_significant_classes})")),
  ]
  reasons = [r for r in reasons if r is not None]
  return not reasons, reasons
