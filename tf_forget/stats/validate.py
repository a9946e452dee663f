"""Input checks shared by every measure of the stats library.

Every check raises `StatsInputError` (a `ValueError`) with a one-line message that names the
problem and the argument (docs/CONVENTIONS.md "Bad input"). The checks convert
their inputs to plain numpy arrays, so the measures can rely on shapes and dtypes:

* predictions: integer labels, `[members, examples]` (top-1) or `[members, examples, k]` (top-k);
* labels: integer labels `[examples]`;
* paired labels (`check_triplet`): labels y, reference and candidate predictions a, b, each
  `[examples]`, with an optional boolean mask `[examples]`;
* attributes: a pandas DataFrame or a dict of boolean arrays `[examples]`.

Floating arrays are accepted only when they hold whole numbers (a NaN is named as such).
"""

import numpy as np
import pandas as pd


class StatsInputError(ValueError):
  """Bad input to a tf_forget.stats measure (one line, names the problem)."""


def _as_int_array(x, name):
  """Returns `x` as an int64 array; rejects NaN, infinities, fractions, non-numbers."""
  arr = np.asarray(x)
  if arr.dtype == bool:
    return arr.astype(np.int64)
  if np.issubdtype(arr.dtype, np.integer):
    return arr.astype(np.int64, copy=False)
  if np.issubdtype(arr.dtype, np.floating):
    if np.isnan(arr).any():
      raise StatsInputError(f"{name} contains NaN")
    if not np.isfinite(arr).all():
      raise StatsInputError(f"{name} contains an infinite value")
    if (arr != np.round(arr)).any():
      raise StatsInputError(f"{name} contains non-integer labels")
    return arr.astype(np.int64)
  raise StatsInputError(f"{name} must hold integer labels, got dtype {arr.dtype}")


def check_labels(labels, num_classes=None, name="labels"):
  """Checks the true labels.

  Args:
    labels: integer array-like `[examples]`.
    num_classes: if given, every label must lie in `[0, num_classes)`.
    name: argument name used in error messages.

  Returns:
    int64 array `[examples]`.

  Raises:
    StatsInputError: not 1-D, empty, NaN, non-integer or out of range.
  """
  arr = _as_int_array(labels, name)
  if arr.ndim != 1:
    raise StatsInputError(f"{name} must be 1-D [examples], got shape {arr.shape}")
  if arr.size == 0:
    raise StatsInputError(f"{name} is empty (no examples)")
  check_range(arr, num_classes, name)
  return arr


def check_range(arr, num_classes, name):
  """Raises if an int array holds a label outside `[0, num_classes)` (skipped if None)."""
  if arr.size == 0:
    return
  lo, hi = int(arr.min()), int(arr.max())
  if lo < 0:
    raise StatsInputError(f"{name} has a negative label ({lo})")
  if num_classes is not None and hi >= num_classes:
    raise StatsInputError(f"{name} has label {hi} out of range for num_classes={num_classes}")


def check_predictions(predictions, num_examples=None, num_classes=None, ndim=2, name="predictions"):
  """Checks a population's predicted labels.

  Args:
    predictions: integer array-like `[members, examples]` (ndim=2) or
      `[members, examples, k]` (ndim=3, top-k labels, best first).
    num_examples: if given, the required number of examples.
    num_classes: if given, every label must lie in `[0, num_classes)`.
    ndim: 2 for top-1 labels, 3 for top-k labels.
    name: argument name used in error messages.

  Returns:
    int64 array of the given rank.

  Raises:
    StatsInputError: wrong rank, no members (empty population), no examples, mismatched
      example count, NaN, non-integer or out-of-range labels.
  """
  arr = _as_int_array(predictions, name)
  if arr.ndim != ndim:
    want = "[members, examples]" if ndim == 2 else "[members, examples, k]"
    raise StatsInputError(f"{name} must be {ndim}-D {want}, got shape {arr.shape}")
  if arr.shape[0] == 0:
    raise StatsInputError(f"{name} is an empty population (0 members)")
  if arr.shape[1] == 0:
    raise StatsInputError(f"{name} has no examples")
  if ndim == 3 and arr.shape[2] == 0:
    raise StatsInputError(f"{name} has k = 0 top-k labels")
  if num_examples is not None and arr.shape[1] != num_examples:
    raise StatsInputError(f"{name} has {arr.shape[1]} examples but labels have {num_examples}")
  check_range(arr, num_classes, name)
  return arr


def check_same_members(a, b, names=("baseline", "compressed"), why="pairing"):
  """Raises unless two populations have the same number of members (first axis)."""
  if np.shape(a)[0] != np.shape(b)[0]:
    raise StatsInputError(
      f"{names[0]} has {np.shape(a)[0]} members but {names[1]} has {np.shape(b)[0]};"
      f" {why} needs equal populations"
    )


