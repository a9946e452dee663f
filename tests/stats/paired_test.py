"""Paired per-example measures of one network against its compressed file.

Golden values by hand: binomial tail sums written out in the comments; Wilson limits from the
closed form (p + z²/2n ± z·sqrt(p(1 − p)/n + z²/4n²)) / (1 + z²/n) with the printed normal
quantile z_{0.975} = 1.959964, then Newcombe's method-10 formula (Newcombe 1998, Statistics in
Medicine 17:2635) by hand; BH adjusted p-values by the step-up rule by hand. The coverage checks
simulate data sets with a known true difference (seeded, so they are deterministic).
"""

import numpy as np
import pytest

from tests import import_check
from tf_forget.stats import paired
from tf_forget.stats import validate


def _table(both, fixed, broken, neither):
  """y, a, b with the given paired 2x2 counts (label 0 right, 1 wrong)."""
  y = np.zeros(both + fixed + broken + neither, dtype=np.int64)
  a = np.array([0] * both + [1] * fixed + [0] * broken + [1] * neither)
  b = np.array([0] * both + [0] * fixed + [1] * broken + [1] * neither)
  return y, a, b


# example:  0  1  2  3  4  5  6  7
Y = [0, 1, 2, 3, 4, 5, 6, 7]
A = [0, 1, 9, 3, 0, 5, 1, 2]
B = [0, 9, 2, 3, 1, 0, 1, 3]
# 0 both right: unchanged   1 a right, b wrong: broken   2 a wrong, b right: fixed
# 3 both right: unchanged   4 both wrong, 0 vs 1: changed  5 broken
# 6 both wrong with the same label 1: unchanged            7 both wrong, 2 vs 3: changed


def test_flips_categories_on_a_planted_example():
  f = paired.flips(Y, A, B)
  assert f.broken.tolist() == [0, 1, 0, 0, 0, 1, 0, 0]
  assert f.fixed.tolist() == [0, 0, 1, 0, 0, 0, 0, 0]
  assert f.changed.tolist() == [0, 0, 0, 0, 1, 0, 0, 1]
  assert f.unchanged.tolist() == [1, 0, 0, 1, 0, 0, 1, 0]
  assert f.counts == {"broken": 2, "fixed": 1, "changed": 2, "unchanged": 3, "n": 8}


def test_flips_with_a_mask_keeps_test_set_indices():
  mask = [True, True, True, True, True, False, True, False]  # drops a broken and a changed
  f = paired.flips(Y, A, B, mask=mask)
  assert f.counts == {"broken": 1, "fixed": 1, "changed": 1, "unchanged": 3, "n": 6}
  assert f.broken.tolist() == [0, 1, 0, 0, 0, 0, 0, 0] and not f.changed[7]


@pytest.mark.parametrize(
  "both, fixed, broken, neither, p",
  [
    # n01 = 3, n10 = 1: p = 2·P(X ≤ 1 | 4, 1/2) = 2·(1 + 4)/16 = 0.625
    (5, 1, 3, 2, 0.625),
    # n01 = 5, n10 = 0: p = 2·P(X ≤ 0 | 5, 1/2) = 2/32 = 0.0625
    (10, 0, 5, 0, 0.0625),
    # n01 = 2, n10 = 9: p = 2·(1 + 11 + 55)/2048 = 134/2048 = 0.0654296875
    (3, 9, 2, 1, 134 / 2048),
    # n01 = n10 = 2: p = min(1, 2·(1 + 4 + 6)/16) = 1
    (1, 2, 2, 0, 1.0),
    # no discordant pair: p = 1 by definition
    (7, 0, 0, 3, 1.0),
  ],
)
def test_mcnemar_exact_by_hand(both, fixed, broken, neither, p):
  out = paired.mcnemar_exact(*_table(both, fixed, broken, neither))
  assert out["broken"] == broken and out["fixed"] == fixed
  assert out["discordant"] == broken + fixed and out["statistic"] == min(broken, fixed)
  assert out["n"] == both + fixed + broken + neither
  assert out["p_value"] == pytest.approx(p, rel=1e-12)


def test_mcnemar_counts_top1_correctness_not_label_changes():
  out = paired.mcnemar_exact(Y, A, B)  # the two "changed" examples are wrong on both sides
  assert (out["broken"], out["fixed"]) == (2, 1)
  assert out["p_value"] == pytest.approx(1.0)  # 2·P(X ≤ 1 | 3) = 2·4/8 = 1


