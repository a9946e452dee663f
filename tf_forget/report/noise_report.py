"""Report tables of the l-inf noise evaluation (003 §4.1, §5.1, App. D.1; docs/spec.md §6.6-6.7).

Reads `<run>/noise/<variant>/<k>/linf.npz` (`tf_forget.artifacts.noise_artifact`) and
computes, per variant and noise level ε:

* `noise_accuracy`: top-1 (mean over draws, then mean ± SD over members), normalized to dense
  at the same ε, 100 · (A_t / A_0 − 1) as in 000 Table 3 (docs/spec.md §3.6), and 003's excess error
  (Definition 2) e(ε) = error at ε − error at ε = 0, with ê − e against dense (003 §5.1).
  Absolute points are given beside every ratio: a ratio of a near-zero baseline explodes.
* `noise_prune_potential`: 003 Definition 1 at each ε over the pruned float32 variants
  `prune_<t>`: the largest t whose error is ≤ dense's error at that ε + δ (δ = 0.5%), per
  member index k (the repetition), then mean ± SD (ddof 0) over members (003 Figure 1 / 28).
* `noise_similarity`: 003 Figure 4: share of matching labels and mean L2 distance of the
  softmax outputs between member k of a variant and dense member k on the same noisy inputs,
  beside the reference `dense (independent)`: dense member k vs dense member k+1 (mod K), a
  separately trained network. Post-training quantizations of member k *are* compressions of
  dense member k (docs/spec.md §1.3); pruned members are trained from their own seed, so for them
  the reference row is the fair comparison.
"""

import re

import numpy as np
import pandas as pd

from tf_forget.artifacts import errors
from tf_forget.artifacts import filesystem
from tf_forget.artifacts import layout
from tf_forget.artifacts import names
from tf_forget.artifacts import noise_artifact
from tf_forget.stats import intervals
from tf_forget.stats import lost_in_pruning

INDEPENDENT = "dense (independent)"
_PRUNED = re.compile(r"^prune_(?P<t>0?\.\d+|1(\.0*)?)$")


class NoiseReportError(errors.Error):
  """Noise artifacts that do not fit together (one line)."""


def load(run_dir, variants=None):
  """Loads every noise artifact of a run (of `variants` only, if given).

  Returns:
    None if the run has no `noise/` directory, else dict variant -> {k: artifact dict}; all
    artifacts share ε, ids, labels and protocol.

  Raises:
    NoiseReportError: an unreadable artifact, or artifacts of different protocols / examples.
  """
  root = layout.noise_root(run_dir)
  if not filesystem.isdir(root):
    return None
  out, ref = {}, None
  for variant, k, _ in layout.walk(root):
    if variants is not None and variant not in set(variants):
      continue
    path = layout.noise(run_dir, variant, k)
    if not filesystem.exists(path):
      continue
    try:
      art = noise_artifact.read(path)
    except noise_artifact.NoiseError as e:
      raise NoiseReportError(str(e)) from e
    if ref is None:
      ref = art
    elif (
      art["metadata"].get("protocol") != ref["metadata"].get("protocol")
      or not np.array_equal(art["ids"], ref["ids"])
      or not np.array_equal(art["labels"], ref["labels"])
    ):
      raise NoiseReportError(
        f"{path}: other noise protocol or examples than "
        f"{ref['metadata'].get('variant')}/{ref['metadata'].get('k')}"
      )
    out.setdefault(variant, {})[k] = art
  if not out:
    return None
  if names.DENSE not in out:
    raise NoiseReportError(f"{root}: no dense population under noise to compare with")
  return out


def _order(noise, variants):
  first = [v for v in (variants or ()) if v in noise]
  return first + sorted(v for v in noise if v not in first)


def _accuracy(art):
  """float `[L]` top-1 of one artifact per level (mean over draws and examples)."""
  return (art["top1"] == art["labels"]).mean(axis=(1, 2))


def _member_accuracy(arts, ks=None):
  """float `[members, L]` top-1 of the members `ks` (default: all, in order of k)."""
  return np.stack([_accuracy(arts[k]) for k in (sorted(arts) if ks is None else ks)])


def _change_intervals(acc, variant, pairs, ks):
  """[L] lows and highs of the variant's top-1 change per level (95%; `stats.intervals`).

  Paired by `pairs` [(k_dense, k_variant), ...] when given (the same network: a quantized
  member, a one-shot or prune-retrain member and its parent), else Welch over the members.
  """
  a0, at = acc[names.DENSE], acc[variant]
  if pairs is not None:
    pos0 = {k: i for i, k in enumerate(ks[names.DENSE])}
    post = {k: i for i, k in enumerate(ks[variant])}
    use = [(pos0[a], post[b]) for a, b in pairs if a in pos0 and b in post]
    a0, at = a0[[i for i, _ in use]], at[[j for _, j in use]]
  cis = [
    intervals.mean_difference_interval(
      a0[:, l], at[:, l], paired=pairs is not None, bounds=(0.0, 1.0)
    )
    for l in range(acc[names.DENSE].shape[1])
  ]
  return [c["low"] for c in cis], [c["high"] for c in cis]