def check_same_examples(a, b, names=("baseline", "compressed")):
  """Raises unless two populations cover the same number of examples (second axis)."""
  if np.shape(a)[1] != np.shape(b)[1]:
    raise StatsInputError(
      f"{names[0]} has {np.shape(a)[1]} examples but {names[1]} has {np.shape(b)[1]}"
    )


def check_finite(x, name, allow_nan=False, ndim=None):
  """Returns `x` as a float64 array; raises on NaN (unless allowed), inf or wrong rank."""
  try:
    arr = np.asarray(x, dtype=np.float64)
  except (TypeError, ValueError) as e:
    raise StatsInputError(f"{name} must be numeric ({e})") from None
  if ndim is not None and arr.ndim != ndim:
    raise StatsInputError(f"{name} must be {ndim}-D, got shape {arr.shape}")
  if arr.size == 0:
    raise StatsInputError(f"{name} is empty")
  if not allow_nan and np.isnan(arr).any():
    raise StatsInputError(f"{name} contains NaN")
  if np.isinf(arr).any():
    raise StatsInputError(f"{name} contains an infinite value")
  return arr


def infer_num_classes(*label_arrays):
  """Smallest class count that covers every label in the given int arrays."""
  return int(max(int(np.max(a)) for a in label_arrays if np.size(a))) + 1


def check_attributes(attributes, num_examples, name="attributes"):
  """Checks per-example binary attributes.

  Args:
    attributes: pandas DataFrame (one boolean / 0-1 column per attribute) or dict of
      name -> boolean array-like `[examples]`.
    num_examples: required length of every attribute.
    name: argument name used in error messages.

  Returns:
    dict name -> bool array `[examples]`, in the input's order.

  Raises:
    StatsInputError: no attributes, wrong length, NaN or values other than 0/1.
  """
  if isinstance(attributes, pd.DataFrame):
    items = [(str(c), attributes[c].to_numpy()) for c in attributes.columns]
  elif isinstance(attributes, dict):
    items = [(str(k), np.asarray(v)) for k, v in attributes.items()]
  else:
    raise StatsInputError(
      f"{name} must be a pandas DataFrame or a dict of boolean arrays,"
      f" got {type(attributes).__name__}"
    )
  if not items:
    raise StatsInputError(f"{name} is empty (no attributes)")
  out = {}
  for key, v in items:
    v = np.asarray(v)
    if v.ndim != 1 or v.shape[0] != num_examples:
      raise StatsInputError(
        f"{name}[{key!r}] has shape {v.shape} but there are {num_examples} examples"
      )
    if v.dtype == bool:
      out[key] = v
      continue
    if v.dtype == object:
      try:
        v = v.astype(np.float64)
      except (TypeError, ValueError):
        raise StatsInputError(f"{name}[{key!r}] is not boolean") from None
    if not np.issubdtype(v.dtype, np.number):
      raise StatsInputError(f"{name}[{key!r}] is not boolean (dtype {v.dtype})")
    if np.issubdtype(v.dtype, np.floating) and np.isnan(v).any():
      raise StatsInputError(f"{name}[{key!r}] contains NaN")
    if not np.isin(v, (0, 1)).all():
      raise StatsInputError(f"{name}[{key!r}] holds values other than 0/1")
    out[key] = v.astype(bool)
  return out


def check_confidence(confidence, name="confidence"):
  """Raises unless a level (a confidence, a false discovery rate) lies in (0, 1)."""
  if not 0 < confidence < 1:
    raise StatsInputError(f"{name} must be in (0, 1), got {confidence}")


def check_mask(mask, n, name="mask"):
  """bool `[n]`: all True if `mask` is None; rejects other lengths and non-0/1 values."""
  if mask is None:
    return np.ones(n, dtype=bool)
  m = np.asarray(mask)
  if m.ndim != 1 or m.shape[0] != n:
    raise StatsInputError(f"{name} has shape {m.shape} but there are {n} examples")
  if m.dtype == bool:
    return m
  if not np.issubdtype(m.dtype, np.number) or not np.isin(m, (0, 1)).all():
    raise StatsInputError(f"{name} must be boolean (True / False or 0 / 1)")
  return m.astype(bool)


def check_triplet(y, a, b, mask=None, num_classes=None):
  """int64 y, a, b `[n]` and bool mask `[n]`, checked for rank, sign, range and length."""
  y = check_labels(y, num_classes, name="y")
  a = check_labels(a, num_classes, name="a")
  b = check_labels(b, num_classes, name="b")
  for name, arr in (("a", a), ("b", b)):
    if arr.shape[0] != y.shape[0]:
      raise StatsInputError(f"{name} has {arr.shape[0]} examples but y has {y.shape[0]}")
  return y, a, b, check_mask(mask, y.shape[0])
