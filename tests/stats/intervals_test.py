"""Confidence intervals of a mean difference against hand-computed values.

Golden values by hand: means, sample variances and Welch's degrees of freedom computed in the
comments below; t quantiles from a printed t table (t_{0.975, 4} = 2.776, t_{0.975, 2} =
4.303, t_{0.995, 2} = 9.925), not from scipy.
"""

import numpy as np
import pytest

from tf_forget.stats import intervals
from tf_forget.stats import validate

DENSE = [0.90, 0.92, 0.91]  # mean 0.91, sample variance 0.0001
COMPRESSED = [0.95, 0.96, 0.94]  # mean 0.95, sample variance 0.0001


def test_welch_interval_by_hand():
  # SE = sqrt(1e-4/3 + 1e-4/3) = 0.0081650; Welch df = (2e-4/3)^2 / (2 (1e-4/3)^2 / 2) = 4.
  out = intervals.mean_difference_interval(DENSE, COMPRESSED)
  half = 2.776 * 0.0081650
  assert out["method"] == "welch" and out["n_0"] == out["n_t"] == 3
  assert out["difference"] == pytest.approx(0.04)
  assert out["low"] == pytest.approx(0.04 - half, abs=2e-5)
  assert out["high"] == pytest.approx(0.04 + half, abs=2e-5)
  assert out["spread"] == pytest.approx(0.01)


def test_paired_interval_by_hand():
  # differences 0.05, 0.04, 0.03: mean 0.04, SD 0.01, SE 0.0057735, df 2.
  out = intervals.mean_difference_interval(DENSE, COMPRESSED, paired=True)
  assert out["method"] == "paired"
  assert out["low"] == pytest.approx(0.04 - 4.303 * 0.0057735, abs=2e-5)
  assert out["high"] == pytest.approx(0.04 + 4.303 * 0.0057735, abs=2e-5)
  wide = intervals.mean_difference_interval(DENSE, COMPRESSED, paired=True, confidence=0.99)
  assert wide["low"] == pytest.approx(0.04 - 9.925 * 0.0057735, abs=2e-4)


def test_sign_is_compressed_minus_dense():
  out = intervals.mean_difference_interval(COMPRESSED, DENSE)
  assert out["difference"] == pytest.approx(-0.04) and out["high"] < 0


def test_identical_pairs_give_a_point_and_zero_spread():
  acc = [0.1 + 0.7, 0.8, 0.8000000000000002]  # rounding noise only
  out = intervals.mean_difference_interval(acc, acc, paired=True)
  assert out["low"] == out["high"] == out["difference"] == 0.0 and out["spread"] == 0.0
  out = intervals.mean_difference_interval([0.9] * 3, [0.7 + 0.2] * 3)
  assert out["spread"] == 0.0 and out["low"] == out["high"] == pytest.approx(0.0, abs=1e-15)


def test_undefined_cases_are_nan():
  one = intervals.mean_difference_interval([0.9], [0.8, 0.7])
  assert one["difference"] == pytest.approx(-0.15) and np.isnan(one["low"])
  empty = intervals.mean_difference_interval([np.nan, np.nan], [0.8, 0.7])
  assert np.isnan(empty["difference"]) and empty["n_0"] == 0
  # a NaN rate (no positives in a subgroup for one member) drops that pair only.
  out = intervals.mean_difference_interval(
    [0.1, np.nan, 0.3, 0.2], [0.2, 0.5, 0.5, 0.3], paired=True
  )
  assert out["n_0"] == 3 and out["difference"] == pytest.approx((0.1 + 0.2 + 0.1) / 3)


@pytest.mark.parametrize(
  "kwargs",
  [
    {"values_0": [[0.1, 0.2]], "values_t": [0.1, 0.2]},
    {"values_0": [0.1, 0.2], "values_t": [0.1], "paired": True},
    {"values_0": [0.1, 0.2], "values_t": [0.1, 0.3], "confidence": 1.0},
  ],
)
def test_bad_input_is_a_one_line_error(kwargs):
  with pytest.raises(validate.StatsInputError):
    intervals.mean_difference_interval(**kwargs)


def test_mean_interval_by_hand():
  # mean 0.91, SD 0.01, SE 0.0057735, t_{0.975, 2} = 4.303.
  out = intervals.mean_interval(DENSE)
  assert out["mean"] == pytest.approx(0.91) and out["n"] == 3
  assert out["low"] == pytest.approx(0.91 - 4.303 * 0.0057735, abs=2e-5)
  assert out["high"] == pytest.approx(0.91 + 4.303 * 0.0057735, abs=2e-5)
  assert np.isnan(intervals.mean_interval([0.5])["low"])
  flat = intervals.mean_interval([0.8, 0.8])
  assert flat["low"] == flat["high"] == 0.8


def test_bounds_clip_the_interval_to_possible_differences():
  f0, ft = [0.0, 0.05, 0.0, 0.1], [1.0, 1.0, 1.0, 1.0]  # a rate that went to 1
  free = intervals.mean_difference_interval(f0, ft)
  assert free["high"] > 1  # the t interval reaches past +100 points
  clipped = intervals.mean_difference_interval(f0, ft, bounds=(0, 1))
  assert clipped["high"] == 1.0 and clipped["low"] == free["low"]
  assert clipped["difference"] == free["difference"]
