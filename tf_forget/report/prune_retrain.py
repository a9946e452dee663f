"""003's prune-retrain study: how far each parent can be pruned, per distribution.

For the prune-retrain cycles `iter_<alg>_c<n>` of a run (003 Algorithm 1; docs/spec.md §6.5), every
member paired with the dense member at the root of its parent chain (`pairing`; the parents
are the repetitions of 003 §3.2), this module computes from the exported files' predictions:

* `prune_retrain_curve` — the prune–accuracy curve of each method on every distribution (003
  Figure 6a): top-1 per cycle, mean ± SD (ddof 0) over parents, at the mean achieved prune
  ratio (zeros among the prunable kernels, from each member's metadata). Distributions: the
  nominal test split, each corruption at severity 3 (`<corruption>@3`, 003 §5), each published test
  set evaluated (e.g. `cifar10_1`), and each l-inf noise level ε (`noise ε=<ε>`, docs/spec.md §6.7).
* `prune_retrain_potential` — prune potential P(θ, D) (003 Definition 1, docs/spec.md §6.6: the
  largest prune ratio whose top-1 error ≤ the parent's + δ, δ = 0.5%, compared exactly on the
  error counts, no monotonicity, 0 if none) per method and distribution, mean ± SD over parents.
* `prune_retrain_summary` — 003 Tables 2, 9, 10: per method the potential on the train
  distribution (nominal) and the average and minimum over the test distribution (every
  corrupted split and published set; noise levels are reported per ε, not averaged in), mean ±
  SD over parents, and Diff. = Test − Train (docs/spec.md §7.2).
* `prune_retrain_excess` — excess error (003 Definition 2): e(θ, D') = mean error over the test
  distribution − nominal error, per cycle, and ê − e against the parent (003 Figure 6c).
* `prune_retrain_similarity` — noise similarity (003 §4.1, Figure 4): share of equal labels
  and L2 distance of the softmax outputs on the same noisy inputs, of each pruned member
  against its own dense parent and against an independently trained dense member (the next
  one, k+1 mod K), beside the dense-vs-independent reference.

Pure numpy / pandas over `collect.Run`, the noise artifacts (`report.noise_report.load`) and the
members' metadata; the statistics are `tf_forget.stats.lost_in_pruning`'s.
"""

import collections
import dataclasses
import re

import numpy as np
import pandas as pd

from tf_forget.artifacts import errors
from tf_forget.artifacts import fileio
from tf_forget.artifacts import layout
from tf_forget.artifacts import names
from tf_forget.stats import lost_in_pruning

NOMINAL = "nominal"
SEVERITY = 3  # 003 §5: "we choose severity level 3 out of 5"
METHODS = {"wt": "WT (weights, global |θ|)", "ft": "FT (filters, per-layer L1)"}
_NOISE = re.compile(r"^noise ε=")


@dataclasses.dataclass
class Study:
  """The study's tables (name -> DataFrame) and notes."""

  tables: dict
  notes: list


def cycles(variants):
  """{algorithm: [(cycle, variant)] by cycle} of the plain prune-retrain variants in `variants`."""
  out = collections.defaultdict(list)
  for v in variants:
    try:
      t = names.parse_trained(v)
    except errors.Error:
      continue
    if t.iterative:
      out[t.algorithm].append((t.cycle, v))
  return {a: sorted(c) for a, c in sorted(out.items())}


def _prune_ratio(run_dir, variant, k):
  """The achieved prune ratio recorded in a member's metadata, or NaN."""
  try:
    meta = fileio.read_json(layout.member_metadata(run_dir, variant, k), "member metadata")
    return float(meta["pruning"]["prune_ratio"])
  except (errors.Error, KeyError, TypeError, ValueError):
    return float("nan")


def _correct(pop):
  """{k: int correct count} of a `SplitPredictions`, and its example count N."""
  hits = (pop.top1 == pop.labels[None, :]).sum(axis=1)
  return {int(k): int(h) for k, h in zip(pop.members, hits)}, int(pop.labels.size)


def _distributions(run, noise):
  """[(name, kind, {variant: ({k: correct}, n)})] of every distribution evaluated."""
  out = []
  corrupted = run.corrupted_splits()
  splits = [(run.eval_split, NOMINAL, "nominal")]
  # 003 §5 evaluates every corruption at severity 3 (other severities are left out here).
  splits += [(s, s, "corruption") for s, _, severity in corrupted if severity == SEVERITY]
  extra = sorted(
    {s for v in run.predictions.values() for s in v}
    - {run.eval_split}
    - {s for s, _, _ in corrupted}
  )
  splits += [(s, s, "published") for s in extra]
  for split, name, kind in splits:
    counts = {v: _correct(p[split]) for v, p in run.predictions.items() if split in p}
    if names.DENSE in counts:
      out.append((name, kind, counts))
  for v_arts in [noise] if noise else []:
    eps = next(iter(v_arts[names.DENSE].values()))["eps"]
    for l, e in enumerate(eps):
      counts = {}
      for v, arts in v_arts.items():
        per = {k: int((a["top1"][l] == a["labels"][None, :]).sum()) for k, a in arts.items()}
        n = int(next(iter(arts.values()))["top1"][l].size)
        counts[v] = (per, n)
      out.append((f"noise ε={float(e):g}", "noise", counts))
  return out


