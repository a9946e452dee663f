"""The overview: each variant's summary (report.json's `variants`, given as `variants`) and one
row per variant of the numbers a reviewer and a deployment gate look at first (`overview`).

The summary gathers the core units' parts: members and top-1 (`topline`), the class counts
(`class_summaries`), #PIE and its ties (`pie`), the pairing and α (`alpha_summaries`) and the
worst subgroup (`worst_subgroups`).
"""

import numpy as np
import pandas as pd

from tf_forget.artifacts import names
from tf_forget.report import html
from tf_forget.report import unit


def summaries(topline, class_summaries, pie, alpha_summaries, worst_subgroups):
  """variant -> summary dict, in the topline's order (see the module docstring)."""
  out = {}
  pies = pie.set_index("variant")
  for _, row in topline[topline.metric == "top1"].iterrows():
    variant = row["variant"]
    out[variant] = {
      "members": int(row["members"]),
      "top1": float(row["mean"]),
      "top1_change": float(row["change"]),
    }
    if variant == names.DENSE:
      continue
    p = pies.loc[variant]
    out[variant].update(class_summaries[variant])
    out[variant].update(
      {
        "pie_count": int(p["pie_count"]),
        "pie_ties_dense": int(p["ties_dense"]),
        "pie_ties_compressed": int(p["ties_compressed"]),
      }
    )
    out[variant].update(alpha_summaries[variant])
  for variant, worst in worst_subgroups.items():
    out[variant]["worst_subgroup"] = worst
  return out


def overview_table(variants):
  """One row per variant: the numbers a reviewer (and a deployment gate) looks at first.

  Args:
    variants: the variants' summaries (`summaries`).

  Returns:
    DataFrame columns `variant`, `members`, `top1`, `top1_change`, `significant_classes`,
    `pie_count`, `mean_alpha`, `alpha_label`, `worst_fnr_subgroup`, `worst_fnr_increase`
    (NaN / "" where not applicable, e.g. for dense).
  """
  rows = []
  for variant, s in variants.items():
    worst = (s.get("worst_subgroup") or {}).get("fnr") or {}
    rows.append(
      {
        "variant": variant,
        "members": s["members"],
        "top1": s["top1"],
        "top1_change": s["top1_change"],
        "significant_classes": s.get("significant_classes", np.nan),
        "pie_count": s.get("pie_count", np.nan),
        "mean_alpha": s.get("mean_alpha", np.nan),
        "alpha_label": s.get("alpha_label", ""),
        "worst_fnr_subgroup": worst.get("subgroup", ""),
        "worst_fnr_increase": worst.get("increase", np.nan),
      }
    )
  return pd.DataFrame(rows)


def _compute(topline, class_summaries, pie, alpha_summaries, worst_subgroups):
  variants = summaries(topline, class_summaries, pie, alpha_summaries, worst_subgroups)
  return unit.Part({"overview": overview_table(variants)}, gives={"variants": variants})


def render(overview):
  """The section: the overview table."""
  return (
    "<p class=\"lead\">Per variant against the dense population. top1_change and "
    "worst_fnr_increase are differences in accuracy / FNR (percentage points); α &lt; 1 "
    "means compression shrank the per-class recall imbalance, &gt; 1 that it "
    "intensified it.</p>"
    + html.table(
      overview,
      {
        "members": "int",
        "top1": html.PCT,
        "top1_change": html.PTS_ABS,
        "significant_classes": "int",
        "pie_count": "int",
        "worst_fnr_increase": html.PTS_ABS,
      },
    )
  )


UNIT = unit.Unit(
  "overview",
  reads=("topline", "class_summaries", "pie", "alpha_summaries", "worst_subgroups"),
  makes=("overview",),
  gives=("variants",),
  compute=_compute,
  sections=(
    unit.Section(
      "overview", "Overview", "Overview", ("overview",), render, designs=(unit.POPULATION,)
    ),
  ),
)
