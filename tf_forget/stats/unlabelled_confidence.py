"""Audits without labels, from the logits: how sure the reference was where the file flipped.

Design as `unlabelled` (docs/spec.md §8): one network (K = 1), the example is the unit, no
labels. A flip on an image the reference was sure of is the dangerous kind: the compression
overruled a clear decision, not a coin toss. From the reference's logits x_i (and the file's
top-1 predictions b_i, or its logits):

* `reference_confidence`: the reference's top-1 class a_i and its confidence, the softmax max
  conf_i = softmax(x_i)_{a_i} (`divergence.log_softmax`).
* `flips_by_confidence`: the flip rate per bin of conf_i, Clopper–Pearson exact intervals;
  `confident_flips`: flips where conf_i ≥ a threshold — count, rates and exact intervals.
* `confidence_change`: the probability of the reference's class under the reference and under
  the file, and its change (`divergence.true_class_probability_change` with a_i as the label);
  `kl_summary`: KL(reference ‖ file) per example (`divergence.kl_divergence`). Means with
  Student t intervals (`divergence.summarize`).

Defaults: bins 0, 0.5, 0.8, 0.95, 1 (`CONFIDENCE_EDGES`); confident at conf_i ≥ 0.9
(`CONFIDENT_THRESHOLD`). Pure numpy / scipy (no TensorFlow, nothing of the pipeline). Bad input
raises `validate.StatsInputError` (a `ValueError`) with a one-line message.
"""

import numpy as np
import pandas as pd

from tf_forget.stats import divergence
from tf_forget.stats import unlabelled
from tf_forget.stats import validate

CONFIDENCE = unlabelled.CONFIDENCE
INTERVAL_METHOD = unlabelled.INTERVAL_METHOD
CONFIDENCE_EDGES = (0.0, 0.5, 0.8, 0.95, 1.0)  # bins of the reference's confidence
CONFIDENT_THRESHOLD = 0.9  # a flip at reference confidence >= this is a confident flip


