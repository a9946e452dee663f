"""Subgroup rates, normalized difference and over-indexing (004 §2, Tables 3 and 5, Fig. 2)."""

import numpy as np
import pandas as pd
import pytest

from tf_forget.stats import subgroups
from tf_forget.stats import validate

COLUMNS = ("aggregate", "M", "F", "Y", "O", "MY", "MO", "FY", "FO")
# 004 Table 5 (absolute rates in %, averaged over 10 models): baseline (0% pruning) and
# compressed (95% pruning) rows, columns as COLUMNS.
TABLE5_BASELINE = {
  "error": (5.30, 2.37, 7.15, 5.17, 5.73, 2.28, 2.50, 5.17, 5.73),
  "fpr": (2.73, 0.93, 4.12, 2.59, 3.18, 0.81, 1.12, 2.59, 3.18),
  "fnr": (22.03, 62.65, 19.09, 21.35, 24.47, 60.45, 66.87, 21.35, 24.47),
}
TABLE5_COMPRESSED = {
  "error": (6.61, 2.95, 8.92, 6.23, 7.78, 2.47, 3.73, 6.23, 7.78),
  "fpr": (3.08, 1.39, 4.39, 2.67, 4.32, 0.86, 2.25, 2.67, 4.32),
  "fnr": (29.57, 67.92, 26.78, 28.57, 33.13, 66.02, 71.53, 28.57, 33.13),
}
# 004 Table 3, bottom rows: normalized difference (%) between 95% pruning and baseline.
TABLE3_NORMALIZED = {
  "error": (24.63, 24.49, 24.67, 20.64, 35.84, 7.96, 49.12, 20.64, 35.84),
  "fpr": (12.72, 49.54, 6.32, 3.35, 36.02, 5.37, 101.88, 3.35, 36.02),
  "fnr": (34.22, 8.41, 40.30, 33.83, 35.39, 9.21, 6.98, 33.83, 35.39),
}
H = 0.005  # half the rounding step of every printed cell (docs/spec.md §7.1)


@pytest.mark.parametrize("metric", ["error", "fpr", "fnr"])
@pytest.mark.parametrize("col", range(9), ids=COLUMNS)
def test_004_table3_follows_from_table5(metric, col):
  """004 Table 3 (bottom) from Table 5, every one of the 27 cells (docs/spec.md §7.2).

  The printed inputs are rounded to 0.01%, so the true normalized difference lies between
  the values at the corners of the rounding box (it grows with r_t, shrinks with r_0); the
  printed cell (itself rounded) must fall in that interval widened by its own rounding.
  E.g. aggregate error 5.30% -> 6.61% gives 24.72%, the box [24.50, 24.93] holds 24.63.
  """
  r0 = TABLE5_BASELINE[metric][col]
  rt = TABLE5_COMPRESSED[metric][col]
  printed = TABLE3_NORMALIZED[metric][col]
  low = subgroups.normalized_difference(rt - H, r0 + H)
  high = subgroups.normalized_difference(rt + H, r0 - H)
  mid = subgroups.normalized_difference(rt, r0)
  assert low <= mid <= high
  assert low - H <= printed <= high + H, (metric, COLUMNS[col], float(low), float(high))


def test_aggregate_error_example_from_issue():
  assert subgroups.normalized_difference(6.61, 5.30) == pytest.approx(24.717, abs=1e-3)


def test_normalized_difference_nan_rule():
  out = subgroups.normalized_difference([1.0, 2.0, np.nan], [0.0, 1.0, 1.0])
  assert np.isnan(out[0]) and out[1] == 100.0 and np.isnan(out[2])


def _toy():
  # 8 examples; target 1 = blond. Male: first 4; Young: examples 0, 1, 4, 5.
  labels = np.array([1, 0, 0, 0, 1, 1, 0, 0])
  attrs = pd.DataFrame(
    {
      "Male": [1, 1, 1, 1, 0, 0, 0, 0],
      "Young": [1, 1, 0, 0, 1, 1, 0, 0],
      "Smiling": [0, 1, 0, 1, 0, 1, 0, 1],
    }
  )
  preds = np.array([[0, 0, 1, 0, 1, 0, 0, 0], [1, 1, 0, 0, 1, 1, 0, 1]])
  return labels, attrs, preds


