"""The output-divergence tables (tf_forget/report/divergence_report.py): their
numbers on planted runs whose logits make every number a hand computation.

The planted runs and the hand values KL_RU, KL_RR, KL_UR and Δp (U's arg max is class 0,
docs/spec.md §1.2) are those of `tests/report/divergence_run.py`, whose docstring derives them: the
one-pair example-level numbers, intervals over several pairs with pooled percentiles, the
pairing labels and references, classes and examples, a variant without logits, and subgroups
of the protected attributes. Intervals and percentiles are recomputed here from the planted
value vectors with numpy / scipy (`t.ppf`, `np.percentile`), not the stats library.
"""

import math

import numpy as np
import pytest
from scipy import stats

from tests.report import divergence_run
from tests.report.divergence_run import biased  # noqa: F401
from tests.report.divergence_run import population  # noqa: F401
from tests.report.divergence_run import single  # noqa: F401
from tf_forget.stats import subgroups

LN3 = divergence_run.LN3
KL_RU, KL_RR, KL_UR = divergence_run.KL_RU, divergence_run.KL_RR, divergence_run.KL_UR
DP_RR, DP_RU, DP_UR, DP_UZ = (
  divergence_run.DP_RR,
  divergence_run.DP_RU,
  divergence_run.DP_UR,
  divergence_run.DP_UZ,
)
REL = divergence_run.REL


def test_hand_values_match_the_definition():
  # The constants above, from their softmax rows directly.
  def kl(a, b):
    p, q = np.exp(a) / np.exp(a).sum(), np.exp(b) / np.exp(b).sum()
    return float(np.sum(p * np.log(p / q)))

  r, u, r8 = np.eye(10)[3] * LN3, np.zeros(10), np.eye(10)[8] * LN3
  assert kl(r, u) == pytest.approx(KL_RU, rel=1e-12)
  assert kl(r, r8) == pytest.approx(KL_RR, rel=1e-12)
  assert kl(u, r8) == pytest.approx(KL_UR, rel=1e-12)
  assert (KL_RU, KL_RR, KL_UR) == pytest.approx((0.0923315, 0.1831020, 0.0724603), abs=1e-7)


def test_one_pair_example_level_numbers(single):
  top = single["tables"]["divergence"]
  int8 = divergence_run.row(top, "full_int8")
  # KL: 20 × KL_RR (Q), 10 × KL_UR (S0), 470 zeros; interval over the 500 examples.
  kl = np.r_[[KL_RR] * 20, [KL_UR] * 10, [0.0] * 470]
  mean, low, high = divergence_run.t_interval(kl)
  assert mean == pytest.approx((20 * KL_RR + 10 * KL_UR) / 500, rel=1e-12)
  assert (int8.kl_mean, int8.kl_low, int8.kl_high) == pytest.approx((mean, low, high), rel=REL)
  # Sorted: zeros at 0..469, KL_UR at 470..479, KL_RR at 480..499; p99 at h = 0.99 · 499.
  assert (int8.kl_p50, int8.kl_p90) == (0.0, 0.0)
  assert (int8.kl_p99, int8.kl_max) == pytest.approx((KL_RR, KL_RR), rel=REL)
  # Δp: 20 × −1/6 (Q), 5 × +0.15 (S0 fixed), 5 × −1/60 (S0 changed), 470 zeros.
  dp = np.r_[[DP_RR] * 20, [DP_UR] * 5, [DP_UZ] * 5, [0.0] * 470]
  mean, low, high = divergence_run.t_interval(dp)
  assert (int8.delta_p_mean, int8.delta_p_low, int8.delta_p_high) == pytest.approx(
    (mean, low, high), rel=REL
  )
  # min / p1 (h = 4.99) in the −1/6 block; p10 (h = 49.9) and p50 / p90 zero; p99 (h = 494.01)
  # interpolates 0 → 0.15 at 0.01: 0.0015.
  assert (int8.delta_p_min, int8.delta_p_p1) == pytest.approx((-1 / 6, -1 / 6), rel=REL)
  assert (int8.delta_p_p10, int8.delta_p_p50, int8.delta_p_p90) == (0.0, 0.0, 0.0)
  assert int8.delta_p_p99 == pytest.approx(0.01 * DP_UR, rel=1e-5)
  for q in (1, 10, 50, 90, 99):
    assert int8[f"delta_p_p{q}"] == pytest.approx(np.percentile(dp, q), rel=1e-5, abs=1e-12)
  assert (int8.broken, int8.fixed, int8.changed) == (20, 5, 5)
  assert int8.flip_rate == pytest.approx(30 / 500) and int8.agreement == pytest.approx(0.94)
  assert (int8.design, int8.pairs, int8.n, int8.pair_members) == ("examples", 1, 500, "0→0")
  # 10 × KL_RU, Δp −0.15, broken (U's arg max is 0, y = 7)
  prune = divergence_run.row(top, "prune_0.9")
  assert prune.kl_mean == pytest.approx(10 * KL_RU / 500, rel=REL)
  assert prune.delta_p_mean == pytest.approx(10 * DP_RU / 500, rel=REL)
  assert (prune.broken, prune.fixed, prune.changed, prune.flip_rate) == (10, 0, 0, 0.02)
  assert "dense (independent)" not in set(top.variant)  # one dense member: no baseline


