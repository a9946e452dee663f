"""The measures that need more than the evaluation split's predictions: subgroups (protected
attributes), over-indexing (training-split attribute shares) and robustness (corrupted splits).

* Subgroup error / FPR / FNR and normalized differences, 004 Tables 3-5 (docs/spec.md §4.2-4.3):
  only for a binary task whose data set names protected attributes; members averaged are the first
  `subgroup_members` (docs/spec.md §1.5: 10), or all if fewer.
* Over-indexing of attributes among Taxicab CIEs at percentile 80, 004 Figure 2 (docs/spec.md §4.4).
* Robustness per corruption normalized to dense, 000 Table 3 (docs/spec.md §3.6): accuracy averaged
  over members and severities 1-5 first.

All numbers come from `tf_forget.stats` (subgroups, cie, robustness, accuracy); the units
`tf_forget.report.units.subgroups` and `robustness` put them in the report.
"""

import numpy as np
import pandas as pd

from tf_forget.artifacts import names
from tf_forget.report import pairing as pairing_lib
from tf_forget.stats import accuracy
from tf_forget.stats import cie
from tf_forget.stats import intervals
from tf_forget.stats import robustness
from tf_forget.stats import subgroups
from tf_forget.stats import validate

SEVERITIES = (1, 2, 3, 4, 5)


def subgroup_tables(run, subgroup_members=10):
  """004 Tables 3 and 5 for every compressed variant.

  Besides 004's rows, `model` = "absolute_difference" holds compressed − baseline (fractions,
  i.e. points of rate): the normalized difference of a near-zero baseline rate explodes (a
  subgroup with FNR 0.009 → 0.057 reads +550%), the absolute one does not; `absolute_low` /
  `absolute_high` its 95% interval over the members.

  Returns:
    (DataFrame with columns `variant`, `model` (baseline / compressed /
    normalized_difference / absolute_difference / absolute_low / absolute_high), `metric`
    (error / fpr / fnr) and one column per subgroup, or None when the measure does not apply;
    list of notes).
  """
  protected = tuple(run.protected_attributes)
  if not protected:
    return None, [f"data set {run.dataset_name!r} has no protected attributes"]
  missing = [a for a in protected if a not in run.attributes]
  if missing:
    return None, [f"attributes {missing} missing from the evaluation split"]
  if run.num_classes != 2:
    return None, [f"subgroup FPR / FNR need a binary task ({run.num_classes} classes)"]
  pop_0 = run.eval[names.DENSE]
  compressed = {v: v for v in run.eval if v != names.DENSE}
  masks = subgroups.subgroup_masks(run.attributes, pop_0.labels.size, protected)

  def table(variant):
    pop_t = run.eval[variant]
    t = subgroups.subgroup_table(
      pop_0.top1,
      pop_t.top1,
      pop_0.labels,
      run.attributes,
      protected=protected,
      num_members=subgroup_members,
    )
    diff = t.loc["compressed"] - t.loc["baseline"]
    low, high = _difference_intervals(run, variant, masks, subgroup_members)
    parts = [t]
    for model, frame in (
      ("absolute_difference", diff),
      ("absolute_low", low),
      ("absolute_high", high),
    ):
      frame = frame.reindex(diff.index)[list(diff.columns)]
      frame.index = pd.MultiIndex.from_tuples([(model, m) for m in diff.index], names=t.index.names)
      parts.append(frame)
    return pd.concat(parts)

  return _per_variant(compressed, table, "subgroup table", ["variant", "model", "metric"])


def _difference_intervals(run, variant, masks, subgroup_members):
  """95% intervals of each rate's change (compressed − dense) over the first members.

  Welch over independent members, paired for the same network (`pairing_lib.comparison`);
  clipped to [−1, 1] (`intervals.mean_difference_interval`).

  Returns:
    (low, high): DataFrames indexed by metric, one column per subgroup.
  """
  p0, pt, is_paired = pairing_lib.comparison(run, variant)
  m = subgroup_members
  labels = run.eval[names.DENSE].labels
  if not pt.members.size:
    nan = pd.DataFrame(np.nan, index=list(subgroups.METRICS), columns=list(masks))
    return nan, nan
  r0 = subgroups.subgroup_rates(p0.top1[:m], labels, masks)
  rt = subgroups.subgroup_rates(pt.top1[:m], labels, masks)
  low, high = {}, {}
  for metric in subgroups.METRICS:
    cis = [
      intervals.mean_difference_interval(
        r0[metric][:, g], rt[metric][:, g], paired=is_paired, bounds=(0.0, 1.0)
      )
      for g in range(len(masks))
    ]
    low[metric] = [c["low"] for c in cis]
    high[metric] = [c["high"] for c in cis]
  return (
    pd.DataFrame.from_dict(low, orient="index", columns=list(masks)),
    pd.DataFrame.from_dict(high, orient="index", columns=list(masks)),
  )


