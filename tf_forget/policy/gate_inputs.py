"""What the gates read of a report: each variant's measures, the same for every caller.

`gate_measures` hands the gates (`tf_forget.policy.gates`) each variant's measures: its summary
plus the flip rate and mean KL of the `divergence` table. With one dense member (K = 1: the
report's settings carry `single_network`) the population measures (Welch over members, means over
members) have no spread over training seeds; `gate_measures` then also hands the gates the paired
per-example tests of `tf_forget/report/single_network.py` instead: the top-1 change of
`k1_topline`, the classes marked significant in `k1_classes` (exact McNemar per class,
Benjamini-Hochberg over the classes) and the protected subgroup whose FNR rose most in
`k1_subgroups` (paired bootstrap interval). Every caller (the report's verdict, the bundle, the
terminal and Markdown summaries) goes through it, so every audit gates on the same numbers
everywhere, and a failed gate's reason names the measure (at K = 1 the test).
"""

import math
import numbers

from tf_forget.artifacts import names
from tf_forget.policy import unlabelled_gates

# K = 1: the settings key of a single-network report (`tf_forget.report.single_network`'s
# `SETTINGS_KEY`; the report sits above the policy), the `design` a K = 1 summary carries, the
# subgroup that is every example, the rates of `k1_subgroups`, and the paired subgroup test.
K1_SETTINGS_KEY = "single_network"
K1_DESIGN = "single_network"
AGGREGATE = "aggregate"
K1_RATES = ("fnr", "error")
K1_SUBGROUP_TEST = "paired bootstrap over the test examples"
# The table the flip-rate and KL gates read (`tf_forget.report.divergence_report`).
DIVERGENCE_TABLE = "divergence"


def _finite(value):
  """Whether `value` is a real number (not a bool) and finite."""
  return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


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
  if variant == names.DENSE or summary.get("design") == unlabelled_gates.DESIGN:
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
