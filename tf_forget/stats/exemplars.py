"""Pruning / Compression Identified Exemplars by modal label (000 §2.3, 004 §3.1 Modal CIE).

* `label_counts`: b_{x,i}, the number of members that predict class i for example x.
* `modal_label`: y^M_x, the most frequent label over the population; ties go to the
  **largest** label (the authors' released code: pandas `mode().max()`, docs/spec.md §3.4), and the
  number of tied examples is reported.
* `pruning_identified_exemplars` (= `modal_cie`): PIE_{x,t} = 1 iff y^M_{x,0} ≠ y^M_{x,t}.
* `accuracy_on_subsets`: top-1 / top-5 of the dense **and** the compressed population on PIE,
  non-PIE and all examples, mean over members of the accuracy on the subset (000 Table 6,
  004 Table 2; docs/spec.md §3.5), optionally on a seeded random sample per subset.

Papers: 000 and 004 (docs/papers.md).
"""

import numpy as np
import pandas as pd

from tf_forget.stats import validate

# Examples per chunk are chosen so that a chunk of counts holds about this many cells.
_CHUNK_CELLS = 1 << 22


def example_chunks(num_examples, num_classes):
  """Slices of examples whose `[chunk, C]` count table stays small (bounded memory)."""
  step = max(1, _CHUNK_CELLS // max(1, num_classes))
  for start in range(0, num_examples, step):
    yield slice(start, min(num_examples, start + step))


def counts_unchecked(preds, num_classes):
  """Counts `[examples, C]` (int64) of an already validated `[members, examples]` array."""
  n = preds.shape[1]
  cell = (np.arange(n)[None, :] * num_classes + preds).ravel()
  return np.bincount(cell, minlength=n * num_classes).reshape(n, num_classes)


def label_counts(predictions, num_classes=None):
  """Label distribution per example, b_{x,i} (004 §3.1, appendix A.1).

  Args:
    predictions: int `[members, examples]` top-1 labels of one population.
    num_classes: number of classes C (default: 1 + largest label).

  Returns:
    int64 `[examples, C]`; each row sums to the number of members.
  """
  preds = validate.check_predictions(predictions, num_classes=num_classes)
  if num_classes is None:
    num_classes = validate.infer_num_classes(preds)
  return counts_unchecked(preds, num_classes)


def modal_from_counts(counts):
  """Modal label (ties -> largest label) and tie flag from label counts `[n, C]`.

  The dense-table counterpart of `modal_label` (same results; O(n · C) memory).
  """
  c = counts.shape[1]
  top = counts.max(axis=1)
  modal = c - 1 - np.argmax(counts[:, ::-1], axis=1)
  tied = (counts == top[:, None]).sum(axis=1) > 1
  return modal, tied


def _sorted_runs(sorted_rows):
  """Run lengths so far in rows sorted ascending, int `[rows, cols]`.

  `runlen[x, j]` is the length of the run of equal values from the run's start up to
  column j, so a run's last column holds its full count.
  """
  rows, cols = sorted_rows.shape
  start = np.ones((rows, cols), dtype=bool)
  start[:, 1:] = sorted_rows[:, 1:] != sorted_rows[:, :-1]
  col = np.arange(cols)[None, :]
  run_start = np.maximum.accumulate(np.where(start, col, 0), axis=1)
  return col - run_start + 1


def modal_label(predictions, num_classes=None):
  """Modal label y^M_x of a population for every example (000 §2.3; docs/spec.md §3.4).

  Ties between equally frequent labels go to the largest label. Computed by sorting each
  example's K labels (memory O(K · examples), independent of the number of classes).

  Args:
    predictions: int `[members, examples]` top-1 labels.
    num_classes: if given, labels must lie in `[0, num_classes)`.

  Returns:
    (modal `[examples]` int64, tied `[examples]` bool: True where two or more labels share
    the maximum count). `int(tied.sum())` is the tie count to report.
  """
  preds = validate.check_predictions(predictions, num_classes=num_classes)
  s = np.sort(preds.T, axis=1)  # [examples, members]
  runlen = _sorted_runs(s)
  top = runlen.max(axis=1, keepdims=True)
  at_top = runlen == top  # one position per run that reaches the maximum count
  # The last position at the maximum belongs to the largest tied label (rows ascend).
  last = s.shape[1] - 1 - np.argmax(at_top[:, ::-1], axis=1)
  modal = s[np.arange(s.shape[0]), last]
  tied = at_top.sum(axis=1) > 1
  return modal.astype(np.int64), tied


def pruning_identified_exemplars(predictions_0, predictions_t, num_classes=None):
  """PIE_{x,t} (000 §2.3) = Modal CIE_{x,t} (004 §3.1): modal labels differ.

  The two populations may differ in size; they must cover the same examples. True labels
  are not needed (an unsupervised protocol, 000 §2.3).

  Args:
    predictions_0: int `[K0, examples]` non-compressed population.
    predictions_t: int `[Kt, examples]` compressed population.
    num_classes: number of classes C (default: 1 + largest label in either).

  Returns:
    dict: `pie` bool `[examples]`, `count` int (000 Table 2 "# PIEs", 004 Table 1
    "# Modal CIEs"), `modal_0`, `modal_t` int `[examples]`, `ties_0`, `ties_t` int (examples
    whose modal label was decided by the tie rule).
  """
  p0 = validate.check_predictions(predictions_0, num_classes=num_classes, name="predictions_0")
  pt = validate.check_predictions(predictions_t, p0.shape[1], num_classes, name="predictions_t")
  if num_classes is None:
    num_classes = validate.infer_num_classes(p0, pt)
  m0, t0 = modal_label(p0, num_classes)
  mt, tt = modal_label(pt, num_classes)
  pie = m0 != mt
  return {
    "pie": pie,
    "count": int(pie.sum()),
    "modal_0": m0,
    "modal_t": mt,
    "ties_0": int(t0.sum()),
    "ties_t": int(tt.sum()),
  }


modal_cie = pruning_identified_exemplars


def example_hits(predictions, labels, topk_predictions=None, k=5):
  """Per-example number of members that are right (top-1, and top-k if given).

  Args:
    predictions: int `[members, examples]` (validated).
    labels: int `[examples]`.
    topk_predictions: optional int `[members, examples, K]`, K >= k.
    k: top-k cut-off.

  Returns:
    dict `top1` int `[examples]`, `topk` int `[examples]` or None, `members` int.
  """
  out = {
    "top1": (predictions == labels[None, :]).sum(axis=0),
    "topk": None,
    "members": predictions.shape[0],
  }
  if topk_predictions is not None:
    if topk_predictions.shape[2] < k:
      raise validate.StatsInputError(
        f"topk_predictions has {topk_predictions.shape[2]} labels per example, fewer than k={k}"
      )
    hit = (topk_predictions[:, :, :k] == labels[None, :, None]).any(axis=2)
    out["topk"] = hit.sum(axis=0)
  return out


def subset_accuracy(hits, mask):
  """Mean over members of top-1 (and top-k) accuracy on the examples where `mask` is True.

  Every member sees the same subset, so the mean over members of the per-member accuracy
  equals the pooled share of correct (member, example) pairs.

  Args:
    hits: dict from `example_hits`.
    mask: bool `[examples]` subset.

  Returns:
    dict `top1`, `topk` (NaN without top-k predictions), `n` (subset size). Accuracies of an
    empty subset are NaN.
  """
  mask = np.asarray(mask, dtype=bool)
  n = int(mask.sum())
  out = {"top1": float("nan"), "topk": float("nan"), "n": n}
  if n == 0:
    return out
  denom = float(hits["members"] * n)
  out["top1"] = float(hits["top1"][mask].sum() / denom)
  if hits["topk"] is not None:
    out["topk"] = float(hits["topk"][mask].sum() / denom)
  return out


def _sample_mask(mask, size, rng):
  idx = np.flatnonzero(mask)
  if size is None or idx.size <= size:
    return mask
  out = np.zeros_like(mask)
  out[rng.choice(idx, size=size, replace=False)] = True
  return out


def accuracy_on_subsets(
  predictions_0,
  predictions_t,
  labels,
  subset,
  topk_predictions_0=None,
  topk_predictions_t=None,
  k=5,
  sample_size=None,
  seed=0,
  subset_name="pie",
):
  """Accuracy of both populations on a subset, its complement and all examples.

  000 Table 6 / Figure 3 (PIE, non-PIE, all); 004 Table 2 (Modal CIE, All); docs/spec.md §3.5: for
  both the dense and the compressed population, the mean over members of the accuracy on
  the full subset; optionally on a seeded random sample of `sample_size` examples drawn
  once per subset (000 evaluates samples) and shared by both populations. A subset smaller
  than `sample_size` is used whole.

  Args:
    predictions_0: int `[K0, examples]` non-compressed population.
    predictions_t: int `[Kt, examples]` compressed population.
    labels: int `[examples]`.
    subset: bool `[examples]` (e.g. the PIE flags).
    topk_predictions_0, topk_predictions_t: optional int `[K, examples, K']` for top-k.
    k: top-k cut-off (000: 5).
    sample_size: None (full subsets, default) or examples per subset.
    seed: seed of the sample.
    subset_name: label of the subset ("pie", "cie", ...); its complement is "non_" + it.

  Returns:
    DataFrame with columns `population` ("dense" / "compressed"), `subset`
    (subset_name, "non_" + subset_name, "all"), `top1`, `topk`, `n`.
  """
  labels = validate.check_labels(labels)
  n = labels.shape[0]
  p0 = validate.check_predictions(predictions_0, n, name="predictions_0")
  pt = validate.check_predictions(predictions_t, n, name="predictions_t")
  s = np.asarray(subset)
  if s.shape != (n,):
    raise validate.StatsInputError(f"subset has shape {s.shape} but there are {n} examples")
  s = s.astype(bool)
  tk0 = tkt = None
  if topk_predictions_0 is not None:
    tk0 = validate.check_predictions(topk_predictions_0, n, ndim=3, name="topk_predictions_0")
  if topk_predictions_t is not None:
    tkt = validate.check_predictions(topk_predictions_t, n, ndim=3, name="topk_predictions_t")
  rng = np.random.default_rng(seed)
  masks = {subset_name: s, "non_" + subset_name: ~s, "all": np.ones(n, dtype=bool)}
  masks = {name: _sample_mask(m, sample_size, rng) for name, m in masks.items()}
  rows = []
  for pop, preds, topk in (("dense", p0, tk0), ("compressed", pt, tkt)):
    hits = example_hits(preds, labels, topk, k)
    for name, m in masks.items():
      rows.append({"population": pop, "subset": name, **subset_accuracy(hits, m)})
  return pd.DataFrame(rows, columns=["population", "subset", "top1", "topk", "n"])
