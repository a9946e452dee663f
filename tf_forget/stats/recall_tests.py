"""The t-tests of 002 §7 and appendix A on slopes α, with Bonferroni by rows (docs/spec.md §5.4).

* `paired_t_test` (the same dense models on both sides) and `independent_t_test` (Welch), each
  with its direction ("two-sided", "less", "greater"); `bonferroni` p · rows capped at 1.
* One table per 002 table: `ratio_trend_tests` (Tables 1-4), `model_size_tests` (5-6),
  `dataset_tests` (7), `algorithm_tests` (8), `mp_vs_up_tests` (9).
* `paired_tests` for comparisons whose pairs differ from row to row (each row pairs the
  models present on both of its sides).

The slopes are `tf_forget.stats.recall_distortion.model_slope`'s, `[models]` per side.
Paper: 002 (docs/papers.md).
"""

import itertools

import numpy as np
import pandas as pd
from scipy import stats as sp_stats

from tf_forget.stats import validate

ALTERNATIVES = ("two-sided", "less", "greater")


def bonferroni(p_value, rows):
  """Bonferroni by rows: p · rows capped at 1 (002 §6.2, appendix A; docs/spec.md §5.4)."""
  return np.minimum(1.0, np.asarray(p_value, dtype=np.float64) * rows)


def paired_t_test(a, b, alternative="two-sided"):
  """Paired-samples t-test of E[a] vs E[b] (same dense model m on both sides; 002 §6.2).

  Args:
    a, b: float `[models]` slopes paired by model index.
    alternative: "two-sided", "less" (H_a: E[a] < E[b]) or "greater".

  Returns:
    dict `statistic`, `p_value` (uncorrected).
  """
  if alternative not in ALTERNATIVES:
    raise validate.StatsInputError(f"alternative must be one of {ALTERNATIVES}")
  a = validate.check_finite(a, "a", ndim=1)
  b = validate.check_finite(b, "b", ndim=1)
  validate.check_same_members(a, b, ("a", "b"), "a paired t-test")
  res = sp_stats.ttest_rel(a, b, alternative=alternative)
  return {"statistic": float(res.statistic), "p_value": float(res.pvalue)}


def independent_t_test(a, b, alternative="two-sided"):
  """Independent-samples Welch t-test of E[a] vs E[b] (002 §6.2; docs/spec.md §5.4)."""
  if alternative not in ALTERNATIVES:
    raise validate.StatsInputError(f"alternative must be one of {ALTERNATIVES}")
  a = validate.check_finite(a, "a", ndim=1)
  b = validate.check_finite(b, "b", ndim=1)
  res = sp_stats.ttest_ind(a, b, equal_var=False, alternative=alternative)
  return {"statistic": float(res.statistic), "p_value": float(res.pvalue)}


def _table(rows, num_rows):
  df = pd.DataFrame(rows, columns=["first", "second", "alternative", "statistic", "p_value"])
  df["p_bonferroni"] = bonferroni(df["p_value"].to_numpy(), num_rows)
  return df


def ratio_trend_tests(alphas_by_ratio):
  """002 Tables 1-4: consecutive ratios t_i < t_{i+1}, paired, H_a: E[α_{t_i}] < E[α_{t_{i+1}}].

  Args:
    alphas_by_ratio: dict ratio -> float `[models]` slopes of the same models (paired).

  Returns:
    DataFrame: one row per consecutive pair (`first`, `second`, `alternative`,
    `statistic`, `p_value`, `p_bonferroni` = p × number of rows).
  """
  ratios = sorted(alphas_by_ratio)
  rows = [
    (r1, r2, "less", *paired_t_test(alphas_by_ratio[r1], alphas_by_ratio[r2], "less").values())
    for r1, r2 in zip(ratios[:-1], ratios[1:])
  ]
  return _table(rows, len(rows))


def model_size_tests(alphas_by_model):
  """002 Tables 5-6: consecutive model sizes, independent (Welch), H_a: smaller > larger.

  Args:
    alphas_by_model: dict model -> float `[models]` at one ratio, ordered small to large
      (insertion order).

  Returns:
    DataFrame as `ratio_trend_tests` (alternative "greater").
  """
  names = list(alphas_by_model)
  rows = [
    (
      m1,
      m2,
      "greater",
      *independent_t_test(alphas_by_model[m1], alphas_by_model[m2], "greater").values(),
    )
    for m1, m2 in zip(names[:-1], names[1:])
  ]
  return _table(rows, len(rows))


