"""Output divergence of a compressed file from its reference, per example.

Flips (`paired.flips`) see only the arg max. From the saved logits `[N, C]` of the reference
and of the candidate (its compressed file; same examples, same order) with
p = softmax(reference logits a_i), q = softmax(candidate logits b_i) and label y_i: per example
KL_i = KL(p ‖ q) = Σ_c p_c log(p_c / q_c) (nats), Δp_i = q_{y_i} − p_{y_i}, top-1 agreement;
their summaries (n, mean with a t interval, p50 / p90 / p99, max) overall, per class and per
subgroup; the examples of largest KL (a gallery). `divergence` does it all in one pass.

Numerics. Everything comes from the logits through the log-softmax, never from the log of a
probability: with m = max_c a_c and S = Σ_c exp(a_c − m) (1 ≤ S ≤ C),
log p_c = a_c − m − log S, so log p_c − log q_c = (a_c − b_c) − s with
s = (m_a − m_b) + log S_a − log S_b, and KL_i = Σ_c exp(a_c − m_a) (a_c − b_c − s) / S_a.
The logits are read `CHUNK_CELLS` values at a time (bounded memory; a memory-mapped `.npy` is
read chunk by chunk) and every intermediate is float64 whatever the input dtype, so the error
of KL_i is ~1e-15 absolute (float32 intermediates were 1.7x faster but erred by ~1e-7, 1e-4
relative at KL ≈ 4e-3); KL is clipped at 0. Arg max ties go to the first class.

Pure numpy / scipy (no TensorFlow, nothing of the pipeline). Bad input raises
`validate.StatsInputError` (a `ValueError`) with a one-line message.
"""

import dataclasses
import math

import numpy as np
from scipy import stats

from tf_forget.stats import paired
from tf_forget.stats import validate

CONFIDENCE = 0.95
INTERVAL_METHOD = "student_t"  # mean ± t_{(1+γ)/2, n−1} · s / √n
PERCENTILE_METHOD = "linear"  # numpy's default, Hyndman & Fan (1996) type 7
QUANTILES = (("p50", 0.5), ("p90", 0.9), ("p99", 0.99))
GALLERY = 16
CHUNK_CELLS = 1 << 20  # logit values per chunk: 8 MB per float64 buffer (a memory bound)


def _check_logits(x, name):
  arr = np.asarray(x)
  if arr.dtype == bool or not np.issubdtype(arr.dtype, np.number) or np.iscomplexobj(arr):
    raise validate.StatsInputError(f"{name} must hold real numbers, got dtype {arr.dtype}")
  if arr.ndim != 2 or arr.size == 0:
    raise validate.StatsInputError(
      f"{name} must be 2-D [examples, classes] and non-empty, got shape {arr.shape}"
    )
  return arr


def _check_finite(chunk, name, first_row):
  finite = np.isfinite(chunk)
  if not finite.all():
    what = "NaN" if np.isnan(chunk).any() else "an infinite value"
    row = first_row + int(np.flatnonzero(~finite.all(axis=1))[0])
    raise validate.StatsInputError(f"{name} contains {what} (row {row})")


