"""One variant's member pairs pooled for the output divergence (`divergence_report`): per group
(overall, per class, per subgroup) the measures of KL and Δp with the mean's interval by the
design of `divergence_report` (over the test examples with one pair, over the pairs' means with
several, clipped to what the quantity can be) and the flip rate.

Numpy and `tf_forget.stats.divergence`.
"""

import numpy as np

from tf_forget.stats import divergence


def _interval(pooled, pair_means, confidence, bounds):
  """[(mean, low, high)] per group, the interval clipped to `bounds` (KL >= 0, |Δp| <= 1): the
  pooled `Summary`'s with one pair, else Student t over the per-pair means (`pair_means`
  float `[P, G]`, NaN where a pair's group is empty)."""
  if pair_means.shape[0] < 2:
    out = [(s.mean, s.low, s.high) for s in pooled]
  else:
    valid = ~np.isnan(pair_means)
    out = [(np.nan,) * 3] * len(pooled)
    if valid.any():
      over = divergence.summarize_by_class(
        pair_means[valid], np.nonzero(valid)[1], pair_means.shape[1], confidence
      )
      out = [(s.mean, s.low, s.high) if s.n else (np.nan,) * 3 for s in over]
  return [(m, float(np.clip(lo, *bounds)), float(np.clip(hi, *bounds))) for m, lo, hi in out]


def group_stats(p, kl, dp, neg, flip_rate, kl_ci, dp_ci):
  """One group's measures (a superset of the table columns) from its pooled summaries; `neg`
  summarizes −Δp (0.0 − x: a percentile of 0 stays +0.0)."""
  return {
    "n": kl.n // p,
    "kl_mean": kl_ci[0],
    "kl_low": kl_ci[1],
    "kl_high": kl_ci[2],
    "kl_p50": kl.p50,
    "kl_p90": kl.p90,
    "kl_p99": kl.p99,
    "kl_max": kl.max,
    "delta_p_mean": dp_ci[0],
    "delta_p_low": dp_ci[1],
    "delta_p_high": dp_ci[2],
    "delta_p_min": 0.0 - neg.max,
    "delta_p_p1": 0.0 - neg.p99,
    "delta_p_p10": 0.0 - neg.p90,
    "delta_p_p50": dp.p50,
    "delta_p_p90": dp.p90,
    "delta_p_p99": dp.p99,
    "flip_rate": float(flip_rate),
  }


class Pooled:
  """One variant's pairs: per-example values pooled over the P pairs (P·N rows)."""

  def __init__(self, results, y, confidence):
    self.results, self.confidence, self.p = results, confidence, len(results)
    self.kl = np.concatenate([d.kl for _, _, d in results])
    self.dp = np.concatenate([d.delta_p for _, _, d in results])
    self.flipped = np.concatenate([~d.agree for _, _, d in results])
    self.y = np.tile(y, self.p)

  def _part(self, quantity, part, masks):
    """Each pair's `Summary` list of `kl` / `delta_p` for `part` (a `Summaries` field)."""
    out = []
    for _, _, d in self.results:
      s = getattr(getattr(d, f"{quantity}_summary"), part)
      out.append(
        [s[name] for name in masks] if part == "by_subgroup" else s if part == "by_class" else [s]
      )
    return out

  def _pooled(self, values, part, num_classes, masks):
    """`Summary` per group of pooled `values` (with one pair: the pair's own, computed once)."""
    conf = self.confidence
    if part == "overall":
      return [divergence.summarize(values, confidence=conf)]
    if part == "by_class":
      return divergence.summarize_by_class(values, self.y, num_classes, conf)
    return [divergence.summarize(values, m, conf) for m in masks.values()]

  def groups(self, part, num_classes=None, masks=None):
    """`group_stats` per group of `part`: "overall" (one), "by_class" or "by_subgroup" (`masks`,
    tiled over the pairs)."""
    masks = {k: np.tile(np.asarray(m, bool), self.p) for k, m in (masks or {}).items()}
    pairs = {q: self._part(q, part, masks) for q in ("kl", "delta_p")}
    kl, dp = (
      (pairs[q][0] if self.p == 1 else self._pooled(v, part, num_classes, masks))
      for q, v in (("kl", self.kl), ("delta_p", self.dp))
    )
    neg = self._pooled(-self.dp, part, num_classes, masks)
    if part == "by_class":
      counts = np.bincount(self.y, minlength=num_classes)
      flips = np.bincount(self.y, self.flipped, minlength=num_classes)
      rates = np.divide(flips, counts, out=np.full(num_classes, np.nan), where=counts > 0)
    else:
      selected = masks.values() if part == "by_subgroup" else [slice(None)]
      rates = [self.flipped[m].mean() if self.flipped[m].size else np.nan for m in selected]
    means = {q: np.asarray([[s.mean for s in r] for r in pairs[q]], np.float64) for q in pairs}
    kl_ci = _interval(kl, means["kl"], self.confidence, (0.0, np.inf))
    dp_ci = _interval(dp, means["delta_p"], self.confidence, (-1.0, 1.0))
    return [group_stats(self.p, *g) for g in zip(kl, dp, neg, rates, kl_ci, dp_ci)]
