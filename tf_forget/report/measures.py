"""Every measure of the papers that applies to a run, as tables (DataFrames) and JSON.

Calls `tf_forget.stats` (docs/artifacts/stats.md) on a `collect.Run`; nothing is recomputed
here. Per compressed variant against the dense population (docs/spec.md §1.1, §1.3):

* top-line accuracy (000 Table 2; top-5 only with more than 5 classes);
* class level: Welch test per class, absolute / normalized / relative recall difference,
  #significant classes, gained / lost (000 §2.2, Figure 2; docs/spec.md §3.1-3.3) — see
  `class_measures`;
* PIE: modal labels, #PIE, ties, accuracy on PIE / non-PIE / all (000 §2.3, Table 6;
  docs/spec.md §3.4-3.5);
* Taxicab CIE ranking and accuracy at percentiles (004 §3.1, Table 2; docs/spec.md §4.1);
* subgroups (004 Tables 3-5; docs/spec.md §4.2-4.3) and over-indexing (004 Figure 2;
  docs/spec.md §4.4), only with protected attributes — see `groups`;
* robustness per corruption (000 Table 3; docs/spec.md §3.6) — see `groups`;
* published test sets: ImageNet-A (000 Table 8; docs/spec.md §3.6, optional 200-class mask) and
  CIFAR-10.1 — see `published_report` (only when such a split was evaluated);
* recall-distortion slope α with a 99% CI (002 §5-6; docs/spec.md §5.2-5.3).

Measures that pair members (eq. 3, Taxicab, α) pair them as `Run.pairing` says
(`tf_forget.report.pairing`): a one-shot member with the dense parent its metadata links to
(002 §6.2: α compares one network before and after pruning), every other member with the dense
member of the same index k (docs/spec.md §1.3). The `recall_distortion` table states the pairing per
row. One-shot variants also get 002's study (`recall_study`: per (algorithm, ratio) α, the
§7 t-tests). A measure undefined for the run (one member, a zero accuracy) gives NaN and a
note, never an exception.
"""

import dataclasses
from typing import Dict, List

import numpy as np
import pandas as pd

from tf_forget.artifacts import names
from tf_forget.report import class_measures
from tf_forget.report import groups
from tf_forget.report import pairing as pairing_lib
from tf_forget.report import published_report
from tf_forget.report import recall_study
from tf_forget.stats import accuracy
from tf_forget.stats import cie
from tf_forget.stats import exemplars
from tf_forget.stats import intervals
from tf_forget.stats import recall_distortion
from tf_forget.stats import validate

TOPK = 5


@dataclasses.dataclass
class Measures:
  """The report's numbers.

  Attributes:
    tables: name -> DataFrame (one CSV each; see docs/artifacts/report.md).
    variants: variant -> per-variant summary dict (JSON-ready).
    cie: compressed variant -> dict with `order` int `[N]` (Taxicab rank, largest first),
      `distance` int `[N]`, `modal_0`, `modal_t` int `[N]`, `members` int.
    notes: measure -> list of one-line notes (what was skipped and why).
    config: the measure settings used.
    study: the `recall_study.Study` of the one-shot variants (its figures' data), or None.
  """

  tables: Dict[str, pd.DataFrame]
  variants: Dict[str, dict]
  cie: Dict[str, dict]
  notes: Dict[str, List[str]]
  config: dict
  study: object = None


def use_topk(num_classes):
  """Top-5 is reported only with more than 5 classes."""
  return num_classes > TOPK


def topline_table(run):
  """Top-line accuracy per variant: mean / std / min / max over members (000 Table 2).

  Returns:
    DataFrame columns `variant`, `metric` ("top1", "top5" if C > 5), `mean`, `std`, `min`,
    `max`, `members`, `ci_low`, `ci_high` (95% t interval of the mean over members,
    `intervals.mean_interval`), `change` (mean minus dense's mean, fraction).
  """
  rows = []
  for variant, pop in run.eval.items():
    metrics = {"top1": accuracy.top1_accuracy(pop.top1, pop.labels)}
    if use_topk(run.num_classes):
      metrics["top5"] = accuracy.topk_accuracy(pop.topk, pop.labels, k=TOPK)
    for metric, values in metrics.items():
      ci = intervals.mean_interval(values)
      rows.append(
        {
          "variant": variant,
          "metric": metric,
          **accuracy.population_summary(values),
          "ci_low": ci["low"],
          "ci_high": ci["high"],
        }
      )
  table = pd.DataFrame(
    rows, columns=["variant", "metric", "mean", "std", "min", "max", "members", "ci_low", "ci_high"]
  )
  dense_mean = table[table.variant == names.DENSE].set_index("metric")["mean"]
  table["change"] = table["mean"] - table["metric"].map(dense_mean)
  return table


