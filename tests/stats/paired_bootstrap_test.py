"""The change of a subgroup's rate between one network and its compressed file, with a paired
bootstrap.

Point values by hand (the indicators are listed in the comments); the intervals are checked by
what a paired resampling implies (seeded, so deterministic) and by coverage over simulated data
sets with a known true change.
"""

import numpy as np
import pytest

from tests import import_check
from tf_forget.stats import paired_bootstrap
from tf_forget.stats import validate


def _table(both, fixed, broken, neither):
  """y, a, b with the given paired 2x2 counts (label 0 right, 1 wrong)."""
  y = np.zeros(both + fixed + broken + neither, dtype=np.int64)
  a = np.array([0] * both + [1] * fixed + [0] * broken + [1] * neither)
  b = np.array([0] * both + [0] * fixed + [1] * broken + [1] * neither)
  return y, a, b


def _simulated_pairs(rng, n, cells):
  """y, a, b with categories (both right, fixed, broken, both wrong) drawn with `cells`."""
  cat = rng.choice(4, size=n, p=cells)
  y = np.zeros(n, dtype=np.int64)
  a = np.isin(cat, (1, 3)).astype(np.int64)
  b = np.isin(cat, (2, 3)).astype(np.int64)
  return y, a, b


# subgroup = the first 8 examples; target 1 positive.
SUB_Y = [1, 1, 1, 1, 0, 0, 0, 0, 1, 0]
SUB_A = [1, 1, 1, 0, 0, 0, 0, 1, 0, 1]
SUB_B = [1, 0, 0, 0, 0, 1, 0, 1, 0, 1]
SUB_MASK = [True] * 8 + [False] * 2


@pytest.mark.parametrize(
  "measure, positive, rate_a, rate_b",
  [
    ("error", 1, 2 / 8, 5 / 8),  # errors a: 3, 7; b: 1, 2, 3, 5, 7
    ("fnr", 1, 1 / 4, 3 / 4),  # positives 0-3; FN a: 3; b: 1, 2, 3
    ("fpr", 1, 1 / 4, 2 / 4),  # negatives 4-7; FP a: 7; b: 5, 7
    ("fnr", 0, 1 / 4, 2 / 4),  # label 0 positive: the FPR of label 1
  ],
)
def test_bootstrap_point_values_by_hand(measure, positive, rate_a, rate_b):
  out = paired_bootstrap.paired_bootstrap_change(
    SUB_Y, SUB_A, SUB_B, SUB_MASK, measure, positive=positive
  )
  assert out["rate_a"] == pytest.approx(rate_a) and out["rate_b"] == pytest.approx(rate_b)
  assert out["change"] == pytest.approx(rate_b - rate_a)
  assert out["low"] <= out["change"] <= out["high"]
  assert out["method"] == "paired_percentile_bootstrap" and out["n_resamples"] == 2000


def test_bootstrap_is_deterministic_given_the_seed():
  run = lambda seed: paired_bootstrap.paired_bootstrap_change(
    SUB_Y, SUB_A, SUB_B, SUB_MASK, "error", n_resamples=3000, seed=seed
  )
  first, again, other = run(7), run(7), run(8)
  assert (first["low"], first["high"]) == (again["low"], again["high"])
  y, a, b = _simulated_pairs(np.random.default_rng(0), 500, (0.8, 0.03, 0.05, 0.12))
  big = [
    paired_bootstrap.paired_bootstrap_change(y, a, b, None, "error", seed=s) for s in (1, 1, 2)
  ]
  assert big[0] == big[1] and (big[0]["low"], big[0]["high"]) != (big[2]["low"], big[2]["high"])
  assert other["change"] == first["change"]


def test_bootstrap_degenerate_and_empty_cases():
  y, a, _ = _table(30, 0, 0, 10)
  same = paired_bootstrap.paired_bootstrap_change(y, a, a, None, "error")
  assert same["change"] == same["low"] == same["high"] == 0.0
  no_pos = paired_bootstrap.paired_bootstrap_change([0, 0, 0], [0, 1, 0], [1, 1, 0], None, "fnr")
  assert no_pos["n"] == 0 and np.isnan(no_pos["change"]) and np.isnan(no_pos["low"])
  one = paired_bootstrap.paired_bootstrap_change([1, 0], [1, 0], [0, 0], None, "fnr")
  assert one["change"] == 1.0 and np.isnan(one["low"])


def test_bootstrap_resamples_pairs_not_sides():
  # 400 examples, a wrong on 80, b = a except 2 more broken: δ = 2/400 = 0.005. Paired, a
  # resample moves only with the 2 discordant examples (δ* = k/400, k ~ Binomial(400, 1/200),
  # 97.5% quantile 5), so the interval lies in [0, 0.0125]; resampling a and b apart would
  # give about ±1.96·sqrt(2·0.2·0.8/400) = ±0.055.
  y = np.zeros(400, dtype=np.int64)
  a = (np.arange(400) < 80).astype(np.int64)
  b = a.copy()
  b[[100, 200]] = 1
  out = paired_bootstrap.paired_bootstrap_change(y, a, b, None, "error", seed=3)
  assert out["change"] == pytest.approx(0.005)
  assert -1e-12 <= out["low"] <= out["change"] <= out["high"] <= 0.0125 + 1e-12


def test_bootstrap_coverage_by_simulation():
  # error rate 0.15 -> 0.20 on a subgroup of 200 examples: true change +0.05.
  cells = (0.78, 0.02, 0.07, 0.13)
  rng = np.random.default_rng(2028)
  hits = 0
  for sim in range(200):
    y, a, b = _simulated_pairs(rng, 400, cells)
    mask = np.arange(400) % 2 == 0
    out = paired_bootstrap.paired_bootstrap_change(y, a, b, mask, "error", seed=sim)
    hits += out["low"] <= 0.05 <= out["high"]
  assert hits / 200 >= 0.90


@pytest.mark.parametrize(
  "call",
  [
    lambda: paired_bootstrap.paired_bootstrap_change(
      [0, 1], [0, 1], [0, 1], None, "error", n_resamples=1999
    ),
    lambda: paired_bootstrap.paired_bootstrap_change([0, 1], [0, 1], [0, 1], None, "recall"),
    lambda: paired_bootstrap.paired_bootstrap_change(
      [0, 1], [0, 1], [0, 1], None, "fnr", positive=-1
    ),
    lambda: paired_bootstrap.paired_bootstrap_change(
      [0, 1], [0, 1], [0, 1], None, "error", confidence=1.0
    ),
    lambda: paired_bootstrap.paired_bootstrap_change([0, 1], [0, 1], [0, 1, 1], None, "error"),
  ],
)
def test_bad_input_is_a_one_line_value_error(call):
  with pytest.raises(ValueError) as err:
    call()
  assert isinstance(err.value, validate.StatsInputError) and "\n" not in str(err.value)


def test_imports_without_tensorflow():
  imports = "import tf_forget.stats\nimport tf_forget.stats.paired_bootstrap"
  assert import_check.foreign_modules(imports, "tf_forget.stats") == ""