def _chain_pairs(run, chain):
  """{k_dense: [k of cycle 1, k of cycle 2, ...]} for parents with a member in every cycle."""
  maps = []
  for _, v in chain:
    maps.append({k_d: k_t for k_d, k_t in run.pairing_of(v)["pairs"]})
  common = set.intersection(*(set(m) for m in maps)) if maps else set()
  return {k: [m[k] for m in maps] for k in sorted(common)}


def compute(run, noise=None, delta=lost_in_pruning.DELTA):
  """The study's tables, or None when the run has no prune-retrain variant.

  Args:
    run: a `collect.Run` (with `run_dir` holding `members/` for the prune ratios).
    noise: `report.noise_report.load(...)` of the run, or None.
    delta: δ of Definition 1.

  Returns:
    A `Study`, or None.
  """
  by_alg = cycles(run.predictions)
  if not by_alg:
    return None
  notes = []
  dists = _distributions(run, noise)
  curve, potential, summary, excess = [], [], [], []
  for alg, chain in by_alg.items():
    pairs = _chain_pairs(run, chain)
    if not pairs:
      notes.append(f"{alg}: no parent has a member in every cycle")
      continue
    parents = sorted(pairs)
    ratios = np.array(
      [
        [_prune_ratio(run.run_dir, v, pairs[p][i]) for i, (_, v) in enumerate(chain)]
        for p in parents
      ]
    )  # [K, R]
    per_dist = {}
    for name, kind, counts in dists:
      if names.DENSE not in counts or any(v not in counts for _, v in chain):
        continue
      dense, n = counts[names.DENSE]
      ks = [
        p
        for p in parents
        if p in dense and all(pairs[p][i] in counts[v][0] for i, (_, v) in enumerate(chain))
      ]
      if not ks:
        continue
      rows = [parents.index(p) for p in ks]
      err = np.array(
        [[1 - counts[v][0][pairs[p][i]] / n for i, (_, v) in enumerate(chain)] for p in ks]
      )  # [K', R]
      parent_err = np.array([1 - dense[p] / n for p in ks])
      r = ratios[rows]
      pot = (
        np.array(
          [
            lost_in_pruning.prune_potential(r[j], err[j], parent_err[j], delta, num_examples=n)
            for j in range(len(ks))
          ]
        )
        if np.isfinite(r).all()
        else None
      )
      per_dist[name] = (kind, ks, err, parent_err, pot)
      curve.append(
        {
          "method": alg,
          "cycle": 0,
          "variant": names.DENSE,
          "distribution": name,
          "kind": kind,
          "prune_ratio": 0.0,
          "top1": 1 - parent_err.mean(),
          "top1_sd": parent_err.std(ddof=0),
          "parents": len(ks),
        }
      )
      for i, (c, v) in enumerate(chain):
        curve.append(
          {
            "method": alg,
            "cycle": c,
            "variant": v,
            "distribution": name,
            "kind": kind,
            "prune_ratio": float(np.nanmean(r[:, i])),
            "top1": 1 - err[:, i].mean(),
            "top1_sd": err[:, i].std(ddof=0),
            "parents": len(ks),
          }
        )
      if pot is not None:
        potential.append(
          {
            "method": alg,
            "distribution": name,
            "kind": kind,
            "prune_potential": pot.mean(),
            "prune_potential_sd": pot.std(ddof=0),
            "parents": len(ks),
          }
        )
    summary_row = _summary(alg, per_dist, notes)
    if summary_row is not None:
      summary.append(summary_row)
    excess.extend(_excess(alg, chain, ratios, parents, per_dist))
  tables = {
    "prune_retrain_curve": pd.DataFrame(curve),
    "prune_retrain_potential": pd.DataFrame(potential),
    "prune_retrain_summary": pd.DataFrame(summary),
    "prune_retrain_excess": pd.DataFrame(excess),
  }
  sim = _similarity(run, noise, by_alg)
  if sim is not None:
    tables["prune_retrain_similarity"] = sim
  return Study(tables, notes)


def _test_distribution(per_dist):
  return [d for d, v in per_dist.items() if v[0] in ("corruption", "published")]