def pie_measures(run, variant, sample_size=None, seed=0):
  """#PIE, ties and accuracy on PIE / non-PIE / all (000 §2.3, Table 6; docs/spec.md §3.4-3.5).

  Returns:
    (dict from `exemplars.pruning_identified_exemplars`, DataFrame from
    `exemplars.accuracy_on_subsets`).
  """
  pop_0, pop_t = run.eval[names.DENSE], run.eval[variant]
  pie = exemplars.pruning_identified_exemplars(pop_0.top1, pop_t.top1, run.num_classes)
  k = use_topk(run.num_classes)
  table = exemplars.accuracy_on_subsets(
    pop_0.top1,
    pop_t.top1,
    pop_0.labels,
    pie["pie"],
    topk_predictions_0=pop_0.topk if k else None,
    topk_predictions_t=pop_t.topk if k else None,
    k=TOPK,
    sample_size=sample_size,
    seed=seed,
    subset_name="pie",
  )
  return pie, table


def taxicab_measures(run, variant, percentiles=cie.PERCENTILES, seed=0):
  """Taxicab CIE distance, seeded ranking and accuracy at percentiles (004 §3.1, Table 2).

  Returns:
    (dict `order`, `distance`, `modal_0`, `modal_t`, `members`, or None without shared
    members; DataFrame from `cie.taxicab_cie_accuracy` or None).
  """
  q0, qt = pairing_lib.paired_with_dense(run, variant)
  if not q0.members.size:
    return None, None
  distance = cie.taxicab_distance(q0.top1, qt.top1, run.num_classes)
  order = cie.rank_by_distance(distance, seed)
  k = use_topk(run.num_classes)
  table = cie.taxicab_cie_accuracy(
    q0.top1,
    qt.top1,
    q0.labels,
    percentiles=percentiles,
    seed=seed,
    num_classes=run.num_classes,
    topk_predictions_0=q0.topk if k else None,
    topk_predictions_t=qt.topk if k else None,
    k=TOPK,
  )
  modal_0, _ = exemplars.modal_label(q0.top1, run.num_classes)
  modal_t, _ = exemplars.modal_label(qt.top1, run.num_classes)
  return (
    {
      "order": order,
      "distance": distance,
      "modal_0": modal_0,
      "modal_t": modal_t,
      "members": int(q0.members.size),
    },
    table,
  )


def alpha_measures(run, variant, confidence=0.99):
  """Recall-distortion slope α per member, mean α with CI and label (002 §5-6;
  docs/spec.md §5.2-5.3).

  α_t(m) compares member k_t with the dense member it is paired with (`run.pairing_of`): for
  one-shot variants its parent, the same network before pruning (002 §6.2); for gradual
  pruning member k, an independently trained network.

  Returns:
    (dict from `recall_distortion.recall_distortion_summary` with `alphas` as a list,
    `members`, `pairs` ([k_dense, k_variant] per alpha) and `pairing` (the pairing label), or
    NaN fields and a note where undefined; list of notes).
  """
  pairing = run.pairing_of(variant)
  q0, qt = pairing_lib.paired_with_dense(run, variant)
  nan = float("nan")
  empty = {
    "alphas": [],
    "mean_alpha": {"mean": nan, "low": nan, "high": nan, "label": "?", "n": 0},
    "alpha_hat": nan,
    "r2": nan,
    "mean_accuracy_0": nan,
    "mean_accuracy_t": nan,
    "recall_variance_0": nan,
    "recall_variance_t": nan,
    "members": 0,
    "pairs": [],
    "pairing": pairing["label"],
  }
  if not q0.members.size:
    return empty, [f"{variant}: no member paired with dense; α not computed"]
  r0, a0 = class_measures.recall_and_accuracy(q0, run.num_classes)
  rt, at = class_measures.recall_and_accuracy(qt, run.num_classes)
  try:
    out = recall_distortion.recall_distortion_summary(r0, a0, rt, at, confidence=confidence)
  except validate.StatsInputError as e:
    return empty, [f"{variant}: α not computed ({e})"]
  out = dict(
    out,
    alphas=[float(a) for a in out["alphas"]],
    members=int(q0.members.size),
    pairs=[[int(a), int(b)] for a, b in zip(q0.members, qt.members)],
    pairing=pairing["label"],
  )
  notes = []
  if out["mean_alpha"]["n"] < 2:
    notes.append(
      f"{variant}: the CI of α needs at least 2 defined slopes (have {out['mean_alpha']['n']})"
    )
  return out, notes


