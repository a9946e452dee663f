"""Taxicab CIE and weighted Jaccard CIE of 004 §3.1 and appendix A.1 (docs/spec.md §4.1).

* `taxicab_distance`: d_T(B_x, V_x) = Σ_i |b_{x,i} − v_{x,i}| over label counts of the
  baseline (B) and variant (V) populations, which must have equal size N.
* `weighted_jaccard_distance`: d_J = 1 − Σ_i min(b, v) / Σ_i max(b, v) (appendix A.1), which
  ranks examples exactly as d_T does when both populations have N members.
* `rank_by_distance`: descending order with ties broken by a seeded random permutation
  (004 Figure 4: "Any ties for Taxicab CIE are broken at random").
* `select_percentile`: the CIEs at percentile p, exactly ceil((100 − p)/100 · n) examples.
* `taxicab_cie_accuracy`: accuracy of both populations on the selected subsets
  (004 Table 2 "Taxicab CIEs" 90th / 95th / 99th; docs/spec.md §4.1 also 80th).

Paper: 004 (docs/papers.md).
"""

import fractions
import math

import numpy as np
import pandas as pd

from tf_forget.stats import exemplars
from tf_forget.stats import validate

PERCENTILES = (80, 90, 95, 99)
# Up to this many classes the count tables are faster than sorting (CelebA: 2 classes).
_TABLE_MAX_CLASSES = 16


def _paired_populations(predictions_0, predictions_t, num_classes):
  p0 = validate.check_predictions(predictions_0, num_classes=num_classes, name="predictions_0")
  pt = validate.check_predictions(predictions_t, p0.shape[1], num_classes, name="predictions_t")
  validate.check_same_members(
    p0, pt, ("predictions_0", "predictions_t"), "Taxicab / Jaccard CIE (004 A.1)"
  )
  if num_classes is None:
    num_classes = validate.infer_num_classes(p0, pt)
  return p0, pt, num_classes


def _min_max_sums(p0, pt, num_classes):
  """Σ_i min(b, v) and Σ_i max(b, v) `[examples]`, computed in chunks of examples."""
  n = p0.shape[1]
  smin = np.empty(n, dtype=np.int64)
  smax = np.empty(n, dtype=np.int64)
  for sl in exemplars.example_chunks(n, num_classes):
    b = exemplars.counts_unchecked(p0[:, sl], num_classes)
    v = exemplars.counts_unchecked(pt[:, sl], num_classes)
    smin[sl] = np.minimum(b, v).sum(axis=1)
    smax[sl] = np.maximum(b, v).sum(axis=1)
  return smin, smax


def _intersection_sizes(p0, pt):
  """Σ_i min(b_{x,i}, v_{x,i}) `[examples]` by sorting, without a `[examples, C]` table.

  Each example's 2N labels are sorted with the baseline ones first within a label (code
  2·label + source); per run of one label, min(#baseline, #variant) is summed per example.
  """
  n_ex = p0.shape[1]
  codes = np.concatenate([2 * p0.T, 2 * pt.T + 1], axis=1)  # [examples, 2N]
  codes.sort(axis=1)
  labels = codes >> 1
  start = np.ones(labels.shape, dtype=bool)
  start[:, 1:] = labels[:, 1:] != labels[:, :-1]
  run = np.cumsum(start.ravel()) - 1  # global run id over the flattened rows
  n_runs = int(run[-1]) + 1
  is_v = (codes & 1).ravel()
  nv = np.bincount(run, weights=is_v, minlength=n_runs)
  nb = np.bincount(run, minlength=n_runs) - nv
  row_of_run = np.repeat(np.arange(n_ex), start.sum(axis=1))
  return np.bincount(row_of_run, weights=np.minimum(nb, nv), minlength=n_ex).astype(np.int64)


def taxicab_distance(predictions_0, predictions_t, num_classes=None):
  """Taxicab CIE score d_T(B_x, V_x) = Σ_i |b_{x,i} − v_{x,i}| (004 §3.1; docs/spec.md §4.1).

  Args:
    predictions_0: int `[N, examples]` baseline (non-compressed) population.
    predictions_t: int `[N, examples]` variant (compressed) population, same N.
    num_classes: number of classes C (default: 1 + largest label).

  Returns:
    int64 `[examples]` in [0, 2N] (always even when both populations have N members).

  Raises:
    validate.StatsInputError: populations of different size, mismatched examples, bad labels.
  """
  p0, pt, c = _paired_populations(predictions_0, predictions_t, num_classes)
  if c <= _TABLE_MAX_CLASSES:
    return _taxicab_from_counts(p0, pt, c)
  # Σ_i |b − v| = Σ b + Σ v − 2 Σ min(b, v) = 2 (N − Σ_i min(b, v)), computed by sorting
  # (memory independent of C); `weighted_jaccard_distance` uses the count tables instead.
  return 2 * (p0.shape[0] - _intersection_sizes(p0, pt))