def _summary(alg, per_dist, notes):
  """003 Tables 2 / 9 / 10 row of one method (parents common to every distribution)."""
  if NOMINAL not in per_dist or per_dist[NOMINAL][4] is None:
    return None
  test = [d for d in _test_distribution(per_dist) if per_dist[d][4] is not None]
  row = {
    "method": alg,
    "train": per_dist[NOMINAL][4].mean(),
    "train_sd": per_dist[NOMINAL][4].std(ddof=0),
    "test_distributions": len(test),
  }
  if not test:
    notes.append(f"{alg}: no corrupted or published split: no test-distribution potential")
    return row
  ks = set(per_dist[NOMINAL][1]).intersection(*(per_dist[d][1] for d in test))
  ks = sorted(ks)
  pots = np.array([[per_dist[d][4][per_dist[d][1].index(k)] for d in test] for k in ks])
  s = lost_in_pruning.prune_potential_summary(pots)
  train = np.array([per_dist[NOMINAL][4][per_dist[NOMINAL][1].index(k)] for k in ks])
  row.update(
    {
      "train": train.mean(),
      "train_sd": train.std(ddof=0),
      "test_average": s["average_mean"],
      "test_average_sd": s["average_sd"],
      "test_minimum": s["minimum_mean"],
      "test_minimum_sd": s["minimum_sd"],
      "diff": float(lost_in_pruning.prune_potential_difference(train.mean(), s["average_mean"])),
      "parents": len(ks),
    }
  )
  return row


def _excess(alg, chain, ratios, parents, per_dist):
  """Excess error per cycle: e of the pruned net, e of its parent, ê − e (003 Figure 6c)."""
  test = _test_distribution(per_dist)
  if NOMINAL not in per_dist or not test:
    return []
  ks = sorted(set(per_dist[NOMINAL][1]).intersection(*(per_dist[d][1] for d in test)))
  if not ks:
    return []

  def errs(d):
    kind, kd, err, parent_err, _ = per_dist[d]
    idx = [kd.index(k) for k in ks]
    return err[idx], parent_err[idx]

  nominal, nominal_parent = errs(NOMINAL)
  test_err = np.stack([errs(d)[0] for d in test], axis=-1)  # [K, R, D]
  test_parent = np.stack([errs(d)[1] for d in test], axis=-1)  # [K, D]
  e_pruned = lost_in_pruning.excess_error(test_err, nominal)  # [K, R]
  e_parent = lost_in_pruning.excess_error(test_parent, nominal_parent)  # [K]
  diff = lost_in_pruning.excess_error_difference(e_pruned, e_parent[:, None])
  rows = []
  r = ratios[[parents.index(k) for k in ks]]
  for i, (c, v) in enumerate(chain):
    rows.append(
      {
        "method": alg,
        "cycle": c,
        "variant": v,
        "prune_ratio": float(np.nanmean(r[:, i])),
        "excess_error": e_pruned[:, i].mean(),
        "parent_excess_error": e_parent.mean(),
        "excess_vs_parent": diff[:, i].mean(),
        "excess_vs_parent_sd": diff[:, i].std(ddof=0),
        "parents": len(ks),
        "test_distributions": len(test),
      }
    )
  return rows


def _similarity(run, noise, by_alg):
  """Matching labels / L2 of each cycle vs its own parent and vs an independent dense member."""
  if not noise or names.DENSE not in noise or len(noise[names.DENSE]) < 2:
    return None
  dense = noise[names.DENSE]
  ks = sorted(dense)
  other = {k: ks[(i + 1) % len(ks)] for i, k in enumerate(ks)}
  eps = next(iter(dense.values()))["eps"]

  def sim(a, b):
    s = lost_in_pruning.noise_similarity(
      a["softmax"].astype(np.float32), b["softmax"].astype(np.float32)
    )
    return lost_in_pruning.matching_label_share(a["top1"], b["top1"]), s["l2"]

  rows = []
  ref = [sim(dense[k], dense[other[k]]) for k in ks]
  for l, e in enumerate(eps):
    rows.append(
      {
        "method": names.DENSE,
        "cycle": 0,
        "variant": "dense (independent)",
        "eps": float(e),
        "prune_ratio": 0.0,
        "matching_parent": np.nan,
        "matching_independent": np.mean([m[l] for m, _ in ref]),
        "l2_parent": np.nan,
        "l2_independent": np.mean([d[l] for _, d in ref]),
        "pairs": len(ks),
      }
    )
  for alg, chain in by_alg.items():
    for c, v in chain:
      if v not in noise:
        continue
      pairs = [
        (k_d, k_t) for k_d, k_t in run.pairing_of(v)["pairs"] if k_t in noise[v] and k_d in dense
      ]
      if not pairs:
        continue
      own = [sim(noise[v][k_t], dense[k_d]) for k_d, k_t in pairs]
      ind = [sim(noise[v][k_t], dense[other[k_d]]) for k_d, k_t in pairs]
      ratio = np.nanmean([_prune_ratio(run.run_dir, v, k_t) for _, k_t in pairs])
      for l, e in enumerate(eps):
        rows.append(
          {
            "method": alg,
            "cycle": c,
            "variant": v,
            "eps": float(e),
            "prune_ratio": float(ratio),
            "matching_parent": np.mean([m[l] for m, _ in own]),
            "matching_independent": np.mean([m[l] for m, _ in ind]),
            "l2_parent": np.mean([d[l] for _, d in own]),
            "l2_independent": np.mean([d[l] for _, d in ind]),
            "pairs": len(pairs),
          }
        )
  return pd.DataFrame(rows)
