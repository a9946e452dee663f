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
`max_class_flip_rate`, `max_confident_flip_rate`, which `tf_forget/report/unlabelled_gates.py`
evaluates on the summaries of design `UNLABELLED_DESIGN`.
A variant fails if it exceeds any gate, or if a gate's measure is missing or undefined (the gate
cannot be evaluated); the dense baseline is never gated. Bounds must be finite numbers >=
0 (`GateError`). The audit's exit status (eval/audit.py) and the bundle's manifest
(tf_forget/evaluate/deploy.py) use these verdicts; the report's verdict block (`verdict.py`) shows
them. One implementation, here.

`gate_measures` hands the gates each variant's measures: its summary plus the flip rate and mean KL
of the `divergence` table. With one dense member (K = 1: the report's settings carry
`single_network`) the population measures (Welch over members, means over members) have no spread
over training seeds; `gate_measures` then also hands the gates the paired per-example tests of
`tf_forget/report/single_network.py` instead: the top-1 change of `k1_topline`, the classes marked
significant in `k1_classes` (exact McNemar per class, Benjamini-Hochberg over the classes) and the
protected subgroup whose FNR rose most in `k1_subgroups` (paired bootstrap interval). Every caller
(verdict, bundle, summary) goes through it, so every audit gates on the same numbers everywhere, and
a failed gate's reason names the measure (at K = 1 the test).
"""

import dataclasses
import math
import numbers
from typing import Optional

from tf_forget.artifacts import errors
from tf_forget.artifacts import names
from tf_forget.report import unlabelled_gates

# K = 1: the settings key of a single-network report (`single_network.SETTINGS_KEY`;
# not imported, to keep this module light for tf_forget/evaluate/deploy.py), the `design` a K = 1
# summary carries, the subgroup that is every example, and the tests the gates then read, in words.
K1_SETTINGS_KEY = "single_network"
K1_DESIGN = "single_network"
AGGREGATE = "aggregate"
K1_TOP1_TEST = "Newcombe, paired over the test examples"
K1_CLASS_TEST = "McNemar + BH over the test examples"
K1_SUBGROUP_TEST = "paired bootstrap over the test examples"
K1_RATES = ("fnr", "error")
UNLABELLED_DESIGN = unlabelled_gates.DESIGN  # summaries of an audit without labels
# The table the flip-rate and KL gates read (`divergence_report`; not imported).
DIVERGENCE_TABLE = "divergence"
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


def _rows(table, variant):
  """One variant's rows of a table as dicts: `table` a DataFrame (`Measures.tables`) or a list
  of row dicts (report.json `tables`); [] when None."""
  if table is None:
    return []
  rows = table.to_dict("records") if hasattr(table, "to_dict") else table
  return [r for r in rows if r.get("variant") == variant]


def _number(value):
  """`value` as a float, None when missing or not finite."""
  return float(value) if _finite(value) else None


def k1_worst_rate(rows, measure):
  """The protected subgroup whose `measure` rose most in one variant's `k1_subgroups` rows.

  The aggregate is excluded; ties go to the first in table order (as
  `groups.worst_subgroups`).

  Args:
    rows: row dicts of one variant (`subgroup`, `measure`, `n`, `rate_reference`,
      `rate_candidate`, `change`, `low`, `high`).
    measure: "fnr" or "error".

  Returns:
    dict `subgroup`, `baseline`, `compressed`, `increase` (fraction), `low`, `high` (its paired
    bootstrap 95% interval), `n` (the rate's denominator: actual positives for FNR), `test`;
    None when no change is defined.
  """
  best = None
  for r in rows:
    if (
      r.get("measure") != measure or r.get("subgroup") == AGGREGATE or not _finite(r.get("change"))
    ):
      continue
    if best is None or r["change"] > best["change"]:
      best = r
  if best is None:
    return None
  return {
    "subgroup": str(best["subgroup"]),
    "baseline": _number(best.get("rate_reference")),
    "compressed": _number(best.get("rate_candidate")),
    "increase": float(best["change"]),
    "low": _number(best.get("low")),
    "high": _number(best.get("high")),
    "n": int(best["n"]) if _finite(best.get("n")) else None,
    "test": K1_SUBGROUP_TEST,
  }


def divergence_measures(rows):
  """The divergence gates' measures from one variant's `divergence` rows.

  Returns:
    dict `flip_rate` (fraction), `kl_mean` (nats) and `divergence` {`kl_low`, `kl_high`,
    `design`, `pairs`, `n`, `broken`, `fixed`, `changed`}; None for each without a row (no
    saved logits: the gates cannot be evaluated).
  """
  if not rows:
    return {"flip_rate": None, "kl_mean": None, "divergence": None}
  r = rows[0]
  return {
    "flip_rate": _number(r.get("flip_rate")),
    "kl_mean": _number(r.get("kl_mean")),
    "divergence": {
      "kl_low": _number(r.get("kl_low")),
      "kl_high": _number(r.get("kl_high")),
      "design": r.get("design"),
      "pairs": r.get("pairs"),
      "n": r.get("n"),
      **{k: r.get(k) for k in ("broken", "fixed", "changed")},
    },
  }


def gate_measures(variant, summary, settings, tables):
  """The measures the gates read for one variant: its summary, the output divergence, and at
  K = 1 the paired tests.

  For every design, a copy of `summary` with `divergence_measures` of the variant's
  `divergence` rows (`flip_rate`, `kl_mean`, `divergence`). With the K = 1 design (`settings`
  carry `single_network`) also `design` = `K1_DESIGN` and:
    * `top1_change`, `top1_low`, `top1_high`: the variant's `k1_topline` row (difference and
      Newcombe 95% interval over the test examples); the summary's change when it has none;
    * `significant_classes`: its `k1_classes` rows marked `significant` (exact McNemar per
      class, Benjamini-Hochberg over the classes); None (undefined: the gate fails) when the
      variant has no rows;
    * `worst_subgroup`: {`fnr`, `error`: `k1_worst_rate`} from `k1_subgroups`; None without
      that table (no protected attributes) or without a defined change.

  Args:
    variant: variant name.
    summary: `report.json["variants"][variant]` / `unit.Measures.variants[variant]`.
    settings: the report's settings (`report.json["settings"]` / `unit.Measures.config`).
    tables: name -> table (DataFrame or list of row dicts) of the report.

  Returns:
    dict (for dense the summary itself: the baseline is never gated).
  """
  if variant == names.DENSE or summary.get("design") == UNLABELLED_DESIGN:
    return summary
  tables = tables or {}
  out = dict(summary, **divergence_measures(_rows(tables.get(DIVERGENCE_TABLE), variant)))
  if (settings or {}).get(K1_SETTINGS_KEY) is None:
    return out
  out["design"] = K1_DESIGN
  top = _rows(tables.get("k1_topline"), variant)
  if top:
    out.update(
      top1_change=_number(top[0].get("difference")),
      top1_low=_number(top[0].get("low")),
      top1_high=_number(top[0].get("high")),
    )
  classes = _rows(tables.get("k1_classes"), variant)
  out["significant_classes"] = (
    sum(r.get("significant") is True for r in classes) if classes else None
  )
  groups = _rows(tables.get("k1_subgroups"), variant)
  worst = {m: k1_worst_rate(groups, m) for m in K1_RATES}
  out["worst_subgroup"] = worst if any(worst.values()) else None
  return out


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
      worst_subgroup), through `gate_measures` (flip_rate, kl_mean, divergence; at K = 1 the
      paired tests, which the reasons then name).
    gates: `Gates`.

  Returns:
    (passed: bool, reasons: list of one-line strings).
  """
  if variant == names.DENSE:
    return True, []
  if summary.get("design") == UNLABELLED_DESIGN:
    return unlabelled_gates.verdict(variant, summary, gates)
  k1 = summary.get("design") == K1_DESIGN
  change = summary.get("top1_change")
  drop = -change if _finite(change) else None
  worst = (summary.get("worst_subgroup") or {}).get("fnr") or {}
  increase = worst.get("increase")
  significant = summary.get("significant_classes")
  # K = 1: the reason names the paired test (and interval) the measure comes from.
  top_how = (
    _interval_words(-summary["top1_high"], -summary["top1_low"], K1_TOP1_TEST)
    if k1 and _finite(summary.get("top1_low")) and _finite(summary.get("top1_high"))
    else ""
  )
  fnr_how = _interval_words(worst.get("low"), worst.get("high"), K1_SUBGROUP_TEST) if k1 else ""
  reasons = [
    _check(
      "max_accuracy_drop",
      gates.max_accuracy_drop,
      drop,
      "top-1 change undefined",
      lambda: (
        f"top-1 accuracy drops by {100 * drop:.2f} points "
        f"({top_how}max {100 * gates.max_accuracy_drop:.2f})"
      ),
    ),
    _check(
      "max_subgroup_fnr_increase",
      gates.max_subgroup_fnr_increase,
      increase,
      "no subgroup FNR change (no protected attributes, or undefined)",
      lambda: (
        f"FNR of subgroup {worst.get('subgroup')} rises by {100 * increase:.2f} "
        f"points ({fnr_how}max {100 * gates.max_subgroup_fnr_increase:.2f})"
      ),
    ),
    _check(
      "max_significant_classes",
      gates.max_significant_classes,
      significant,
      "significant classes undefined" + (" (no per-class McNemar test)" if k1 else ""),
      lambda: _classes_reason(int(significant), gates.max_significant_classes, k1),
    ),
    _check(
      "max_flip_rate",
      gates.max_flip_rate,
      summary.get("flip_rate"),
      NO_DIVERGENCE,
      lambda: _flip_reason(summary["flip_rate"], gates.max_flip_rate, summary.get("divergence")),
    ),
    _check(
      "max_kl",
      gates.max_kl,
      summary.get("kl_mean"),
      NO_DIVERGENCE,
      lambda: _kl_reason(summary["kl_mean"], gates.max_kl, summary.get("divergence")),
    ),
  ]
  reasons = [r for r in reasons if r is not None]
  return not reasons, reasons