def _taxicab_from_counts(p0, pt, num_classes):
  """Σ_i |b_{x,i} − v_{x,i}| from `[examples, C]` count tables, in chunks of examples."""
  n = p0.shape[1]
  out = np.empty(n, dtype=np.int64)
  for sl in exemplars.example_chunks(n, num_classes):
    diff = exemplars.counts_unchecked(p0[:, sl], num_classes) - exemplars.counts_unchecked(
      pt[:, sl], num_classes
    )
    out[sl] = np.abs(diff).sum(axis=1)
  return out


def weighted_jaccard_distance(predictions_0, predictions_t, num_classes=None):
  """Weighted Jaccard distance d_J = 1 − Σ min(b, v) / Σ max(b, v) (004 appendix A.1).

  Args:
    predictions_0: int `[N, examples]`; predictions_t: int `[N, examples]`.
    num_classes: number of classes C.

  Returns:
    float64 `[examples]` in [0, 1].
  """
  p0, pt, c = _paired_populations(predictions_0, predictions_t, num_classes)
  smin, smax = _min_max_sums(p0, pt, c)
  return 1.0 - smin / smax


def rank_by_distance(distance, seed=0):
  """Example indices ordered by distance, largest first; ties in a seeded random order.

  Args:
    distance: float or int `[examples]` (e.g. `taxicab_distance`).
    seed: seed of the permutation that breaks ties (004 Figure 4; docs/spec.md §4.1).

  Returns:
    int64 `[examples]` indices.
  """
  d = validate.check_finite(distance, "distance", ndim=1)
  perm = np.random.default_rng(seed).permutation(d.shape[0])
  return perm[np.argsort(-d[perm], kind="stable")]


def num_selected(percentile, num_examples):
  """ceil((100 − p)/100 · n), computed exactly (docs/spec.md §4.1): e.g. p = 90, n = 20000 ->
  2000."""
  p = fractions.Fraction(repr(float(percentile)))
  if not 0 <= p <= 100:
    raise validate.StatsInputError(f"percentile must be in [0, 100], got {percentile}")
  return math.ceil((100 - p) * num_examples / 100)


def select_percentile(distance, percentile, seed=0):
  """Taxicab CIEs at a percentile threshold (004 §3.1, Table 2; docs/spec.md §4.1).

  Selects exactly ceil((100 − p)/100 · n) examples with the largest distance, ties broken
  by the seeded random permutation of `rank_by_distance`.

  Args:
    distance: `[examples]` scores.
    percentile: p in [0, 100] (004: 90, 95, 99; Figure 2: 80).
    seed: tie-breaking seed.

  Returns:
    bool `[examples]` selection mask.
  """
  d = validate.check_finite(distance, "distance", ndim=1)
  order = rank_by_distance(d, seed)
  mask = np.zeros(d.shape[0], dtype=bool)
  mask[order[: num_selected(percentile, d.shape[0])]] = True
  return mask


def taxicab_cie_accuracy(
  predictions_0,
  predictions_t,
  labels,
  percentiles=PERCENTILES,
  seed=0,
  num_classes=None,
  topk_predictions_0=None,
  topk_predictions_t=None,
  k=5,
):
  """Accuracy of both populations on Taxicab CIEs at each percentile (004 Table 2).

  Accuracy as in docs/spec.md §3.5: mean over members of the accuracy on the selected subset, for
  the dense and the compressed population. 004 Table 2's "All" column is the compressed
  population on the whole test set (row `subset == "all"`).

  Args:
    predictions_0: int `[N, examples]` non-compressed population.
    predictions_t: int `[N, examples]` compressed population.
    labels: int `[examples]`.
    percentiles: thresholds p.
    seed: tie-breaking seed.
    num_classes: number of classes C.
    topk_predictions_0, topk_predictions_t: optional `[N, examples, K]` for top-k.
    k: top-k cut-off.

  Returns:
    DataFrame with columns `population`, `subset` ("p90", ..., and "all"), `percentile`,
    `top1`, `topk`, `n`.
  """
  labels = validate.check_labels(labels, num_classes)
  p0, pt, c = _paired_populations(predictions_0, predictions_t, num_classes)
  validate.check_same_examples(p0, labels[None, :], ("predictions_0", "labels"))
  d = taxicab_distance(p0, pt, c)
  order = rank_by_distance(d, seed)
  n = labels.shape[0]
  subsets = []
  for p in percentiles:
    mask = np.zeros(n, dtype=bool)
    mask[order[: num_selected(p, n)]] = True
    subsets.append((f"p{p:g}", float(p), mask))
  subsets.append(("all", float("nan"), np.ones(n, dtype=bool)))
  rows = []
  for pop, preds, topk in (
    ("dense", p0, topk_predictions_0),
    ("compressed", pt, topk_predictions_t),
  ):
    if topk is not None:
      topk = validate.check_predictions(topk, n, ndim=3, name=f"topk_predictions_{pop}")
    hits = exemplars.example_hits(preds, labels, topk, k)
    for name, p, mask in subsets:
      rows.append(
        {
          "population": pop,
          "subset": name,
          "percentile": p,
          **exemplars.subset_accuracy(hits, mask),
        }
      )
  return pd.DataFrame(rows, columns=["population", "subset", "percentile", "top1", "topk", "n"])