def reference_confidence(ref_logits):
  """The reference's top-1 class and its confidence, the softmax max, per example.

  a_i = argmax_c x_ic (the first class on ties), conf_i = softmax(x_i)_{a_i} =
  exp(log_softmax(x_i)_{a_i}) ∈ [1/C, 1] (`divergence.log_softmax`, read
  `divergence.CHUNK_CELLS` logits at a time).

  Args:
    ref_logits: real `[N, C]` reference logits (a memmap is read in chunks).

  Returns:
    (int64 `[N]` top-1 classes, float64 `[N]` confidences).

  Raises:
    validate.StatsInputError: not 2-D real numbers, empty, NaN or infinite (the row named).
  """
  x = validate.check_logits(ref_logits, "ref_logits")
  n, rows = x.shape[0], max(1, divergence.CHUNK_CELLS // x.shape[1])
  top, conf = np.empty(n, np.int64), np.empty(n)
  for s in range(0, n, rows):
    chunk = x[s : s + rows]
    validate.check_finite_rows(chunk, "ref_logits", s)
    k = chunk.shape[0]
    top[s : s + k] = chunk.argmax(axis=1)
    log_p = divergence.log_softmax(chunk)
    conf[s : s + k] = np.exp(log_p[np.arange(k), top[s : s + k]])
  return top, conf


def confidence_change(ref_logits, cand_logits, mask=None, confidence=CONFIDENCE):
  """The probability of the reference's top-1 class, under the reference and under the file.

  before_i = p_{a_i} (`reference_confidence`), after_i = q_{a_i}, change_i = q_{a_i} − p_{a_i}
  (`divergence.true_class_probability_change` with the reference's class as the label),
  p = softmax(reference logits), q = softmax(file logits). Negative: the file is less sure of
  the reference's decision. Each is summarized over the mask (`divergence.summarize`: mean with
  its Student t interval, p50 / p90 / p99, max).

  Returns:
    dict `reference_class` int64 `[N]`, `before`, `after`, `change` float64 `[N]` (every
    example), `before_summary`, `after_summary`, `change_summary` (`divergence.Summary`).

  Raises:
    validate.StatsInputError: as `divergence.kl_divergence`; a bad mask or confidence.
  """
  validate.check_confidence(confidence)
  top, before = reference_confidence(ref_logits)
  change = divergence.true_class_probability_change(ref_logits, cand_logits, top)
  after = np.clip(before + change, 0.0, 1.0)
  m = validate.check_mask(mask, top.shape[0])
  out = {"reference_class": top, "before": before, "after": after, "change": change}
  for key in ("before", "after", "change"):
    out[f"{key}_summary"] = divergence.summarize(out[key], m, confidence)
  return out


def kl_summary(ref_logits, cand_logits, mask=None, confidence=CONFIDENCE):
  """KL(p ‖ q) = Σ_c p_c log(p_c / q_c) per example (nats, `divergence.kl_divergence`), p
  the reference's softmax, q the file's; dict `kl` float64 `[N]` and `summary` over the mask
  (`divergence.summarize`). Raises validate.StatsInputError as `kl_divergence`."""
  validate.check_confidence(confidence)
  kl = divergence.kl_divergence(ref_logits, cand_logits)
  m = validate.check_mask(mask, kl.shape[0])
  return {"kl": kl, "summary": divergence.summarize(kl, m, confidence)}


def _confident_inputs(ref_logits, b, mask):
  top, conf = reference_confidence(ref_logits)
  b = validate.check_labels(b, np.shape(ref_logits)[1], name="b")
  if b.shape[0] != top.shape[0]:
    raise validate.StatsInputError(f"b has {b.shape[0]} examples but ref_logits {top.shape[0]}")
  return conf, top != b, validate.check_mask(mask, top.shape[0])


def flips_by_confidence(ref_logits, b, edges=CONFIDENCE_EDGES, mask=None, confidence=CONFIDENCE):
  """Flip rate per bin of the reference's confidence, with exact intervals.

  Bin g holds the examples with e_g ≤ conf_i < e_{g+1} (the last bin closed: conf_i = 1
  belongs to it); per bin n_g, flips k_g (a_i ≠ b_i, a_i the reference's arg max), k_g / n_g
  with its Clopper–Pearson interval (`unlabelled.clopper_pearson`), and k_g / Σ k (the bin's
  share of the flips). Default edges 0, 0.5, 0.8, 0.95, 1 (docs/spec.md §8.6).

  Args:
    ref_logits: real `[N, C]` reference logits.
    b: int `[N]` the file's top-1 predictions in [0, C).
    edges: increasing bin edges from 0 to 1.
    mask: optional bool `[N]`, the examples counted.
    confidence: level of the intervals in (0, 1).

  Returns:
    DataFrame, one row per bin (index "[lo, hi)"): `low_edge`, `high_edge`, `n`, `flips`,
    `flip_rate`, `low`, `high` (NaN for an empty bin), `share_of_flips`.

  Raises:
    validate.StatsInputError: as `reference_confidence`; bad b, mask, edges or confidence.
  """
  validate.check_confidence(confidence)
  e = validate.check_finite(edges, "edges", ndim=1)
  if e.size < 2 or e[0] != 0 or e[-1] != 1 or (np.diff(e) <= 0).any():
    raise validate.StatsInputError(f"edges must increase from 0 to 1, got {list(edges)}")
  conf, flip, m = _confident_inputs(ref_logits, b, mask)
  g = np.minimum(np.searchsorted(e, conf[m], side="right") - 1, e.size - 2)
  n = np.bincount(g, minlength=e.size - 1)
  k = np.bincount(g, weights=flip[m], minlength=e.size - 1).astype(np.int64)
  ci = [unlabelled.clopper_pearson(k[i], n[i], confidence) for i in range(e.size - 1)]
  labels = [
    f"[{lo:g}, {hi:g}{']' if i == e.size - 2 else ')'}" for i, (lo, hi) in enumerate(zip(e, e[1:]))
  ]
  return pd.DataFrame(
    {
      "low_edge": e[:-1],
      "high_edge": e[1:],
      "n": n,
      "flips": k,
      "flip_rate": np.divide(k, n, out=np.full(n.shape, np.nan), where=n > 0),
      "low": [lo for lo, _ in ci],
      "high": [hi for _, hi in ci],
      "share_of_flips": k / max(int(k.sum()), 1),
    },
    index=labels,
  )


def confident_flips(ref_logits, b, threshold=CONFIDENT_THRESHOLD, mask=None, confidence=CONFIDENCE):
  """Flips on examples the reference was sure of (conf_i ≥ threshold): the dangerous kind.

  With n selected examples, n_s of them confident (conf_i ≥ t, `reference_confidence`) and k of
  those flipped (a_i ≠ b_i): `rate` = k / n (the share of all images that are confident flips)
  and `rate_among_confident` = k / n_s (how often the file overrules a sure reference), each
  with its Clopper–Pearson interval (`unlabelled.clopper_pearson`). Default t = 0.9
  (docs/spec.md §8.6).

  Args:
    ref_logits: real `[N, C]` reference logits; b: int `[N]` the file's predictions.
    threshold: t in (0, 1].
    mask: optional bool `[N]`; confidence: level of the intervals in (0, 1).

  Returns:
    dict `threshold`, `n`, `confident` (n_s), `flips` (k), `rate`, `low`, `high`,
    `rate_among_confident`, `low_among_confident`, `high_among_confident` (NaN for an empty
    denominator), `indices` (int64, the confident flips, most confident first, ties by index),
    `confidence`, `method`.

  Raises:
    validate.StatsInputError: as `flips_by_confidence`; a threshold outside (0, 1].
  """
  validate.check_confidence(confidence)
  if not 0 < threshold <= 1:
    raise validate.StatsInputError(f"threshold must be in (0, 1], got {threshold}")
  conf, flip, m = _confident_inputs(ref_logits, b, mask)
  sure = m & (conf >= threshold)
  hit = np.flatnonzero(sure & flip)
  n, n_s, k = int(m.sum()), int(sure.sum()), int(hit.size)
  low, high = unlabelled.clopper_pearson(k, n, confidence)
  low_s, high_s = unlabelled.clopper_pearson(k, n_s, confidence)
  return {
    "threshold": float(threshold),
    "n": n,
    "confident": n_s,
    "flips": k,
    "rate": k / n if n else float("nan"),
    "low": low,
    "high": high,
    "rate_among_confident": k / n_s if n_s else float("nan"),
    "low_among_confident": low_s,
    "high_among_confident": high_s,
    "indices": hit[np.argsort(-conf[hit], kind="stable")].astype(np.int64),
    "confidence": confidence,
    "method": INTERVAL_METHOD,
  }
