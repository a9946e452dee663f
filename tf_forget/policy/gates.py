"""Deployment gates: user-set bounds on what a compressed variant may change.

A gate is a bound on a variant's change relative to the dense population:
  * `max_accuracy_drop`: mean top-1 of the dense population minus that of the variant, in
    accuracy points (fractions: 0.01 = one percentage point);
  * `max_subgroup_fnr_increase`: the largest increase of a subgroup's false-negative rate
    (fraction, compressed minus baseline, 004 Table 3), over the protected subgroups;
  * `max_significant_classes`: classes whose recall changed significantly (000 §2.2);
  * `max_flip_rate`: the share of test examples whose top-1 label differs from the reference's
    (broken + fixed + changed over n; over the P·n (pair, example) values with P member pairs),
    and `max_kl`: the mean KL(reference ‖ file) of the softmax outputs in nats — both from the
    report's `divergence` table (`tf_forget/report/divergence_report.py`), for every
    design (K = 1 and K > 1).
Without labels (docs/spec.md §8.9) the gates bound flip rates: `max_flip_rate`, `max_kl`, and
`max_class_flip_rate`, `max_confident_flip_rate`, which `tf_forget.policy.unlabelled_gates`
evaluates on the summaries of its design (`verdict` hands them there).
A variant fails if it exceeds any gate, or if a gate's measure is missing or undefined (the gate
cannot be evaluated); the dense baseline is never gated. Bounds must be finite numbers >=
0 (`GateError`). The audit's exit status (eval/audit.py) and the bundle's manifest
(tf_forget/evaluate/deploy.py) use these verdicts; the report's verdict block
(`tf_forget/report/verdict.py`) shows them. One implementation, here.

Each gate is a `Gate` record of `GATES` (its bound's name, the measure it reads, its words) and
a field of `Gates`; `check` proves the two agree. The measures are those of
`tf_forget.policy.gate_inputs.gate_measures` (at K = 1 the paired tests, which the reasons then
name).
"""

import dataclasses
import math
import numbers
from typing import Any, Callable, Optional

from tf_forget.artifacts import errors
from tf_forget.artifacts import names
from tf_forget.policy import gate_inputs
from tf_forget.policy import unlabelled_gates

# K = 1: the paired tests the gates then read, in words.
K1_TOP1_TEST = "Newcombe, paired over the test examples"
K1_CLASS_TEST = "McNemar + BH over the test examples"
UNLABELLED_ONLY = "a gate of audits without labels (--labels=none)"
NO_DIVERGENCE = (
  "no output divergence (no saved logits for the variant or its dense "
  "reference, or no paired member)"
)


class GateError(errors.Error):
  """A gate bound that is not a finite number >= 0 (one line)."""


def _finite(value):
  """Whether `value` is a real number (not a bool) and finite."""
  return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


@dataclasses.dataclass(frozen=True)
class Gates:
  """User-set bounds; None disables a gate.

  Raises:
    GateError: a bound that is not a finite number >= 0 (NaN, infinity, negative, a string).
  """

  max_accuracy_drop: Optional[float] = None
  max_subgroup_fnr_increase: Optional[float] = None
  max_significant_classes: Optional[int] = None
  max_flip_rate: Optional[float] = None
  max_kl: Optional[float] = None
  max_class_flip_rate: Optional[float] = None
  max_confident_flip_rate: Optional[float] = None

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


def _interval_words(low, high, test):
  """'95% CI 1.00 to 3.00 points, <test>; ' (points), or '<test>; ' without an interval."""
  if _finite(low) and _finite(high):
    return f"95% CI {100 * low:.2f} to {100 * high:.2f} points, {test}; "
  return f"{test}; "


def _classes_reason(significant, bound, k1):
  """Why the significant-classes gate fails; at K = 1 with the paired test's name."""
  if k1:
    return (
      f"{significant} significant class{'' if significant == 1 else 'es'} "
      f"({K1_CLASS_TEST}; max {bound})"
    )
  return f"{significant} classes change significantly (max {bound})"


