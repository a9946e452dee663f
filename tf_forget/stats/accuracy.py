"""Top-1 / top-k accuracy and per-class recall of every member of a population.

000 (docs/papers.md) §2.1-2.2 and Tables 2, 4, 5: β^M_{t,k} is the
overall top-1 accuracy of member k of the population compressed to level t, β^c_{t,k} its
recall on class c (the accuracy on the examples whose true label is c). Tables report the
population mean; Figure 1 (000 "Table 1") shows the spread over members.

All functions are vectorized over members and examples.
"""

import numpy as np

from tf_forget.stats import validate


def top1_accuracy(predictions, labels):
  """Top-1 accuracy β^M_k of each member (000 §2.1, Table 2 "Top 1").

  Args:
    predictions: int `[members, examples]` top-1 labels.
    labels: int `[examples]` true labels.

  Returns:
    float64 `[members]`, fractions in [0, 1].

  Raises:
    validate.StatsInputError: bad shapes or labels.
  """
  labels = validate.check_labels(labels)
  preds = validate.check_predictions(predictions, labels.shape[0])
  return (preds == labels[None, :]).mean(axis=1)


def topk_accuracy(topk_predictions, labels, k=5):
  """Top-k accuracy of each member (000 Table 2 "Top 5", Table 3 and 8 "Top-5").

  An example counts as correct if its true label is among the first `k` labels.

  Args:
    topk_predictions: int `[members, examples, K]` labels ranked best first, K >= k.
    labels: int `[examples]` true labels.
    k: how many of the ranked labels count.

  Returns:
    float64 `[members]`.

  Raises:
    validate.StatsInputError: bad shapes, fewer than k labels per example.
  """
  labels = validate.check_labels(labels)
  preds = validate.check_predictions(
    topk_predictions, labels.shape[0], ndim=3, name="topk_predictions"
  )
  if preds.shape[2] < k:
    raise validate.StatsInputError(
      f"topk_predictions has {preds.shape[2]} labels per example, fewer than k={k}"
    )
  return (preds[:, :, :k] == labels[None, :, None]).any(axis=2).mean(axis=1)


def class_counts(labels, num_classes):
  """Number of examples per true class, int `[num_classes]`."""
  return np.bincount(labels, minlength=num_classes)


def per_class_recall(predictions, labels, num_classes=None):
  """Per-class recall β^c_k of each member (000 §2.2; 002 §4 R^c(m)).

  Recall of class c = correct predictions among examples of class c / examples of class c.

  Args:
    predictions: int `[members, examples]` top-1 labels.
    labels: int `[examples]` true labels.
    num_classes: number of classes C (default: 1 + largest label seen).

  Returns:
    float64 `[members, C]`; NaN for a class with no example in `labels`.

  Raises:
    validate.StatsInputError: bad shapes or labels.
  """
  labels = validate.check_labels(labels, num_classes)
  preds = validate.check_predictions(predictions, labels.shape[0], num_classes)
  if num_classes is None:
    num_classes = validate.infer_num_classes(labels, preds)
  members = preds.shape[0]
  correct = (preds == labels[None, :]).ravel()
  # One bincount over (member, class) cells: index = k * C + label.
  cell = (np.arange(members)[:, None] * num_classes + labels[None, :]).ravel()
  hits = np.bincount(cell, weights=correct, minlength=members * num_classes)
  hits = hits.reshape(members, num_classes)
  n = class_counts(labels, num_classes).astype(np.float64)
  with np.errstate(invalid="ignore", divide="ignore"):
    recall = hits / n[None, :]
  recall[:, n == 0] = np.nan
  return recall


def population_summary(values, ddof=0):
  """Mean and spread of a per-member measure over the population (000 Table 1, 2).

  Args:
    values: float `[members]` (e.g. top-1 accuracy of each member).
    ddof: delta degrees of freedom of the standard deviation (0: population SD,
      as docs/spec.md §6.6 uses for 003's "±"; 1: sample SD).

  Returns:
    dict with `mean`, `std`, `min`, `max`, `members`.

  Raises:
    validate.StatsInputError: empty or NaN values.
  """
  v = validate.check_finite(values, "values", ndim=1)
  std = float(np.std(v, ddof=ddof)) if v.size > ddof else float("nan")
  return {
    "mean": float(v.mean()),
    "std": std,
    "min": float(v.min()),
    "max": float(v.max()),
    "members": int(v.size),
  }