def subgroup_counts(run):
  """Examples, actual positives and negatives per subgroup: the n behind every rate.

  Returns:
    DataFrame columns `subgroup` (the `subgroup_tables` column names, aggregate first),
    `examples`, `positives`, `negatives`.
  """
  labels = run.eval[names.DENSE].labels
  masks = subgroups.subgroup_masks(run.attributes, labels.size, tuple(run.protected_attributes))
  return pd.DataFrame(
    [
      {
        "subgroup": name,
        "examples": int(m.sum()),
        "positives": int(np.sum(m & (labels == 1))),
        "negatives": int(np.sum(m & (labels != 1))),
      }
      for name, m in masks.items()
    ]
  )


def worst_subgroups(table):
  """Per variant, the subgroup whose FNR (and error) grew most (for gates and the manifest).

  Args:
    table: from `subgroup_tables`.

  Returns:
    dict variant -> {metric: {`subgroup`, `baseline`, `compressed`, `increase` (fraction),
    `normalized_difference` (%)}} for metric in (fnr, error); the subgroup with the largest
    absolute increase, the aggregate excluded; None where every cell is undefined.
  """
  out = {}
  groups = [c for c in table.columns if c not in ("variant", "model", "metric", "aggregate")]
  for variant, t in table.groupby("variant", sort=False):
    out[variant] = {}
    for metric in ("fnr", "error"):
      cell = {
        m: t[(t.model == m) & (t.metric == metric)][groups].iloc[0].to_numpy(float)
        for m in ("baseline", "compressed", "normalized_difference")
      }
      increase = cell["compressed"] - cell["baseline"]
      if np.isnan(increase).all():
        out[variant][metric] = None
        continue
      i = int(np.nanargmax(increase))
      out[variant][metric] = {
        "subgroup": groups[i],
        "baseline": float(cell["baseline"][i]),
        "compressed": float(cell["compressed"][i]),
        "increase": float(increase[i]),
        "normalized_difference": float(cell["normalized_difference"][i]),
      }
  return out


def over_indexing_table(run, cies, percentile=80, seed=0):
  """Relative representation of each attribute among Taxicab CIEs (004 Figure 2; docs/spec.md §4.4).

  Args:
    run: `collect.Run`.
    cies: variant -> dict with `distance` (from `units.exemplars.taxicab_measures`).
    percentile: CIE threshold (docs/spec.md §4.4: 80).
    seed: tie-breaking seed (docs/spec.md §4.1).

  Returns:
    (DataFrame columns `variant`, `attribute`, `train_share`, `cie_share`,
    `relative_representation`, `cie_count`, or None; list of notes).
  """
  if not run.attributes:
    return None, [f"data set {run.dataset_name!r} has no attributes"]
  if not run.train_attribute_shares:
    return None, ["no training-split attribute shares"]
  return _per_variant(
    cies,
    lambda c: subgroups.over_indexing(
      run.train_attribute_shares,
      run.attributes,
      cie.select_percentile(c["distance"], percentile, seed),
    ),
    "over-indexing",
    ["variant"],
  )