def test_newcombe_interval_by_hand_positive_correlation():
  # 2x2 of Altman et al. (2000) Table 6.2 with b as the row method: both right r = 14,
  # fixed s = 5, broken t = 0, both wrong u = 22, n = 41.
  # p_b = 19/41 = 0.463415, p_a = 14/41 = 0.341463, Δ = 5/41 = 0.121951.
  # Wilson(19, 41) = (0.320562, 0.612535); Wilson(14, 41) = (0.215588, 0.494502).
  # A = ru − st = 308 > n/2 ⇒ φ = (308 − 20.5) / sqrt(19·22·14·27) = 0.723276.
  # L = Δ − sqrt(0.142852² − 2φ·0.142852·0.153038 + 0.153038²) = 0.011483
  # U = Δ + sqrt(0.125875² − 2φ·0.125875·0.149121 + 0.149121²) = 0.226493
  out = paired.paired_accuracy_difference(*_table(14, 5, 0, 22))
  assert out["method"] == "newcombe_hybrid_score" and out["n"] == 41
  assert out["difference"] == pytest.approx(5 / 41)
  assert out["accuracy_b"] == pytest.approx(19 / 41)
  assert out["accuracy_a"] == pytest.approx(14 / 41)
  assert out["low"] == pytest.approx(0.011483, abs=2e-6)
  assert out["high"] == pytest.approx(0.226493, abs=2e-6)


def test_newcombe_interval_by_hand_negative_correlation():
  # r = 36, s = 12, t = 2, u = 0, n = 50: p_b = 0.96, p_a = 0.76, Δ = 0.2.
  # Wilson(48, 50) = (0.865399, 0.988961); Wilson(38, 50) = (0.625873, 0.857026).
  # A = 0 − 24 < 0 ⇒ φ = −24 / sqrt(48·2·38·12) = −0.114708.
  # L = 0.2 − sqrt(0.094601² + 2·0.114708·0.094601·0.097026 + 0.097026²) = 0.056930
  # U = 0.2 + sqrt(0.134127² + 2·0.114708·0.134127·0.028961 + 0.028961²) = 0.340428
  out = paired.paired_accuracy_difference(*_table(36, 12, 2, 0))
  assert out["low"] == pytest.approx(0.056930, abs=2e-6)
  assert out["high"] == pytest.approx(0.340428, abs=2e-6)


def test_newcombe_interval_by_hand_small_correlation_is_zero():
  # r = 2, s = 1, t = 1, u = 1, n = 5: A = 2 − 1 = 1 ≤ n/2 ⇒ φ = 0; p_b = p_a = 0.6.
  # Wilson(3, 5) = (0.230724, 0.882379) ⇒ half-width sqrt(0.369276² + 0.282379²) = 0.464868.
  out = paired.paired_accuracy_difference(*_table(2, 1, 1, 1))
  assert out["difference"] == 0.0
  assert out["low"] == pytest.approx(-0.464868, abs=2e-6)
  assert out["high"] == pytest.approx(0.464868, abs=2e-6)


def test_no_discordant_pair_still_gives_an_interval():
  # all 20 right on both sides: Wilson(20, 20) = (20 / (20 + z²), 1) = (0.838875, 1);
  # φ = 0 (empty margins) ⇒ (−(1 − 0.838875), 1 − 0.838875).
  out = paired.paired_accuracy_difference(*_table(20, 0, 0, 0))
  assert out["difference"] == 0.0
  assert out["low"] == pytest.approx(-0.161125, abs=2e-6)
  assert out["high"] == pytest.approx(0.161125, abs=2e-6)


def test_paired_accuracy_difference_mask_and_empty_selection():
  y, a, b = _table(36, 12, 2, 0)
  masked = paired.paired_accuracy_difference(y, a, b, mask=np.arange(50) < 48)  # no broken
  assert masked["n"] == 48 and masked["broken"] == 0 and masked["fixed"] == 12
  empty = paired.paired_accuracy_difference(y, a, b, mask=np.zeros(50, dtype=bool))
  assert empty["n"] == 0 and np.isnan(empty["difference"]) and np.isnan(empty["low"])


def _simulated_pairs(rng, n, cells):
  """y, a, b with categories (both right, fixed, broken, both wrong) drawn with `cells`."""
  cat = rng.choice(4, size=n, p=cells)
  y = np.zeros(n, dtype=np.int64)
  a = np.isin(cat, (1, 3)).astype(np.int64)
  b = np.isin(cat, (2, 3)).astype(np.int64)
  return y, a, b


