"""stats.representation: the ratio of two proportions, its interval and Fisher's p (000 Table 7).

Goldens are computed here by hand, independently of scipy's `relative_risk` / `fisher_exact`:
the Katz log interval exp(log r ± z·sqrt(1/x1 − 1/n1 + 1/x0 − 1/n0)) (Katz et al. 1978), its
+0.5 adjustment where a count is 0 (Pettigrew, Gart & Thomas 1986), z from the standard
library's `statistics.NormalDist`, Fisher's two-sided p summed over hypergeometric
probabilities from `math.comb`, and Wilson's score interval of each share (Wilson 1927).
"""

import math
import statistics

import pytest

from tf_forget.stats import representation
from tf_forget.stats import validate

Z95 = statistics.NormalDist().inv_cdf(0.975)


def katz(x1, n1, x0, n0, z=Z95, add=0.0):
  a, b, c, d = x1 + add, n1 + add, x0 + add, n0 + add
  r = (a / b) / (c / d)
  se = math.sqrt(1 / a - 1 / b + 1 / c - 1 / d)
  return r * math.exp(-z * se), r * math.exp(z * se)


def wilson(x, n, z=Z95):
  p = x / n
  centre = (p + z * z / (2 * n)) / (1 + z * z / n)
  half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
  return centre - half, centre + half


def fisher_two_sided(x1, n1, x0, n0):
  """Sum of the hypergeometric probabilities of tables no more likely than the observed."""
  k, n = x1 + x0, n1 + n0

  def prob(a):
    return math.comb(k, a) * math.comb(n - k, n1 - a) / math.comb(n, n1)

  observed = prob(x1)
  return min(
    1.0,
    sum(prob(a) for a in range(max(0, k - n0), min(k, n1) + 1) if prob(a) <= observed * (1 + 1e-7)),
  )


@pytest.mark.parametrize(
  "x1,n1,x0,n0",
  [
    (32, 40, 4, 40),
    (9, 40, 16, 40),
    (59, 100, 39, 100),
    (7, 12, 3, 30),
    (40, 40, 40, 40),
    (1, 615, 2, 615),
  ],
)
def test_katz_interval_and_fisher_match_the_hand_formulas(x1, n1, x0, n0):
  out = representation.relative_representation(x1, n1, x0, n0)
  low, high = katz(x1, n1, x0, n0)
  assert out["method"] == representation.KATZ
  assert out["ratio"] == pytest.approx((x1 / n1) / (x0 / n0), rel=1e-12)
  assert (out["low"], out["high"]) == pytest.approx((low, high), rel=1e-9)
  assert out["share_1"] == x1 / n1 and out["share_0"] == x0 / n0
  assert out["p_value"] == pytest.approx(fisher_two_sided(x1, n1, x0, n0), rel=1e-6)
  assert out["low"] <= out["ratio"] <= out["high"]
  assert (out["share_1_low"], out["share_1_high"]) == pytest.approx(wilson(x1, n1), abs=1e-12)
  assert (out["share_0_low"], out["share_0_high"]) == pytest.approx(wilson(x0, n0), abs=1e-12)


def test_000_fine_grained_shares_give_their_ratio():
  # 000 §3.3: fine-grained in 43.55% of PIEs, 8.9% of non-PIEs; on 615 per group (1230 images
  # in a balanced sample) that is 268 and 55 images: ratio 268/55 = 4.87, far above 1.
  out = representation.relative_representation(268, 615, 55, 615)
  assert out["ratio"] == pytest.approx(268 / 55)
  assert out["low"] > 3.5 and out["high"] < 6.5 and out["p_value"] < 1e-30


def test_other_confidence_level():
  out = representation.relative_representation(20, 50, 10, 50, confidence=0.9)
  assert (out["low"], out["high"]) == pytest.approx(
    katz(20, 50, 10, 50, z=statistics.NormalDist().inv_cdf(0.95)), rel=1e-9
  )


@pytest.mark.parametrize("x1,x0,ratio", [(18, 0, math.inf), (0, 5, 0.0)])
def test_a_zero_count_uses_the_adjusted_interval(x1, x0, ratio):
  out = representation.relative_representation(x1, 40, x0, 40)
  assert out["method"] == representation.KATZ_ADJUSTED
  assert out["ratio"] == ratio
  assert (out["low"], out["high"]) == pytest.approx(katz(x1, 40, x0, 40, add=0.5), rel=1e-9)
  assert out["p_value"] == pytest.approx(fisher_two_sided(x1, 40, x0, 40), rel=1e-6)


def test_never_coded_is_undefined():
  out = representation.relative_representation(0, 40, 0, 40)
  assert out["method"] == representation.UNDEFINED
  assert all(math.isnan(out[k]) for k in ("ratio", "low", "high"))
  assert out["p_value"] == 1.0


@pytest.mark.parametrize(
  "args,message",
  [
    ((5, 0, 1, 10), "n_1 must be >= 1"),
    ((11, 10, 1, 10), "count_1 = 11 exceeds n_1 = 10"),
    ((1.5, 10, 1, 10), "whole number"),
    ((-1, 10, 1, 10), "whole number >= 0"),
    (("a", 10, 1, 10), "whole number"),
    ((1, 10, 1, 10, 1.0), "confidence"),
  ],
)
def test_bad_counts_are_one_line_errors(args, message):
  with pytest.raises(validate.StatsInputError, match=message) as e:
    representation.relative_representation(*args)
  assert "\n" not in str(e.value)