def _flip_reason(rate, bound, div):
  """Why the flip-rate gate fails: the rate, its flips and pairs, the bound (percent)."""
  div = div or {}
  counts = ", ".join(
    f"{div[k]} {k}" for k in ("broken", "fixed", "changed") if div.get(k) is not None
  )
  pairs = div.get("pairs")
  over = f" over {pairs} member pairs" if isinstance(pairs, int) and pairs > 1 else ""
  digits = 2  # more where two decimals cannot tell the rate from its bound
  while digits < 8 and round(100 * rate, digits) == round(100 * bound, digits):
    digits += 1
  return (
    f"top-1 flip rate {100 * rate:.{digits}f}% of test examples vs the reference"
    f"{' (' + counts + over + ')' if counts else ''} (max {100 * bound:.{digits}f}%)"
  )


def _kl_reason(kl, bound, div):
  """Why the KL gate fails: the mean KL with its interval and design, the bound (nats)."""
  div = div or {}
  low, high = div.get("kl_low"), div.get("kl_high")
  unit = "member pairs" if div.get("design") == "pairs" else "test examples"
  ci = (
    f"95% CI {low:.4g} to {high:.4g}, t over the {unit}; " if _finite(low) and _finite(high) else ""
  )
  return f"mean KL(reference ‖ file) {kl:.4g} nats ({ci}max {bound:g})"


def _is_k1(summary):
  """Whether the measures are a K = 1 variant's (`gate_inputs.gate_measures`)."""
  return summary.get("design") == gate_inputs.K1_DESIGN


def _drop(summary):
  """The top-1 drop (fraction; the negated change), None when undefined."""
  change = summary.get("top1_change")
  return -change if _finite(change) else None


def _drop_reason(drop, bound, summary):
  """Why the accuracy gate fails; at K = 1 with the paired interval and test."""
  low, high = summary.get("top1_low"), summary.get("top1_high")
  how = (
    _interval_words(-high, -low, K1_TOP1_TEST)
    if _is_k1(summary) and _finite(low) and _finite(high)
    else ""
  )
  return f"top-1 accuracy drops by {100 * drop:.2f} points ({how}max {100 * bound:.2f})"


def _worst_fnr(summary):
  """The worst subgroup's FNR record of the measures ({} when there is none)."""
  return (summary.get("worst_subgroup") or {}).get("fnr") or {}


def _fnr_reason(increase, bound, summary):
  """Why the subgroup gate fails; at K = 1 with the paired bootstrap interval."""
  worst = _worst_fnr(summary)
  how = (
    _interval_words(worst.get("low"), worst.get("high"), gate_inputs.K1_SUBGROUP_TEST)
    if _is_k1(summary)
    else ""
  )
  return (
    f"FNR of subgroup {worst.get('subgroup')} rises by {100 * increase:.2f} "
    f"points ({how}max {100 * bound:.2f})"
  )


@dataclasses.dataclass(frozen=True)
class Gate:
  """One gate: the bound's name, the measure it reads, and its words.

  Attributes:
    name: the bound's field of `Gates`, the flag (`--<name>`) and the configuration's key.
    kind: the flag's type, "float" or "integer".
    help: the flag's help.
    measure: callable(measures) -> the gated value (`gate_inputs.gate_measures`' dict), None
      when missing or undefined (the gate then fails).
    missing: why the gate cannot be evaluated when the value is missing.
    reason: callable(value, bound, measures) -> why the gate fails when value > bound.
    missing_k1: `missing` at K = 1 (None: `missing`).
  """

  name: str
  kind: str
  help: str
  measure: Callable[[dict], Optional[float]]
  missing: str
  reason: Callable[[Any, Any, dict], str]
  missing_k1: Optional[str] = None