def _variant_measures(
  run, variant, notes, seed, alpha, center, correction, percentiles, sample_size, confidence
):
  """One compressed variant's measures (`compute`'s arguments); its notes go to `notes`.

  Returns:
    dict `class_level`, `pie` (its `pie` row), `pie_accuracy`, `taxicab` and `cie_accuracy`
    (None without a member shared with dense), `alpha` (its `recall_distortion` row) and
    `summary` (its fields of `Measures.variants`).
  """
  table, n = class_measures.class_table(run, variant, alpha, center, correction)
  notes.setdefault("class_level", []).extend(n)
  pie, acc = pie_measures(run, variant, sample_size, seed)
  taxi, cacc = taxicab_measures(run, variant, percentiles, seed)
  if taxi is None:
    notes.setdefault("cie", []).append(f"{variant}: no member shared with dense")
  rd, n = alpha_measures(run, variant, confidence)
  notes.setdefault("recall_distortion", []).extend(n)
  return {
    "class_level": table,
    "pie": {
      "variant": variant,
      "pie_count": pie["count"],
      "pie_fraction": pie["count"] / pie["pie"].size,
      "examples": int(pie["pie"].size),
      "ties_dense": pie["ties_0"],
      "ties_compressed": pie["ties_t"],
    },
    "pie_accuracy": acc,
    "taxicab": taxi,
    "cie_accuracy": cacc,
    "alpha": {
      "variant": variant,
      "pairing": rd["pairing"],
      "members": rd["members"],
      "mean_alpha": rd["mean_alpha"]["mean"],
      "ci_low": rd["mean_alpha"]["low"],
      "ci_high": rd["mean_alpha"]["high"],
      "label": rd["mean_alpha"]["label"],
      "n": rd["mean_alpha"]["n"],
      "alpha_hat": rd["alpha_hat"],
      "r2": rd["r2"],
      "mean_accuracy_0": rd["mean_accuracy_0"],
      "mean_accuracy_t": rd["mean_accuracy_t"],
      "recall_variance_0": rd["recall_variance_0"],
      "recall_variance_t": rd["recall_variance_t"],
    },
    "summary": {
      **class_measures.class_summary(run, variant, table, alpha),
      "pie_count": pie["count"],
      "pie_ties_dense": pie["ties_0"],
      "pie_ties_compressed": pie["ties_t"],
      "pairing": rd["pairing"],
      "alpha_pairs": rd["pairs"],
      "alphas": rd["alphas"],
      "mean_alpha": rd["mean_alpha"]["mean"],
      "alpha_label": rd["mean_alpha"]["label"],
    },
  }