def robustness_accuracy(run):
  """Per-member accuracies on every corrupted split (docs/spec.md §3.6 inputs).

  Returns:
    (top1, top5 or None, notes, members): dicts (variant, corruption) -> float
    `[members, severities]` over the severities 1-5 the dense population has for that
    corruption and the members the variant has on all of them (their indices in `members`).
    A variant missing one of dense's severities is left out.
  """
  splits = run.corrupted_splits()
  by_corruption = {}
  for split, corruption, severity in splits:
    if severity in SEVERITIES and split in run.predictions[names.DENSE]:
      by_corruption.setdefault(corruption, []).append((severity, split))
  k5 = run.num_classes > 5
  top1, top5, notes, kept = {}, ({} if k5 else None), [], {}
  for corruption, sev_splits in sorted(by_corruption.items()):
    for variant in run.variants:
      pops = [run.predictions[variant].get(split) for _, split in sev_splits]
      if any(p is None for p in pops):
        notes.append(f"{variant}: lacks some severities of {corruption}; left out")
        continue
      members = pops[0].members
      for p in pops[1:]:
        members = np.intersect1d(members, p.members)
      if not members.size:
        notes.append(f"{variant}: no member on every severity of {corruption}; left out")
        continue
      pops = [p.select(members) for p in pops]
      kept[(variant, corruption)] = [int(k) for k in members]
      top1[(variant, corruption)] = np.stack(
        [accuracy.top1_accuracy(p.top1, p.labels) for p in pops], axis=1
      )
      if k5:
        top5[(variant, corruption)] = np.stack(
          [accuracy.topk_accuracy(p.topk, p.labels, k=5) for p in pops], axis=1
        )
  return top1, top5, notes, kept


def _change_interval(run, top1, kept, variant, corruption):
  """95% interval of a variant's top-1 change (points / 100) on one corruption: accuracy
  averaged over severities per member, paired by the variant's pairing, else Welch."""
  a0 = top1[(names.DENSE, corruption)].mean(axis=1)
  at = top1[(variant, corruption)].mean(axis=1)
  if pairing_lib.is_paired(run, variant):
    pairing = run.pairing_of(variant)
    pos0 = {k: i for i, k in enumerate(kept[(names.DENSE, corruption)])}
    post = {k: i for i, k in enumerate(kept[(variant, corruption)])}
    pairs = [(pos0[a], post[b]) for a, b in pairing["pairs"] if a in pos0 and b in post]
    a0 = a0[[i for i, _ in pairs]]
    at = at[[j for _, j in pairs]]
    return intervals.mean_difference_interval(a0, at, paired=True, bounds=(0.0, 1.0))
  return intervals.mean_difference_interval(a0, at, bounds=(0.0, 1.0))


def robustness_measures(run):
  """000 Table 3 per (variant, corruption): top-1 (top-5) and normalized to dense
  (docs/spec.md §3.6).

  Returns:
    (DataFrame from `robustness.robustness_table` plus `top1_change` (points / 100, mean over
    members of the accuracy averaged over severities, minus dense's) with its 95% interval
    `top1_change_low` / `_high` (paired by the variant's pairing, else Welch),
    `severities` and `members`, or None without corrupted splits; list of notes).
  """
  top1, top5, notes, kept = robustness_accuracy(run)
  if not top1:
    return None, notes or ["no corrupted splits (`<corruption>@<severity>`) in the run"]
  table = robustness.robustness_table(top1, top5, dense=names.DENSE)
  cis = [
    _change_interval(run, top1, kept, v, c)
    if v != names.DENSE and (names.DENSE, c) in top1
    else {"difference": np.nan, "low": np.nan, "high": np.nan}
    for v, c in zip(table.variant, table.corruption)
  ]
  table["top1_change"] = [c["difference"] for c in cis]
  table["top1_change_low"] = [c["low"] for c in cis]
  table["top1_change_high"] = [c["high"] for c in cis]
  table["severities"] = [top1[(v, c)].shape[1] for v, c in zip(table.variant, table.corruption)]
  table["members"] = [top1[(v, c)].shape[0] for v, c in zip(table.variant, table.corruption)]
  order = {v: i for i, v in enumerate(run.variants)}
  table = table.sort_values(
    ["corruption", "variant"],
    key=lambda s: s.map(order) if s.name == "variant" else s,
    kind="stable",
  )
  return table.reset_index(drop=True), notes


def _per_variant(items, table_fn, what, first):
  """Concatenates `table_fn(item)` over variants; a variant the stats reject becomes a note.

  Args:
    items: variant -> input of `table_fn`.
    table_fn: callable returning a DataFrame (index reset into columns).
    what: name of the measure, for notes.
    first: columns to put first (`variant` and the table's key columns).

  Returns:
    (DataFrame with a `variant` column, or None if no variant has one; list of notes).
  """
  frames, notes = [], []
  for variant, item in items.items():
    try:
      table = table_fn(item)
    except validate.StatsInputError as e:
      notes.append(f"{variant}: {what} not computed ({e})")
      continue
    frames.append(table.reset_index().assign(variant=variant))
  if not frames:
    return None, notes
  out = pd.concat(frames, ignore_index=True)
  return out[first + [c for c in out.columns if c not in first]], notes