def _check_pair(
  ref_logits, cand_logits, y=None
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
  a, b = _check_logits(ref_logits, "ref_logits"), _check_logits(cand_logits, "cand_logits")
  if a.shape != b.shape:
    raise validate.StatsInputError(f"ref_logits has shape {a.shape}, cand_logits {b.shape}")
  if y is not None:
    y = validate.check_labels(y, a.shape[1], name="y")
    if y.shape[0] != a.shape[0]:
      raise validate.StatsInputError(f"y has {y.shape[0]} examples, the logits {a.shape[0]}")
  return a, b, y


def log_softmax(logits):
  """float64 `[N, C]`: log softmax(x)_c = x_c − m − log Σ_k exp(x_k − m), m = max_k x_k.

  Raises:
    validate.StatsInputError: not 2-D real numbers, empty, NaN or infinite.
  """
  x = _check_logits(logits, "logits")
  _check_finite(x, "logits", 0)
  z = x.astype(np.float64) - x.max(axis=1, keepdims=True)
  return z - np.log(np.exp(z).sum(axis=1, keepdims=True))


def _scan(a, b, y):
  """KL_i, Δp_i (None without y) and both arg maxes in one pass over row chunks."""
  (n, c), rows = a.shape, max(1, CHUNK_CELLS // a.shape[1])
  kl, top_a, top_b = np.empty(n), np.empty(n, np.int64), np.empty(n, np.int64)
  delta = None if y is None else np.empty(n)
  buf_a, buf_b = np.empty((min(rows, n), c)), np.empty((min(rows, n), c))
  for s in range(0, n, rows):
    ca, cb = a[s : s + rows], b[s : s + rows]
    k, i = ca.shape[0], np.arange(ca.shape[0])
    _check_finite(ca, "ref_logits", s)
    _check_finite(cb, "cand_logits", s)
    top_a[s : s + k], top_b[s : s + k] = ca.argmax(axis=1), cb.argmax(axis=1)
    m_a = ca[i, top_a[s : s + k]].astype(np.float64)
    m_b = cb[i, top_b[s : s + k]].astype(np.float64)
    e_a = np.exp(np.subtract(ca, m_a[:, None], out=buf_a[:k]), out=buf_a[:k])
    e_b = np.exp(np.subtract(cb, m_b[:, None], out=buf_b[:k]), out=buf_b[:k])
    s_a, s_b = e_a.sum(axis=1), e_b.sum(axis=1)
    if delta is not None:  # y given
      delta[s : s + k] = e_b[i, y[s : s + k]] / s_b - e_a[i, y[s : s + k]] / s_a
    r = np.subtract(ca, cb, out=buf_b[:k], dtype=np.float64)  # log p_c − log q_c = r_c − s
    r -= ((m_a - m_b) + np.log(s_a) - np.log(s_b))[:, None]
    kl[s : s + k] = np.einsum("ij,ij->i", e_a, r) / s_a
  return np.maximum(kl, 0.0), delta, top_a, top_b


def kl_divergence(ref_logits, cand_logits):
  """float64 `[N]` KL_i = Σ_c p_c (log p_c − log q_c) >= 0 in nats (module docstring).

  Args:
    ref_logits: `[N, C]` reference logits a (any real dtype; a memmap is read in chunks).
    cand_logits: `[N, C]` candidate logits b; p = softmax(a_i), q = softmax(b_i).

  Raises:
    validate.StatsInputError: not 2-D, empty, unequal shapes, NaN or infinite logits.
  """
  return _scan(*_check_pair(ref_logits, cand_logits)[:2], None)[0]


def true_class_probability_change(ref_logits, cand_logits, y):
  """float64 `[N]` Δp_i = q_{y_i} − p_{y_i} in [−1, 1], p_c = exp(a_c − m_a) / S_a.

  Args:
    ref_logits: `[N, C]` reference logits; cand_logits: the candidate's.
    y: int `[N]` labels in [0, C).

  Raises:
    validate.StatsInputError: as `kl_divergence`, or bad labels (rank, length, range).
  """
  return _scan(*_check_pair(ref_logits, cand_logits, y))[1]


def top1_agreement(ref_logits, cand_logits):
  """bool `[N]`: argmax_c ref_logits_ic = argmax_c cand_logits_ic (ties: the first class).

  Raises:
    validate.StatsInputError: as `kl_divergence`.
  """
  _, _, top_a, top_b = _scan(*_check_pair(ref_logits, cand_logits)[:2], None)
  return top_a == top_b


@dataclasses.dataclass(frozen=True)
class Summary:
  """A quantity over n examples: mean, its `INTERVAL_METHOD` interval (low, high),
  `PERCENTILE_METHOD` percentiles, max. NaN if undefined (all at n = 0, low / high at n = 1)."""

  n: int
  mean: float
  low: float
  high: float
  p50: float
  p90: float
  p99: float
  max: float

  def to_json(self):  # NaN as None (strict JSON)
    return {
      k: None if isinstance(v, float) and math.isnan(v) else v
      for k, v in dataclasses.asdict(self).items()
    }


def _lerp(lo, hi, t):  # numpy.percentile's interpolation, with the same rounding
  d = hi - lo
  return np.where(t >= 0.5, hi - d * (1 - t), lo + d * t)


def _grouped(values, groups, num_groups, confidence):
  """list of `Summary`, one per group g of float64 `values [n]` (int `groups [n]` in [0, G))."""
  n = np.bincount(groups, minlength=num_groups)
  fields = {
    k: np.full(num_groups, np.nan)
    for k in ("mean", "low", "high", "max") + tuple(q for q, _ in QUANTILES)
  }
  has, two = n > 0, n > 1
  if has.any():
    v = values[np.lexsort((values, groups))]  # by group, ascending within a group
    start, last = (np.cumsum(n) - n)[has], n[has] - 1
    fields["mean"][has] = np.bincount(groups, weights=values, minlength=num_groups)[has] / n[has]
    fields["max"][has] = v[start + last]
    for key, q in QUANTILES:  # order statistic h = (n − 1)·q, interpolated
      j = np.floor(last * q).astype(np.int64)
      fields[key][has] = _lerp(v[start + j], v[start + np.minimum(j + 1, last)], last * q - j)
    mean = np.nan_to_num(fields["mean"])
    ss = np.bincount(groups, weights=(values - mean[groups]) ** 2, minlength=num_groups)
    half = stats.t.ppf(0.5 + confidence / 2, n[two] - 1) * np.sqrt(ss[two] / (n[two] - 1) / n[two])
    fields["low"][two], fields["high"][two] = mean[two] - half, mean[two] + half
  return [
    Summary(n=int(n[g]), **{k: float(f[g]) for k, f in fields.items()}) for g in range(num_groups)
  ]


def _check_values(values, confidence):
  if not 0 < confidence < 1:
    raise validate.StatsInputError(f"confidence must be in (0, 1), got {confidence}")
  return validate.check_finite(values, "values", ndim=1)


def summarize(values, mask=None, confidence=CONFIDENCE):
  """`Summary` of `values` over the examples of `mask` (n = 0 and NaN if it selects none).

  mean = Σ v_i / n with the Student t interval mean ± t_{(1+γ)/2, n−1} · s / √n,
  s² = Σ (v_i − mean)² / (n − 1) (`scipy.stats.t.ppf`): exact for normal values; for skewed
  ones such as KL it relies on the mean being near normal, as for the hundreds of examples of a
  class or subgroup (the tests simulate its coverage). p50 / p90 / p99: linear interpolation
  between the order statistics at (n − 1)·q, as `numpy.percentile`.

  Args:
    values: finite float `[N]` (e.g. `kl_divergence`).
    mask: optional bool `[N]`, the examples summarized (all without one).
    confidence: γ in (0, 1).

  Raises:
    validate.StatsInputError: values not 1-D, empty or not finite; bad mask or confidence.
  """
  v = _check_values(values, confidence)
  if mask is not None:
    v = v[validate.check_attributes({"mask": mask}, v.shape[0], name="summarize")["mask"]]
  return _grouped(v, np.zeros(v.shape[0], np.int64), 1, confidence)[0]


def summarize_by_class(values, y, num_classes, confidence=CONFIDENCE):
  """list of `summarize(values, y == c)` for c in [0, num_classes) (index c), in one sort.

  Raises:
    validate.StatsInputError: as `summarize`, or labels of another length or out of range.
  """
  v = _check_values(values, confidence)
  y = validate.check_labels(y, num_classes, name="y")
  if y.shape[0] != v.shape[0]:
    raise validate.StatsInputError(f"y has {y.shape[0]} examples but values has {v.shape[0]}")
  return _grouped(v, y, int(num_classes), confidence)


def largest(values, m):
  """int64 indices of the m largest values, largest first, ties by lower index (deterministic).

  Raises:
    validate.StatsInputError: values not 1-D finite, m not an integer >= 0.
  """
  v = validate.check_finite(values, "values", ndim=1)
  if not isinstance(m, (int, np.integer)) or isinstance(m, bool) or m < 0:
    raise validate.StatsInputError(f"m must be an integer >= 0, got {m!r}")
  return np.argsort(-v, kind="stable")[: int(m)]


@dataclasses.dataclass(frozen=True)
class Summaries:
  """One quantity summarized overall, per class (list, index c) and per subgroup (dict)."""

  overall: Summary
  by_class: list
  by_subgroup: dict

  def to_json(self):
    return {
      "overall": self.overall.to_json(),
      "by_class": [s.to_json() for s in self.by_class],
      "by_subgroup": {k: s.to_json() for k, s in self.by_subgroup.items()},
    }


@dataclasses.dataclass(frozen=True)
class Divergence:
  """What `divergence` returns; the per-example arrays are `[N]` in test-set order."""

  kl: np.ndarray  # float64 KL(p ‖ q)
  delta_p: np.ndarray  # float64 q_y − p_y
  agree: np.ndarray  # bool, top-1 agreement
  flips: paired.Flips  # of the two arg maxes: broken / fixed / changed / unchanged
  kl_summary: Summaries
  delta_p_summary: Summaries
  largest_kl: np.ndarray  # int64 indices of the largest KL, largest first (`largest`)
  flip_rate: float  # (broken + fixed + changed) / N: the share whose top-1 label changed


def divergence(ref_logits, cand_logits, y, subgroups=None, gallery=GALLERY, confidence=CONFIDENCE):
  """KL, Δp, top-1 agreement and flips of a candidate against its reference, summarized.

  Args:
    ref_logits: `[N, C]` reference logits; cand_logits: the candidate's, same examples.
    y: int `[N]` labels in [0, C).
    subgroups: optional dict name -> bool `[N]` (or a DataFrame of boolean columns).
    gallery: m, how many indices of the largest KL to keep.
    confidence: level of the mean intervals.

  Returns:
    `Divergence` (per-class summaries for the C classes; `flips.counts` are the flip counts).

  Raises:
    validate.StatsInputError: as `true_class_probability_change`; bad subgroups, m, confidence.
  """
  a, b, y = _check_pair(ref_logits, cand_logits, y)
  _check_values([0.0], confidence)
  largest([0.0], gallery)  # checks m before the pass over the logits
  masks = {}
  if subgroups is not None and not (isinstance(subgroups, dict) and not subgroups):
    masks = validate.check_attributes(subgroups, a.shape[0], name="subgroups")
  kl, delta, top_a, top_b = _scan(a, b, y)

  def summaries(v):
    return Summaries(
      overall=summarize(v, confidence=confidence),
      by_class=summarize_by_class(v, y, a.shape[1], confidence),
      by_subgroup={k: summarize(v, m, confidence) for k, m in masks.items()},
    )

  return Divergence(
    kl=kl,
    delta_p=delta,
    agree=top_a == top_b,
    flips=paired.flips(y, top_a, top_b),
    kl_summary=summaries(kl),
    delta_p_summary=summaries(delta),
    largest_kl=largest(kl, gallery),
    flip_rate=float(np.mean(top_a != top_b)),
  )