def test_several_pairs_interval_over_pairs_percentiles_pooled(population):
  top = population["tables"]["divergence"]
  int8 = divergence_run.row(top, "full_int8")
  # Pair 0→0: 20 × KL_RR; pair 1→1: 20 × KL_RR + 5 × KL_RU (rows shuffled on disk).
  means = [20 * KL_RR / 500, (20 * KL_RR + 5 * KL_RU) / 500]
  # t_{0.975, 1} = 12.706 over the two pair means
  mean, low, high = divergence_run.t_interval(means)
  assert high - mean == pytest.approx(stats.t.ppf(0.975, 1) * (5 * KL_RU / 500) / 2)
  assert (int8.kl_mean, int8.kl_low, int8.kl_high) == pytest.approx((mean, low, high), rel=REL)
  # Pooled 1,000: zeros 0..954, KL_RU 955..959, KL_RR 960..999 (p99 at h = 989.01).
  assert (int8.kl_p50, int8.kl_p90) == (0.0, 0.0)
  assert (int8.kl_p99, int8.kl_max) == pytest.approx((KL_RR, KL_RR), rel=REL)
  dp_means = [20 * DP_RR / 500, (20 * DP_RR + 5 * DP_RU) / 500]
  assert (int8.delta_p_mean, int8.delta_p_low, int8.delta_p_high) == pytest.approx(
    divergence_run.t_interval(dp_means), rel=REL
  )
  # Pooled Δp: 40 × −1/6 at 0..39, 5 × −0.15, then zeros: p1 (h = 9.99) −1/6, p10 (99.9) 0.
  assert (int8.delta_p_min, int8.delta_p_p1, int8.delta_p_p10) == pytest.approx(
    (-1 / 6, -1 / 6, 0.0), rel=REL
  )
  assert (int8.broken, int8.fixed, int8.changed) == (45, 0, 0)  # summed over the pairs
  assert int8.flip_rate == pytest.approx(45 / 1000)
  assert (int8.design, int8.pairs, int8.n) == ("pairs", 2, 500)
  prune = divergence_run.row(top, "prune_0.9")
  # Pair 0→0: 10 × KL_RU (P, broken); pair 1→1 also 10 × KL_UR (S1: dense/1 is U, fixed).
  assert prune.kl_mean == pytest.approx((20 * KL_RU + 10 * KL_UR) / 1000, rel=REL)
  _, low, high = divergence_run.t_interval([10 * KL_RU / 500, (10 * KL_RU + 10 * KL_UR) / 500])
  assert low < 0 and (prune.kl_low, prune.kl_high) == pytest.approx((0.0, high), rel=REL)
  assert (prune.broken, prune.fixed, prune.flip_rate) == (20, 10, 0.03)


def test_pairing_labels_and_references(population, single):
  top = population["tables"]["divergence"].set_index("variant")
  assert top.loc["full_int8", "pairing"] == "index (same network)"
  assert top.loc["full_int8", "reference"] == "same network"
  assert top.loc["prune_0.9", "pairing"] == "index (independent members)"
  assert top.loc["prune_0.9", "reference"] == "independent member k"
  # One-shot members pair with the parent their metadata names (dense 1 − k): pair 1→0 has
  # S1 (KL_UR, fixed), pair 0→1 has Q3 (KL_RR, broken); by index both would sit in pair 1→1.
  one = top.loc["oneshot_mp_r2"]
  assert (one.pairing, one.reference, one.pair_members) == ("parent", "same network", "1→0, 0→1")
  assert one.kl_mean == pytest.approx((10 * KL_UR / 500 + 5 * KL_RR / 500) / 2, rel=REL)
  assert (one.broken, one.fixed) == (5, 10)
  examples = population["tables"]["divergence_examples"]
  ex = examples[examples.variant == "oneshot_mp_r2"]
  ids = population["run"].eval["dense"].ids
  assert list(ex.id[:5]) == list(ids[population["sets"]["Q3"]])  # KL_RR first, by position
  assert set(ex.id[5:]) == set(ids[population["sets"]["S1"]]) and len(ex) == 15
  s1 = ex[ex.kl < 0.1]
  assert (s1.k_dense == 1).all() and (s1.k_variant == 0).all() and (s1.kind == "fixed").all()
  assert (s1.reference_prediction == 0).all() and (s1.candidate_prediction == 5).all()
  assert s1.kl.to_numpy() == pytest.approx(KL_UR, rel=REL)
  # The yardstick: dense k against dense k + 1 (mod 2).
  base = top.loc["dense (independent)"]
  assert (base.pair_members, base.broken, base.fixed) == ("1→0, 0→1", 10, 10)
  assert base.kl_mean == pytest.approx((10 * KL_UR + 10 * KL_RU) / 1000, rel=REL)
  one_pair = single["tables"]["divergence"].set_index("variant")
  assert one_pair.loc["prune_0.9", "reference"] == "independent member 0"


