"""Robustness to corruptions normalized to the dense population (000 §4, Tables 3 and 8).

docs/spec.md §3.6: per corruption, average the accuracy over members and over severities 1-5
first, then normalized = 100 · (A_t / A_0 − 1) with A_0 the dense population on the same
corruption; top-1 and top-5. ImageNet-A (Table 8) has a single "severity".

Paper: 000 (docs/papers.md; Table 3 in appendix D, Table 8).
"""

import numpy as np
import pandas as pd

from tf_forget.stats import validate


def normalized_robustness(accuracy_t, accuracy_0):
  """Normalized robustness 100 · (A_t / A_0 − 1) (000 Table 3 / 8 "Top-1 Norm"; docs/spec.md §3.6).

  Args:
    accuracy_t: float array, averaged accuracy of the compressed population.
    accuracy_0: float array (broadcastable), of the dense population on the same corruption.

  Returns:
    float array in percent (0 = as robust as dense); NaN where A_0 = 0.
  """
  at = np.asarray(accuracy_t, dtype=np.float64)
  a0 = np.asarray(accuracy_0, dtype=np.float64)
  with np.errstate(invalid="ignore", divide="ignore"):
    return np.where(a0 != 0, 100.0 * (at / np.where(a0 != 0, a0, 1.0) - 1.0), np.nan)


def corruption_accuracy(accuracies):
  """Mean accuracy over members and severities (docs/spec.md §3.6, "average ... first").

  Args:
    accuracies: float `[members, severities]` (or `[members]` for a single severity) of one
      variant on one corruption.

  Returns:
    float.
  """
  a = validate.check_finite(accuracies, "accuracies")
  if a.ndim not in (1, 2):
    raise validate.StatsInputError(
      f"accuracies must be [members] or [members, severities], got shape {a.shape}"
    )
  return float(a.mean())


def robustness_table(top1, top5=None, dense="dense"):
  """000 Table 3 / Table 8: absolute and normalized robustness per (variant, corruption).

  Args:
    top1: dict (variant, corruption) -> float `[members, severities]` top-1 accuracies.
    top5: optional dict with the same keys for top-5 accuracies.
    dense: name of the baseline variant; every corruption needs a (dense, corruption) entry.

  Returns:
    DataFrame with columns `variant`, `corruption`, `top1`, `top5`, `top1_norm`,
    `top5_norm` (accuracies as given, e.g. fractions; norms in percent; the dense rows are 0).

  Raises:
    validate.StatsInputError: a corruption lacks its dense entry, top5 keys differ.
  """
  if not top1:
    raise validate.StatsInputError("top1 is empty")
  if top5 is not None and set(top5) != set(top1):
    raise validate.StatsInputError("top5 must have the same (variant, corruption) keys as top1")
  rows = []
  for (variant, corruption), acc in top1.items():
    if (dense, corruption) not in top1:
      raise validate.StatsInputError(
        f"no dense entry ({dense!r}, {corruption!r}) to normalize {variant!r} by"
      )
    a1 = corruption_accuracy(acc)
    d1 = corruption_accuracy(top1[(dense, corruption)])
    a5 = d5 = float("nan")
    if top5 is not None:
      a5 = corruption_accuracy(top5[(variant, corruption)])
      d5 = corruption_accuracy(top5[(dense, corruption)])
    rows.append(
      {
        "variant": variant,
        "corruption": corruption,
        "top1": a1,
        "top5": a5,
        "top1_norm": float(normalized_robustness(a1, d1)),
        "top5_norm": float(normalized_robustness(a5, d5)),
      }
    )
  return pd.DataFrame(
    rows, columns=["variant", "corruption", "top1", "top5", "top1_norm", "top5_norm"]
  )