def accuracy_table(noise, variants=None, pairs=None):
  """`noise_accuracy` rows: variant, eps, members, top1, top1_sd, top1_change (points) with
  its 95% interval top1_change_low / _high, top1_norm (%), excess_error,
  excess_error_vs_dense (003 Definition 2, §5.1).

  Args:
    noise: from `load`.
    variants: preferred order.
    pairs: variant -> [(k_dense, k_variant), ...] for variants compared with themselves
      before compression (paired intervals); others get Welch intervals.
  """
  eps = next(iter(noise[names.DENSE].values()))["eps"]
  acc = {v: _member_accuracy(noise[v]) for v in noise}
  ks = {v: sorted(noise[v]) for v in noise}
  dense = acc[names.DENSE].mean(axis=0)
  dense_excess = lost_in_pruning.excess_error(1 - dense[:, None], 1 - dense[0])
  rows = []
  for v in _order(noise, variants):
    a = acc[v]
    mean = a.mean(axis=0)
    excess = lost_in_pruning.excess_error(1 - mean[:, None], 1 - mean[0])
    nan = [np.nan] * len(eps)
    lows, highs = (
      (nan, nan) if v == names.DENSE else _change_intervals(acc, v, (pairs or {}).get(v), ks)
    )
    for l, e in enumerate(eps):
      rows.append(
        {
          "variant": v,
          "eps": float(e),
          "members": a.shape[0],
          "top1": mean[l],
          "top1_sd": a[:, l].std(ddof=1) if a.shape[0] > 1 else np.nan,
          "top1_change": mean[l] - dense[l],
          "top1_change_low": lows[l],
          "top1_change_high": highs[l],
          "top1_norm": 100 * (mean[l] / dense[l] - 1) if dense[l] > 0 else np.nan,
          "excess_error": excess[l],
          "excess_error_vs_dense": lost_in_pruning.excess_error_difference(
            excess[l], dense_excess[l]
          ),
        }
      )
  return pd.DataFrame(rows)


def prune_potential_table(noise, delta=lost_in_pruning.DELTA):
  """`noise_prune_potential` rows: eps, members, prune_potential (mean), prune_potential_sd,
  ratios (the pruned variants used); None without a pruned float32 variant."""
  pruned = sorted((float(m.group("t")), v) for v in noise if (m := _PRUNED.match(v)))
  if not pruned:
    return None
  ks = sorted(set.intersection(set(noise[names.DENSE]), *(set(noise[v]) for _, v in pruned)))
  if not ks:
    return None
  eps = noise[names.DENSE][ks[0]]["eps"]
  ratios = np.array([t for t, _ in pruned])

  errors = np.stack([1 - _member_accuracy(noise[v], ks) for _, v in pruned], axis=-1)  # [K, L, R]
  potential = lost_in_pruning.prune_potential(
    ratios,
    errors,
    1 - _member_accuracy(noise[names.DENSE], ks),
    delta,
    num_examples=noise[names.DENSE][ks[0]]["top1"][0].size,
  )  # [K, L]; n = draws x examples
  return pd.DataFrame(
    {
      "eps": eps.astype(float),
      "members": len(ks),
      "prune_potential": potential.mean(axis=0),
      "prune_potential_sd": potential.std(axis=0, ddof=0),
      "ratios": ", ".join(f"{t:g}" for t in ratios),
    }
  )


def similarity_table(noise, variants=None):
  """`noise_similarity` rows: variant, eps, pairs, matching (share), l2 (003 Figure 4)."""
  dense = noise[names.DENSE]
  eps = next(iter(dense.values()))["eps"]
  pairs = {}
  ks = sorted(dense)
  if len(ks) > 1:
    pairs[INDEPENDENT] = [(dense[k], dense[ks[(i + 1) % len(ks)]]) for i, k in enumerate(ks)]
  for v in _order(noise, variants):
    if v != names.DENSE:
      pairs[v] = [(noise[v][k], dense[k]) for k in sorted(noise[v]) if k in dense]
  rows = []
  for v, ps in pairs.items():
    if not ps:
      continue
    sims = [
      lost_in_pruning.noise_similarity(
        a["softmax"].astype(np.float32), b["softmax"].astype(np.float32)
      )
      for a, b in ps
    ]
    match = np.stack([lost_in_pruning.matching_label_share(a["top1"], b["top1"]) for a, b in ps])
    l2 = np.stack([s["l2"] for s in sims])
    for l, e in enumerate(eps):
      rows.append(
        {
          "variant": v,
          "eps": float(e),
          "pairs": len(ps),
          "matching": match[:, l].mean(),
          "matching_sd": match[:, l].std(ddof=0),
          "l2": l2[:, l].mean(),
        }
      )
  return pd.DataFrame(rows, columns=["variant", "eps", "pairs", "matching", "matching_sd", "l2"])


def compute(run_dir, variants=None, pairs=None):
  """The noise tables of a run.

  Args:
    run_dir: run directory.
    variants: preferred variant order (the report's).
    pairs: see `accuracy_table`.

  Returns:
    (tables: name -> DataFrame, possibly empty; notes: list of str; protocol dict or None).

  Raises:
    NoiseReportError: inconsistent artifacts.
  """
  noise = load(run_dir, variants)
  if noise is None:
    return {}, ["no l-inf noise evaluation in the run (noise/)"], None
  tables = {
    "noise_accuracy": accuracy_table(noise, variants, pairs),
    "noise_similarity": similarity_table(noise, variants),
  }
  notes = []
  pp = prune_potential_table(noise)
  if pp is None:
    notes.append("prune potential under noise needs pruned float32 variants (prune_<t>)")
  else:
    tables["noise_prune_potential"] = pp
  art = next(iter(noise[names.DENSE].values()))
  runtimes = sorted(
    {a["metadata"].get("runtime") for arts in noise.values() for a in arts.values()}
  )
  notes.append(f"runtime paths under noise: {', '.join(str(r) for r in runtimes)}")
  return tables, notes, art["metadata"].get("protocol")