@pytest.mark.parametrize(
  "cells, n",
  [
    ((0.80, 0.03, 0.05, 0.12), 300),  # acc 0.85 -> 0.83, true difference −0.02
    # acc 0.95 -> 0.94 (a typical int8 file), true −0.01. At n = 300 (about 9 discordant
    # pairs) the interval is conservative: coverage 0.970 over 4000 simulations, so a band
    # check with 400 would be decided by the draw; at n = 1000 it is 0.953.
    ((0.93, 0.01, 0.02, 0.04), 1000),
  ],
)
def test_newcombe_interval_coverage_by_simulation(cells, n):
  rng = np.random.default_rng(28)
  truth = cells[1] - cells[2]
  hits = 0
  for _ in range(400):
    out = paired.paired_accuracy_difference(*_simulated_pairs(rng, n, cells))
    hits += out["low"] <= truth <= out["high"]
  assert 0.92 <= hits / 400 <= 0.98


def test_per_class_recall_change_with_bh_by_hand():
  # class 0: 5 broken                         -> p = 2/2^5 = 0.0625, change −1
  # class 1: 6 broken                         -> p = 2/2^6 = 0.03125, change −1
  # class 2: 1 broken, 1 fixed, 2 both right  -> p = 1, change 0
  # class 3: 8 broken, 2 both right           -> p = 2/2^8 = 0.0078125, change −0.8
  # class 4: no example                       -> NaN, outside the BH family (m = 4)
  # BH, m = 4, sorted p (rank): 0.0078125 (1), 0.03125 (2), 0.0625 (3), 1 (4);
  # m·p/rank = 0.03125, 0.0625, 0.083333, 1; running min from the top keeps them.
  y = [0] * 5 + [1] * 6 + [2] * 4 + [3] * 10
  a = [0] * 5 + [1] * 6 + [2, 0, 2, 2] + [3] * 10
  b = [1] * 5 + [0] * 6 + [0, 2, 2, 2] + [0] * 8 + [3] * 2
  out = paired.per_class_recall_change(y, a, b, num_classes=5, alpha=0.05)
  assert out["n"].tolist() == [5, 6, 4, 10, 0] and out["num_tests"] == 4
  assert out["broken"].tolist() == [5, 6, 1, 8, 0] and out["fixed"].tolist() == [0, 0, 1, 0, 0]
  np.testing.assert_allclose(out["change"][:4], [-1, -1, 0, -0.8])
  np.testing.assert_allclose(out["recall_a"][:4], [1, 1, 0.75, 1])
  np.testing.assert_allclose(out["p_value"][:4], [0.0625, 0.03125, 1, 0.0078125])
  np.testing.assert_allclose(out["p_adjusted"][:4], [0.25 / 3, 0.0625, 1, 0.03125])
  # class 1 (raw p 0.031) is significant only before the adjustment; class 3 after it.
  assert out["significant"].tolist() == [False, False, False, True, False]
  assert np.isnan(out["change"][4]) and np.isnan(out["p_value"][4])
  assert np.isnan(out["p_adjusted"][4]) and np.isnan(out["low"][4])
  assert np.all(out["low"][:4] <= out["change"][:4])
  assert np.all(out["change"][:4] <= out["high"][:4])


@pytest.mark.parametrize(
  "call",
  [
    lambda: paired.flips([0, 1, 2], [0, 1], [0, 1, 2]),  # length mismatch
    lambda: paired.mcnemar_exact([0, 1], [0, 1], [0, 1, 1]),
    lambda: paired.flips([0, -1], [0, 1], [0, 1]),  # negative label
    lambda: paired.paired_accuracy_difference([0, 1], [0, -2], [0, 1]),
    lambda: paired.flips([[0, 1]], [[0, 1]], [[0, 1]]),  # not 1-D
    lambda: paired.flips([0, 1], [0, 1], [0, 1], mask=[True]),  # mask length
    lambda: paired.flips([0, 1], [0, 1], [0, 1], mask=[0, 2]),  # mask not boolean
    lambda: paired.paired_accuracy_difference([0, 1], [0, 1], [0, 1], confidence=1.0),
    lambda: paired.per_class_recall_change([0, 3], [0, 1], [0, 1], num_classes=3),
    lambda: paired.per_class_recall_change([0, 1], [0, 1], [0, 1], num_classes=2, alpha=0),
  ],
)
def test_bad_input_is_a_one_line_value_error(call):
  with pytest.raises(ValueError) as err:
    call()
  assert isinstance(err.value, validate.StatsInputError) and "\n" not in str(err.value)


def test_imports_without_tensorflow():
  imports = "import tf_forget.stats\nimport tf_forget.stats.paired"
  assert import_check.foreign_modules(imports, "tf_forget.stats") == ""
