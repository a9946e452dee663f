"""002's t-tests on slopes (docs/spec.md §5.4): directions, Bonferroni by rows, rows with their
own pairs; p-values against scipy.stats called directly."""

import numpy as np
import pytest
from scipy import stats as sp_stats

from tf_forget.stats import recall_tests
from tf_forget.stats import validate


def test_t_test_directions_and_bonferroni():
  rng = np.random.default_rng(1)
  base = rng.normal(1.0, 0.1, 30)
  by_ratio = {
    2: base,
    4: base + 0.05 + rng.normal(0, 0.01, 30),
    10: base + 0.3 + rng.normal(0, 0.01, 30),
  }
  table = recall_tests.ratio_trend_tests(by_ratio)
  assert list(zip(table["first"], table["second"])) == [(2, 4), (4, 10)]
  assert (table["alternative"] == "less").all()
  want = sp_stats.ttest_rel(by_ratio[2], by_ratio[4], alternative="less").pvalue
  assert table["p_value"][0] == pytest.approx(want)
  np.testing.assert_allclose(table["p_bonferroni"], np.minimum(1, table["p_value"] * 2))
  # Model sizes: smaller ">" larger, independent Welch.
  sizes = recall_tests.model_size_tests({"resnet20": base + 0.2, "resnet32": base})
  want = sp_stats.ttest_ind(base + 0.2, base, equal_var=False, alternative="greater").pvalue
  assert sizes["p_value"][0] == pytest.approx(want) and sizes["p_bonferroni"][0] < 0.05
  flipped = recall_tests.model_size_tests({"resnet20": base, "resnet32": base + 0.2})
  assert flipped["p_value"][0] > 0.99  # one-sided: the opposite direction is not evidence
  data = recall_tests.dataset_tests(
    {"MNIST": base, "CIFAR-10": base + 0.1, "CIFAR-100": base + 0.2},
    [("MNIST", "CIFAR-10"), ("CIFAR-10", "CIFAR-100")],
  )
  assert (data["alternative"] == "less").all() and len(data) == 2
  algos = recall_tests.algorithm_tests(
    {
      "MP": base,
      "GP": base + rng.normal(0, 0.01, 30),
      "UP": base - 0.2 + rng.normal(0, 0.01, 30),
      "RP": base - 0.3 + rng.normal(0, 0.05, 30),
    }
  )
  assert len(algos) == 6 and (algos["alternative"] == "two-sided").all()
  np.testing.assert_allclose(algos["p_bonferroni"], np.minimum(1, algos["p_value"] * 6))
  cells = {
    (m, r): (base, base + 0.001 * r + rng.normal(0, 0.01, 30))
    for m in ("a", "b")
    for r in (2, 4, 10)
  }
  mpup = recall_tests.mp_vs_up_tests(cells)
  np.testing.assert_allclose(mpup["p_bonferroni"], np.minimum(1, mpup["p_value"] * 6))
  with pytest.raises(validate.StatsInputError, match="paired t-test"):
    recall_tests.paired_t_test(base, base[:10])


def test_paired_tests_rows_with_their_own_pairs():
  rng = np.random.default_rng(2)
  base = rng.normal(1.0, 0.1, 30)
  by_ratio = {
    2: base,
    4: base + 0.05 + rng.normal(0, 0.01, 30),
    10: base + 0.3 + rng.normal(0, 0.01, 30),
  }
  lib = recall_tests.ratio_trend_tests(by_ratio)
  table = recall_tests.paired_tests(
    [
      (2, 4, by_ratio[2], by_ratio[4]),
      (4, 10, by_ratio[4][:20], by_ratio[10][:20]),
      (10, 50, base[:1], base[:1] + 1),
    ],
    "less",
  )
  assert list(table.n) == [30, 20, 1] and (table.rows == 3).all()
  # Row 1 is ratio_trend_tests' row (same pairs); row 2 uses its own 20 pairs (scipy).
  assert table.p_value[0] == pytest.approx(lib.p_value[0], rel=1e-12)
  want = sp_stats.ttest_rel(by_ratio[4][:20], by_ratio[10][:20], alternative="less").pvalue
  assert table.p_value[1] == pytest.approx(want, rel=1e-12)
  assert table.mean_second[1] == pytest.approx(by_ratio[10][:20].mean())
  np.testing.assert_allclose(table.p_bonferroni[:2], np.minimum(1, 3 * table.p_value[:2]))
  assert np.isnan(table.p_value[2]) and np.isnan(table.p_bonferroni[2])  # n < 2: no test
  empty = recall_tests.paired_tests([("a", "b", [], [])])
  assert empty.n[0] == 0 and np.isnan(empty.p_value[0])
  with pytest.raises(validate.StatsInputError, match="paired t-test"):
    recall_tests.paired_tests([("a", "b", base, base[:10])])
  with pytest.raises(validate.StatsInputError, match="NaN"):
    recall_tests.paired_tests([("a", "b", [1.0, np.nan], [1.0, 2.0])])