# The gates, in the order of their reasons.
GATES = (
  Gate(
    "max_accuracy_drop",
    "float",
    "Gate: max top-1 drop vs dense, in points (0.01 = 1 pt).",
    _drop,
    "top-1 change undefined",
    _drop_reason,
  ),
  Gate(
    "max_subgroup_fnr_increase",
    "float",
    "Gate: max FNR increase of a protected subgroup (fraction).",
    lambda s: _worst_fnr(s).get("increase"),
    "no subgroup FNR change (no protected attributes, or undefined)",
    _fnr_reason,
  ),
  Gate(
    "max_significant_classes",
    "integer",
    "Gate: max classes with a significant recall change.",
    lambda s: s.get("significant_classes"),
    "significant classes undefined",
    lambda n, bound, s: _classes_reason(int(n), bound, _is_k1(s)),
    missing_k1="significant classes undefined (no per-class McNemar test)",
  ),
  Gate(
    "max_flip_rate",
    "float",
    "Gate: max share of test examples whose top-1 label differs from the dense reference's "
    "(broken + fixed + changed over n; 0.01 = 1%).",
    lambda s: s.get("flip_rate"),
    NO_DIVERGENCE,
    lambda rate, bound, s: _flip_reason(rate, bound, s.get("divergence")),
  ),
  Gate(
    "max_kl",
    "float",
    "Gate: max mean KL(reference || file) of the softmax outputs over the test examples, in "
    "nats (from the saved logits).",
    lambda s: s.get("kl_mean"),
    NO_DIVERGENCE,
    lambda kl, bound, s: _kl_reason(kl, bound, s.get("divergence")),
  ),
  # The two gates of an audit without labels: `unlabelled_gates` evaluates them on its own
  # summaries; on labelled data they are refused before the run (`unlabelled_gates.check`).
  Gate(
    "max_class_flip_rate",
    "float",
    "Gate without labels (--labels=none): max flip rate of any class the reference predicts, "
    "over the images it gives that class (0.05 = 5%; docs/spec.md §8.9).",
    lambda s: None,
    UNLABELLED_ONLY,
    lambda rate, bound, s: "",
  ),
  Gate(
    "max_confident_flip_rate",
    "float",
    "Gate without labels (--labels=none): max share of the images that are flips where the "
    "reference's softmax confidence is >= 0.9 (0.001 = 0.1%; docs/spec.md §8.9).",
    lambda s: None,
    UNLABELLED_ONLY,
    lambda rate, bound, s: "",
  ),
)


def check(gates=None, bounds=None):
  """Refuses, in one line, a gate table that does not match the bounds: every field of `Gates`
  one gate, in the same order, each of a known flag type.

  Args:
    gates: the table (default `GATES`).
    bounds: the bounds' dataclass (default `Gates`).

  Raises:
    GateError: the first mismatch.
  """
  gates = GATES if gates is None else gates
  fields = [f.name for f in dataclasses.fields(Gates if bounds is None else bounds)]
  named = [g.name for g in gates]
  if named != fields:
    raise GateError(f"gates {named} do not match the bounds of Gates {fields}")
  for g in gates:
    if g.kind not in ("float", "integer"):
      raise GateError(f"gate {g.name}: kind {g.kind!r} is not 'float' or 'integer'")


def verdict(variant, summary, gates):
  """Checks one variant's report summary against the gates (`GATES`, in order).

  A gate whose measure is missing or undefined (None / NaN: no protected attributes for the
  subgroup gate, no paired member for the top-1 change) fails the variant: a gate that cannot be
  evaluated is not passed.

  Args:
    variant: variant name.
    summary: `report.json["variants"][variant]` (top1_change, significant_classes,
      worst_subgroup), through `gate_inputs.gate_measures` (flip_rate, kl_mean, divergence; at
      K = 1 the paired tests, which the reasons then name).
    gates: `Gates`.

  Returns:
    (passed: bool, reasons: list of one-line strings).
  """
  if variant == names.DENSE:
    return True, []
  if summary.get("design") == unlabelled_gates.DESIGN:
    return unlabelled_gates.verdict(variant, summary, gates)
  reasons = []
  for gate in GATES:
    bound = getattr(gates, gate.name, None)
    if bound is None:
      continue
    value = gate.measure(summary)
    if not _finite(value):
      missing = gate.missing_k1 if _is_k1(summary) and gate.missing_k1 else gate.missing
      reasons.append(f"gate {gate.name} could not be evaluated: {missing}")
    elif value > bound:
      reasons.append(gate.reason(value, bound, summary))
  return not reasons, reasons


check()