def test_classes_and_examples(population):
  classes = population["tables"]["divergence_classes"]
  int8 = classes[classes.variant == "full_int8"].set_index("class")
  assert len(int8) == 10 and (int8.n == 50).all() and (int8.design == "pairs").all()
  c3 = int8.loc[3]  # both pairs: 20 × KL_RR of 50; the two pair means equal: zero width
  assert (c3.kl_mean, c3.kl_low, c3.kl_high) == pytest.approx((0.4 * KL_RR,) * 3, rel=REL)
  assert c3.kl_p90 == pytest.approx(KL_RR, rel=REL)  # pooled 100: 60 zeros, 40 × KL_RR
  assert c3.delta_p_mean == pytest.approx(0.4 * DP_RR, rel=REL)
  assert c3.delta_p_p10 == pytest.approx(DP_RR, rel=REL) and c3.flip_rate == 0.4
  c4 = int8.loc[4]  # pair means 0 and 5 × KL_RU / 50; the t interval clipped at KL = 0
  mean, low, high = divergence_run.t_interval([0.0, 0.1 * KL_RU])
  assert low < 0 and (c4.kl_mean, c4.kl_low, c4.kl_high) == pytest.approx((mean, 0, high), rel=REL)
  assert c4.flip_rate == pytest.approx(0.05)
  assert (int8.loc[0, ["kl_mean", "flip_rate"]] == 0).all()
  examples = population["tables"]["divergence_examples"]
  ex = examples[examples.variant == "full_int8"]
  ids = population["run"].eval["dense"].ids
  assert list(ex.id) == list(ids[population["sets"]["Q"]]) + list(ids[population["sets"]["Q2"]])
  assert list(ex["rank"]) == list(range(1, 26))
  q = ex.iloc[:20]  # KL_RR in both pairs: the first pair (0→0) shown
  assert (q.kind == "broken").all() and (q.k_dense == 0).all()
  assert (q.reference_prediction == 3).all() and (q.candidate_prediction == 8).all()
  assert q.delta_p.to_numpy() == pytest.approx(DP_RR, rel=REL)
  assert (ex.iloc[20:].k_variant == 1).all()  # Q2 only diverges in pair 1→1


def test_a_variant_without_logits_is_a_note_not_a_row(population, single):
  for case in (population, single):
    tables = case["tables"]
    assert "float16" not in set(tables["divergence"].variant)
    assert "float16" not in set(tables["divergence_classes"].variant)
  notes = [n for n in population["notes"] if n.startswith("float16:")]
  assert notes == [
    "float16: no saved logits in float16/0, float16/1 (predictions without "
    "logits); no output divergence"
  ]
  assert any(
    n.startswith("float16: no saved logits") for n in single["report"].json["notes"]["divergence"]
  )


def test_subgroups_of_the_protected_attributes(biased):
  # C = 2: R(y) is p_y = 3/4; U is 1/2 each. KL(R ‖ U) = 3/4 ln(3/2) + 1/4 ln(1/2), Δp = −1/4,
  # each planted positive broken (U's arg max is class 0).
  kl_ru2 = 0.75 * math.log(1.5) + 0.25 * math.log(0.5)
  masks = subgroups.subgroup_masks(biased["attributes"], biased["n"], ("Inverted", "Faint"))
  table = biased["tables"]["divergence_subgroups"]
  assert list(table.subgroup) == list(masks)
  hit = np.zeros(biased["n"], bool)
  hit[biased["planted"]] = True
  for name, mask in masks.items():
    row = divergence_run.row(table[table.subgroup == name], "prune_0.9")
    values = np.where(hit, kl_ru2, 0.0)[mask]
    assert row.n == mask.sum()
    assert row.kl_mean == pytest.approx(values.mean(), rel=REL, abs=1e-15), name
    if values.std() > 0:
      assert (row.kl_low, row.kl_high) == pytest.approx(
        divergence_run.t_interval(values)[1:], rel=REL
      ), name
    assert row.flip_rate == pytest.approx(hit[mask].mean()), name
    assert row.delta_p_mean == pytest.approx(-0.25 * hit[mask].mean(), rel=REL, abs=1e-15)
  inverted = divergence_run.row(table[table.subgroup == "Inverted=1"], "prune_0.9")
  assert inverted.flip_rate > 0 and inverted.delta_p_min == pytest.approx(-0.25, rel=REL)