def test_subgroup_masks_order_and_names():
  labels, attrs, _ = _toy()
  masks = subgroups.subgroup_masks(attrs, labels.size)
  assert tuple(masks) == COLUMNS
  np.testing.assert_array_equal(masks["MO"], [0, 0, 1, 1, 0, 0, 0, 0])
  np.testing.assert_array_equal(masks["FY"], [0, 0, 0, 0, 1, 1, 0, 0])
  generic = subgroups.subgroup_masks(attrs, labels.size, protected=("Male", "Smiling"))
  assert "Smiling=1" in generic and "M&Smiling=0" in generic


def test_subgroup_rates_by_hand():
  labels, attrs, preds = _toy()
  masks = subgroups.subgroup_masks(attrs, labels.size)
  rates = subgroups.subgroup_rates(preds, labels, masks)
  col = {name: i for i, name in enumerate(masks)}
  # Member 0: wrong on 0 (FN), 2 (FP), 5 (FN) -> error 3/8; negatives 1,2,3,6,7 -> FPR 1/5;
  # positives 0,4,5 -> FNR 2/3.
  np.testing.assert_allclose(rates["error"][0, col["aggregate"]], 3 / 8)
  np.testing.assert_allclose(rates["fpr"][0, col["aggregate"]], 1 / 5)
  np.testing.assert_allclose(rates["fnr"][0, col["aggregate"]], 2 / 3)
  # Member 1: wrong on 1 (FP), 7 (FP). Subgroup M (0-3): error 1/4, FPR 1/3, FNR 0/1.
  np.testing.assert_allclose(rates["error"][1, col["M"]], 1 / 4)
  np.testing.assert_allclose(rates["fpr"][1, col["M"]], 1 / 3)
  assert rates["fnr"][1, col["M"]] == 0.0
  # MO (examples 2, 3) and FO (6, 7) have no positives: FNR is NaN, never 0 (docs/spec.md §4.2).
  assert np.isnan(rates["fnr"][:, col["MO"]]).all()
  assert np.isnan(rates["fnr"][:, col["FO"]]).all()
  # FY (4, 5) has no negatives: FPR NaN.
  assert np.isnan(rates["fpr"][:, col["FY"]]).all()


def test_member_average_uses_first_ten():
  rates = {"error": np.arange(12, dtype=float)[:, None]}
  assert subgroups.member_averaged_rates(rates)["error"][0] == 4.5
  assert subgroups.member_averaged_rates(rates, None)["error"][0] == 5.5
  assert subgroups.member_averaged_rates({"e": np.ones((3, 1))})["e"][0] == 1.0


def test_subgroup_table_shape_and_normalized_rows():
  labels, attrs, preds = _toy()
  table = subgroups.subgroup_table(preds, preds[::-1], labels, attrs)
  assert list(table.columns) == list(COLUMNS)
  assert table.shape == (9, 9)
  base = table.loc[("baseline", "error")]
  comp = table.loc[("compressed", "error")]
  np.testing.assert_allclose(
    table.loc[("normalized_difference", "error")], 100 * (comp - base) / base
  )
  same = subgroups.subgroup_table(preds, preds, labels, attrs)
  finite = same.loc["normalized_difference"].to_numpy()
  assert np.all((finite == 0) | np.isnan(finite))


def test_over_indexing_by_hand():
  train = {"Male": np.array([1, 0, 0, 0]), "Blond": np.array([1, 1, 0, 0])}
  test = {"Male": np.array([1, 1, 0, 0, 0]), "Blond": np.array([0, 1, 1, 0, 0])}
  cie_mask = np.array([True, True, True, False, False])
  df = subgroups.over_indexing(train, test, cie_mask)
  # Male: 2/3 of CIEs vs 1/4 of training -> 8/3; Blond: 2/3 vs 1/2 -> 4/3.
  np.testing.assert_allclose(df["relative_representation"], [8 / 3, 4 / 3])
  np.testing.assert_allclose(df["train_share"], [0.25, 0.5])
  np.testing.assert_array_equal(df["cie_count"], [2, 2])
  shares = subgroups.over_indexing(pd.Series({"Male": 0.25, "Blond": 0.5}), test, cie_mask)
  pd.testing.assert_frame_equal(df, shares)
  with pytest.raises(validate.StatsInputError, match="selects no example"):
    subgroups.over_indexing(train, test, np.zeros(5, bool))
  with pytest.raises(validate.StatsInputError, match="missing"):
    subgroups.over_indexing({"Male": np.ones(3)}, test, cie_mask)