def compute(
  run,
  seed=0,
  alpha=0.05,
  center="member",
  correction=None,
  percentiles=cie.PERCENTILES,
  over_indexing_percentile=80,
  subgroup_members=10,
  sample_size=None,
  confidence=0.99,
  imagenet_a_mask=False,
):
  """Computes every measure that applies to `run`.

  Args:
    run: a `collect.Run`.
    seed: seed of Taxicab tie-breaking (docs/spec.md §4.1) and of optional PIE samples.
    alpha: significance level of the Welch test (000: 0.05).
    center, correction: see `class_level.welch_class_test` (docs/spec.md §3.1).
    percentiles: Taxicab CIE percentiles (docs/spec.md §4.1).
    over_indexing_percentile: CIEs of 004 Figure 2 (docs/spec.md §4.4: 80).
    subgroup_members: members averaged in subgroup tables (docs/spec.md §1.5: first 10).
    sample_size: optional PIE / non-PIE sample size (docs/spec.md §3.5; default the full subsets).
    confidence: CI level of α (002: 0.99).
    imagenet_a_mask: 000 Table 8 also with the argmax over ImageNet-A's 200 classes
      (Hendrycks' protocol; docs/spec.md §3.6: 1000-way by default).

  Returns:
    `Measures`.
  """
  config = {
    "seed": seed,
    "alpha": alpha,
    "center": center,
    "correction": correction,
    "percentiles": [float(p) for p in percentiles],
    "over_indexing_percentile": float(over_indexing_percentile),
    "subgroup_members": subgroup_members,
    "pie_sample_size": sample_size,
    "confidence": confidence,
    "topk": use_topk(run.num_classes),
  }
  notes = {"pairing": [n for v in run.eval if v != names.DENSE for n in run.pairing_of(v)["notes"]]}
  tables = {"topline": topline_table(run)}
  class_rows, pie_counts, pie_acc, cie_acc, alpha_rows = [], [], [], [], []
  cies, variants = {}, {}
  for variant in run.eval:
    top = tables["topline"]
    row = top[(top.variant == variant) & (top.metric == "top1")].iloc[0]
    variants[variant] = {
      "members": int(row["members"]),
      "top1": float(row["mean"]),
      "top1_change": float(row["change"]),
    }
    if variant == names.DENSE:
      continue
    one = _variant_measures(
      run, variant, notes, seed, alpha, center, correction, percentiles, sample_size, confidence
    )
    class_rows.append(one["class_level"].reset_index().assign(variant=variant))
    pie_counts.append(one["pie"])
    pie_acc.append(one["pie_accuracy"].assign(variant=variant))
    if one["taxicab"] is not None:
      cies[variant] = one["taxicab"]
      cie_acc.append(one["cie_accuracy"].assign(variant=variant))
    alpha_rows.append(one["alpha"])
    variants[variant].update(one["summary"])
  compressed = [v for v in run.eval if v != names.DENSE]
  if not compressed:
    notes.setdefault("report", []).append("only the dense population: nothing to compare")
  tables["class_level"] = _concat(class_rows, ["variant", "class"])
  tables["pie"] = pd.DataFrame(
    pie_counts,
    columns=["variant", "pie_count", "pie_fraction", "examples", "ties_dense", "ties_compressed"],
  )
  tables["pie_accuracy"] = _concat(pie_acc, ["variant"])
  tables["cie_accuracy"] = _concat(cie_acc, ["variant"])
  tables["recall_distortion"] = pd.DataFrame(alpha_rows)
  study = recall_study.compute(run, variants, tables["recall_distortion"])
  if study is not None:
    tables.update(study.tables)
    notes.setdefault("recall_study", []).extend(study.notes)
  group_tables, group_notes, worst = groups.compute(
    run,
    cies,
    subgroup_members=subgroup_members,
    over_indexing_percentile=over_indexing_percentile,
    seed=seed,
  )
  tables.update(group_tables)
  for key, n in group_notes.items():
    notes.setdefault(key, []).extend(n)
  for variant, w in worst.items():
    variants[variant]["worst_subgroup"] = w
  pub_tables, pub_notes, pub_settings = published_report.compute(run, imagenet_a_mask)
  tables.update(pub_tables)
  notes.setdefault("published", []).extend(pub_notes)
  if pub_settings is not None:  # only then: a run without published splits keeps its settings
    config["published"] = pub_settings
  tables["overview"] = overview_table(variants)
  return Measures(
    tables=tables,
    variants=variants,
    cie=cies,
    notes={k: v for k, v in notes.items() if v},
    config=config,
    study=study,
  )


def overview_table(variants):
  """One row per variant: the numbers a reviewer (and a deployment gate) looks at first.

  Args:
    variants: `Measures.variants`.

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


def _concat(frames, first):
  """Concatenates per-variant frames, `first` columns in front (empty frame if none)."""
  if not frames:
    return pd.DataFrame(columns=first)
  out = pd.concat(frames, ignore_index=True)
  return out[first + [c for c in out.columns if c not in first]]