def dataset_tests(alphas_by_dataset, pairs):
  """002 Table 7: data-set pairs (D_i, D_j), independent (Welch), H_a: E[α^{D_i}] < E[α^{D_j}].

  Args:
    alphas_by_dataset: dict data set -> float `[models]` at one ratio.
    pairs: list of (D_i, D_j), e.g. [("MNIST", "CIFAR-10"), ("Fashion", "CIFAR-10"),
      ("CIFAR-10", "CIFAR-100")].

  Returns:
    DataFrame as `ratio_trend_tests` (alternative "less").
  """
  rows = [
    (
      d1,
      d2,
      "less",
      *independent_t_test(alphas_by_dataset[d1], alphas_by_dataset[d2], "less").values(),
    )
    for d1, d2 in pairs
  ]
  return _table(rows, len(rows))


def algorithm_tests(alphas_by_algorithm):
  """002 Table 8: every pair of pruning algorithms, paired, two-sided.

  Args:
    alphas_by_algorithm: dict algorithm -> float `[models]` at one ratio (same dense models).

  Returns:
    DataFrame as `ratio_trend_tests` (alternative "two-sided"), pairs in insertion order.
  """
  rows = [
    (p1, p2, "two-sided", *paired_t_test(alphas_by_algorithm[p1], alphas_by_algorithm[p2]).values())
    for p1, p2 in itertools.combinations(list(alphas_by_algorithm), 2)
  ]
  return _table(rows, len(rows))


def mp_vs_up_tests(cells):
  """002 Table 9: MP vs UP per (model, ratio) cell, paired, two-sided, Bonferroni × cells.

  Args:
    cells: dict (model, ratio) -> (alphas_mp `[models]`, alphas_up `[models]`).

  Returns:
    DataFrame with `first` = model, `second` = ratio, ..., `p_bonferroni` = p × number of
    cells (002: 25), capped at 1.
  """
  rows = [
    (m, r, "two-sided", *paired_t_test(a_mp, a_up).values())
    for (m, r), (a_mp, a_up) in cells.items()
  ]
  return _table(rows, len(rows))


def paired_tests(comparisons, alternative="two-sided"):
  """Paired t-tests of one table column, each row with its own pairs; Bonferroni × rows.

  The rows of 002 Tables 1-4, 8 and 9 compare slopes of the same dense models m (§6.2); when a
  model is missing on one side of a row (a member left out), that row pairs the models both
  sides have, so rows may differ in n. With every model on every side the rows equal
  `ratio_trend_tests` / `algorithm_tests` / `mp_vs_up_tests` (docs/spec.md §5.4).

  Args:
    comparisons: list of (first, second, a `[n]`, b `[n]`): a[i] and b[i] are slopes of the
      same model; n may differ between rows. A row with n < 2 gets NaN statistic and p-value
      (still counted in the Bonferroni rows).
    alternative: "two-sided", "less" (H_a: E[a] < E[b]) or "greater", for every row.

  Returns:
    DataFrame: one row per comparison (`first`, `second`, `alternative`, `n`, `mean_first`,
    `mean_second`, `statistic`, `p_value`, `rows`, `p_bonferroni` = min(1, p × rows)), rows =
    the number of comparisons.
  """
  if alternative not in ALTERNATIVES:
    raise validate.StatsInputError(f"alternative must be one of {ALTERNATIVES}")
  nan = float("nan")
  rows = []
  for first, second, a, b in comparisons:
    if np.size(a) or np.size(b):
      a = validate.check_finite(a, "a", ndim=1)
      b = validate.check_finite(b, "b", ndim=1)
      validate.check_same_members(a, b, ("a", "b"), "a paired t-test")
    else:
      a = b = np.zeros(0)
    res = paired_t_test(a, b, alternative) if a.size >= 2 else {"statistic": nan, "p_value": nan}
    rows.append(
      {
        "first": first,
        "second": second,
        "alternative": alternative,
        "n": int(a.size),
        "mean_first": float(a.mean()) if a.size else nan,
        "mean_second": float(b.mean()) if b.size else nan,
        **res,
      }
    )
  df = pd.DataFrame(
    rows,
    columns=[
      "first",
      "second",
      "alternative",
      "n",
      "mean_first",
      "mean_second",
      "statistic",
      "p_value",
    ],
  )
  df["rows"] = len(df)
  df["p_bonferroni"] = bonferroni(df["p_value"].to_numpy(dtype=np.float64), len(df))
  return df
