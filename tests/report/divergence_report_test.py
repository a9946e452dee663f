"""The output-divergence tables (tf_forget/report/divergence_report.py), their section and the
flip-rate / KL gates (issue #29), on planted runs whose logits make every number a hand
computation.

Logit rows over C classes (the `digits` test split: 500 examples, 50 per class; C = 10):
R(z) is ln 3 at class z and 0 elsewhere, so softmax p_z = 3 / (3 + 9) = 1/4 and 1/12 for each
other class; U is all zeros, softmax 1/10 each (its arg max is class 0, SPEC §1.2). With y the
true label and KL(p ‖ q) = Σ_c p_c ln(p_c / q_c):

  KL(R(y) ‖ U)    = 1/4 ln(10/4) + 9/12 ln(10/12)                 = KL_RU ≈ 0.0923315
  KL(R(y) ‖ R(z)) = 1/4 ln(3) + 1/12 ln(1/3) = ln(3) / 6 (z ≠ y)  = KL_RR ≈ 0.1831020
  KL(U ‖ R(z))    = 1/10 ln(4/10) + 9/10 ln(12/10)  (any z)       = KL_UR ≈ 0.0724603
  Δp = q_y − p_y:  R(y) → U: 1/10 − 1/4 = −0.15;  R(y) → R(z): 1/12 − 1/4 = −1/6;
                   U → R(y): 1/4 − 1/10 = +0.15;  U → R(z): 1/12 − 1/10 = −1/60.

The logits are float32 (ln 3 rounded), so the tables agree with these values to ~1e-7
relative; the tests use rel = 1e-6. Intervals and percentiles are recomputed here from the
planted value vectors with numpy / scipy (`t.ppf`, `np.percentile`), not the stats library.
"""

import json
import math
import os

import numpy as np
import pytest
from scipy import stats

from tf_forget.artifacts import predictions
from tf_forget.data import registry
from tf_forget.evaluate import deploy
from tf_forget.report import collect
from tf_forget.report import divergence_report
from tf_forget.report import gates as gates_lib
from tf_forget.report import verdict
from tf_forget.report import write
from tf_forget.stats import subgroups

LN3 = math.log(3.0)
KL_RU = 0.25 * math.log(2.5) + 0.75 * math.log(10 / 12)
KL_RR = LN3 / 6
KL_UR = 0.1 * math.log(0.4) + 0.9 * math.log(1.2)
DP_RR, DP_RU, DP_UR, DP_UZ = 1 / 12 - 1 / 4, 0.1 - 0.25, 0.25 - 0.1, 1 / 12 - 0.1
REL = 1e-6


def _first(labels, c, n):
  """Positions of the first n test examples of class c."""
  return np.flatnonzero(labels == c)[:n]


def _r(labels, classes=None):
  """R rows: ln 3 at `classes` (default the labels), 0 elsewhere; float32 `[N, C]`."""
  c = int(labels.max()) + 1
  x = np.zeros((labels.size, c), np.float32)
  x[np.arange(labels.size), labels if classes is None else classes] = LN3
  return x


def _with(base, rows, value):
  """`base` with the given rows replaced: value "U" (zeros) or a class z (R(z))."""
  x = base.copy()
  x[rows] = 0
  if value != "U":
    x[rows, value] = LN3
  return x


def _write(run_dir, dataset, variant, k, ids, labels, logits, save_logits=True, shuffle=None):
  if shuffle is not None:
    ids, labels, logits = ids[shuffle], labels[shuffle], logits[shuffle]
  predictions.write(predictions.path(run_dir, variant, k, "test"), ids, labels, logits,
                    {"variant": variant, "member_variant": variant.split("+")[0], "k": k,
                     "dataset": dataset, "split": "test"}, save_logits=save_logits)


def _metadata(run_dir, variant, k, doc):
  path = os.path.join(run_dir, "members", variant, str(k), "metadata.json")
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, "w") as f:
    json.dump(doc, f)


def make_population_run(run_dir):
  """K = 2: dense/1 is U on S1 (10 of class 5); full_int8 is R(8) on Q (20 of class 3), member
  1 also U on Q2 (5 of class 4; its files' rows shuffled); prune_0.9 (independent) U on P
  (10 of class 7); oneshot_mp_r2 member k pruned from dense 1 − k (parent links), member 1 R(8)
  on Q3 (5 of class 2); float16 without logits. Returns the position sets."""
  y = registry.get("digits").load("test")
  ids, labels = y.ids, y.labels
  sets = {"Q": _first(labels, 3, 20), "Q2": _first(labels, 4, 5), "S1": _first(labels, 5, 10),
          "P": _first(labels, 7, 10), "Q3": _first(labels, 2, 5)}
  base = _r(labels)
  dense = [base, _with(base, sets["S1"], "U")]
  int8 = [_with(dense[0], sets["Q"], 8), _with(_with(dense[1], sets["Q"], 8), sets["Q2"], "U")]
  oneshot = [base, _with(base, sets["Q3"], 8)]
  shuffle = np.random.default_rng(0).permutation(labels.size)
  for k in range(2):
    _write(run_dir, "digits", "dense", k, ids, labels, dense[k])
    _write(run_dir, "digits", "full_int8", k, ids, labels, int8[k], shuffle=shuffle)
    _write(run_dir, "digits", "prune_0.9", k, ids, labels, _with(base, sets["P"], "U"))
    _write(run_dir, "digits", "oneshot_mp_r2", k, ids, labels, oneshot[k])
    _write(run_dir, "digits", "float16", k, ids, labels, dense[k], save_logits=False)
    _metadata(run_dir, "dense", k, {"model_sha256": f"{k:064x}"})
    _metadata(run_dir, "oneshot_mp_r2", k, {
        "model_sha256": f"{k + 7:064x}",
        "parent": {"variant": "dense", "k": 1 - k, "model_sha256": f"{1 - k:064x}"}})
  return sets


def make_single_run(run_dir):
  """K = 1: dense is U on S0 (10 of class 5); full_int8 is R(y) on S0's first 5 (fixed),
  R(8) on its last 5 (changed) and on Q (20 of class 3, broken); prune_0.9 is dense with U on
  P (10 of class 7, broken); float16 without logits."""
  y = registry.get("digits").load("test")
  ids, labels = y.ids, y.labels
  sets = {"Q": _first(labels, 3, 20), "S0": _first(labels, 5, 10), "P": _first(labels, 7, 10)}
  base = _r(labels)
  dense = _with(base, sets["S0"], "U")
  int8 = _with(_with(base, sets["Q"], 8), sets["S0"][5:], 8)
  _write(run_dir, "digits", "dense", 0, ids, labels, dense)
  _write(run_dir, "digits", "full_int8", 0, ids, labels, int8)
  _write(run_dir, "digits", "prune_0.9", 0, ids, labels, _with(dense, sets["P"], "U"))
  _write(run_dir, "digits", "float16", 0, ids, labels, dense, save_logits=False)
  return sets


@pytest.fixture(scope="module")
def population(tmp_path_factory):
  run_dir = str(tmp_path_factory.mktemp("population"))
  sets = make_population_run(run_dir)
  run = collect.load_run(run_dir, dataset_name="digits")
  tables, notes, _ = divergence_report.compute(run, size=30)
  return {"sets": sets, "tables": tables, "notes": notes[divergence_report.KEY], "run": run}


@pytest.fixture(scope="module")
def single(tmp_path_factory):
  run_dir = str(tmp_path_factory.mktemp("single"))
  sets = make_single_run(run_dir)
  report = write.build_report(run_dir, dataset_name="digits")
  return {"run_dir": run_dir, "sets": sets, "report": report, "tables": report.measures.tables}


def _row(table, variant):
  rows = table[table.variant == variant]
  assert len(rows) == 1, (variant, len(rows))
  return rows.iloc[0]


def _t_interval(values):
  """mean ± t_{0.975, n−1} · s / √n of a value vector (numpy / scipy)."""
  v = np.asarray(values, np.float64)
  half = stats.t.ppf(0.975, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size)
  return v.mean(), v.mean() - half, v.mean() + half


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
  int8 = _row(top, "full_int8")
  # KL: 20 × KL_RR (Q), 10 × KL_UR (S0), 470 zeros; interval over the 500 examples.
  kl = np.r_[[KL_RR] * 20, [KL_UR] * 10, [0.0] * 470]
  mean, low, high = _t_interval(kl)
  assert mean == pytest.approx((20 * KL_RR + 10 * KL_UR) / 500, rel=1e-12)
  assert (int8.kl_mean, int8.kl_low, int8.kl_high) == pytest.approx((mean, low, high), rel=REL)
  # Sorted: zeros at 0..469, KL_UR at 470..479, KL_RR at 480..499; p99 at h = 0.99 · 499.
  assert (int8.kl_p50, int8.kl_p90) == (0.0, 0.0)
  assert (int8.kl_p99, int8.kl_max) == pytest.approx((KL_RR, KL_RR), rel=REL)
  # Δp: 20 × −1/6 (Q), 5 × +0.15 (S0 fixed), 5 × −1/60 (S0 changed), 470 zeros.
  dp = np.r_[[DP_RR] * 20, [DP_UR] * 5, [DP_UZ] * 5, [0.0] * 470]
  mean, low, high = _t_interval(dp)
  assert (int8.delta_p_mean, int8.delta_p_low, int8.delta_p_high) == pytest.approx(
      (mean, low, high), rel=REL)
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
  prune = _row(top, "prune_0.9")  # 10 × KL_RU, Δp −0.15, broken (U's arg max is 0, y = 7)
  assert prune.kl_mean == pytest.approx(10 * KL_RU / 500, rel=REL)
  assert prune.delta_p_mean == pytest.approx(10 * DP_RU / 500, rel=REL)
  assert (prune.broken, prune.fixed, prune.changed, prune.flip_rate) == (10, 0, 0, 0.02)
  assert "dense (independent)" not in set(top.variant)  # one dense member: no baseline


def test_several_pairs_interval_over_pairs_percentiles_pooled(population):
  top = population["tables"]["divergence"]
  int8 = _row(top, "full_int8")
  # Pair 0→0: 20 × KL_RR; pair 1→1: 20 × KL_RR + 5 × KL_RU (rows shuffled on disk).
  means = [20 * KL_RR / 500, (20 * KL_RR + 5 * KL_RU) / 500]
  mean, low, high = _t_interval(means)  # t_{0.975, 1} = 12.706 over the two pair means
  assert high - mean == pytest.approx(stats.t.ppf(0.975, 1) * (5 * KL_RU / 500) / 2)
  assert (int8.kl_mean, int8.kl_low, int8.kl_high) == pytest.approx((mean, low, high), rel=REL)
  # Pooled 1,000: zeros 0..954, KL_RU 955..959, KL_RR 960..999 (p99 at h = 989.01).
  assert (int8.kl_p50, int8.kl_p90) == (0.0, 0.0)
  assert (int8.kl_p99, int8.kl_max) == pytest.approx((KL_RR, KL_RR), rel=REL)
  dp_means = [20 * DP_RR / 500, (20 * DP_RR + 5 * DP_RU) / 500]
  assert (int8.delta_p_mean, int8.delta_p_low, int8.delta_p_high) == pytest.approx(
      _t_interval(dp_means), rel=REL)
  # Pooled Δp: 40 × −1/6 at 0..39, 5 × −0.15, then zeros: p1 (h = 9.99) −1/6, p10 (99.9) 0.
  assert (int8.delta_p_min, int8.delta_p_p1, int8.delta_p_p10) == pytest.approx(
      (-1 / 6, -1 / 6, 0.0), rel=REL)
  assert (int8.broken, int8.fixed, int8.changed) == (45, 0, 0)  # summed over the pairs
  assert int8.flip_rate == pytest.approx(45 / 1000)
  assert (int8.design, int8.pairs, int8.n) == ("pairs", 2, 500)
  prune = _row(top, "prune_0.9")
  # Pair 0→0: 10 × KL_RU (P, broken); pair 1→1 also 10 × KL_UR (S1: dense/1 is U, fixed).
  assert prune.kl_mean == pytest.approx((20 * KL_RU + 10 * KL_UR) / 1000, rel=REL)
  _, low, high = _t_interval([10 * KL_RU / 500, (10 * KL_RU + 10 * KL_UR) / 500])
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
  assert (one.pairing, one.reference, one.pair_members) == ("parent", "same network",
                                                            "1→0, 0→1")
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
  mean, low, high = _t_interval([0.0, 0.1 * KL_RU])
  assert low < 0 and (c4.kl_mean, c4.kl_low, c4.kl_high) == pytest.approx((mean, 0, high),
                                                                          rel=REL)
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
  assert notes == ["float16: no saved logits in float16/0, float16/1 (predictions without "
                   "logits); no output divergence"]
  assert any(n.startswith("float16: no saved logits") for n in
             single["report"].json["notes"]["divergence"])


@pytest.fixture(scope="module")
def biased(tmp_path_factory):
  """digits_biased (C = 2), K = 1: prune_0.9 is U on the positives of Inverted = 1."""
  run_dir = str(tmp_path_factory.mktemp("biased"))
  data = registry.get("digits_biased").load("test")
  ids, labels = data.ids, data.labels
  planted = np.flatnonzero((labels == 1) & data.attributes["Inverted"])
  base = _r(labels)
  _write(run_dir, "digits_biased", "dense", 0, ids, labels, base)
  _write(run_dir, "digits_biased", "prune_0.9", 0, ids, labels, _with(base, planted, "U"))
  run = collect.load_run(run_dir, dataset_name="digits_biased")
  tables, _, _ = divergence_report.compute(run)
  return {"tables": tables, "planted": planted, "attributes": data.attributes, "n": ids.size}


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
    row = _row(table[table.subgroup == name], "prune_0.9")
    values = np.where(hit, kl_ru2, 0.0)[mask]
    assert row.n == mask.sum()
    assert row.kl_mean == pytest.approx(values.mean(), rel=REL, abs=1e-15), name
    if values.std() > 0:
      assert (row.kl_low, row.kl_high) == pytest.approx(_t_interval(values)[1:], rel=REL), name
    assert row.flip_rate == pytest.approx(hit[mask].mean()), name
    assert row.delta_p_mean == pytest.approx(-0.25 * hit[mask].mean(), rel=REL, abs=1e-15)
  inverted = _row(table[table.subgroup == "Inverted=1"], "prune_0.9")
  assert inverted.flip_rate > 0 and inverted.delta_p_min == pytest.approx(-0.25, rel=REL)


def _reasons(case, gates):
  """{variant: (passed, reasons)} from the verdict table and through report.json (bundle)."""
  run = collect.load_run(case["run_dir"], dataset_name="digits")
  frame, _ = verdict.compute(run, case["report"].measures, gates)
  doc = case["report"].json
  out = {}
  for variant in ("full_int8", "prune_0.9", "float16"):
    row = frame.set_index("variant").loc[variant]
    m = gates_lib.gate_measures(variant, doc["variants"][variant], doc["settings"],
                                doc["tables"])
    passed, reasons = gates_lib.verdict(variant, m, gates_lib.Gates(**gates))
    assert (row.gate == "pass") == passed and (row.reasons or "") == "; ".join(reasons)
    out[variant] = (passed, reasons)
  return out


def test_flip_rate_gate(single):
  # full_int8 flips 30 / 500 = 6% > 5%; prune_0.9 10 / 500 = 2%; float16 has no logits.
  got = _reasons(single, {"max_flip_rate": 0.05})
  assert got["full_int8"] == (False, ["top-1 flip rate 6.00% of test examples vs the reference "
                                      "(20 broken, 5 fixed, 5 changed) (max 5.00%)"])
  assert got["prune_0.9"] == (True, [])
  assert got["float16"] == (False, ["gate max_flip_rate could not be evaluated: no output "
                                    "divergence (no saved logits for the variant or its dense "
                                    "reference, or no paired member)"])


def test_kl_gate(single):
  # full_int8: (20 KL_RR + 10 KL_UR) / 500 ≈ 0.008773 > 0.005; prune_0.9: 10 KL_RU / 500 ≈ 0.001847.
  got = _reasons(single, {"max_kl": 0.005})
  passed, (reason,) = got["full_int8"]
  assert not passed and reason.startswith("mean KL(reference ‖ file) 0.008773 nats (95% CI ")
  assert reason.endswith(", t over the test examples; max 0.005)")
  assert got["prune_0.9"] == (True, [])
  assert not got["float16"][0] and "gate max_kl could not be evaluated" in got["float16"][1][0]


def test_gate_measures_and_the_manifest_fields(single):
  doc = single["report"].json
  m = gates_lib.gate_measures("full_int8", doc["variants"]["full_int8"], doc["settings"],
                              doc["tables"])
  assert m["flip_rate"] == pytest.approx(0.06)
  assert m["kl_mean"] == pytest.approx((20 * KL_RR + 10 * KL_UR) / 500, rel=REL)
  assert m["design"] == gates_lib.K1_DESIGN  # K = 1: the paired tests too
  summary = {"top1": 0.9, "top1_change": 0.0}
  assert gates_lib.gate_measures("dense", summary, {}, {}) is summary  # never gated
  unknown = gates_lib.gate_measures("prune_0.9", summary, {}, {})
  assert unknown["flip_rate"] is None and unknown["kl_mean"] is None and "design" not in unknown
  lines = []
  deploy.print_summary(doc, {"files": []}, log=lines.append)
  assert any("flips" in ln and "KL" in ln for ln in lines)
  cells = next(ln for ln in lines if ln.startswith("full_int8")).split()
  assert "6.0%" in cells and f"{m['kl_mean']:.2e}" in cells


def test_section_and_gallery_cards(single):
  page = single["report"].html
  body = page.split("<section id=\"divergence\">")[1].split("</section>")[0]
  assert "KL(reference ‖ file)" in body
  assert "full_int8 against same network" in body
  assert "prune_0.9 against independent member 0" in body
  assert "Classes of largest mean KL" in body and "Examples of largest KL" in body
  order = [s for s in page.split("<section id=\"")[1:]]
  ids = [s.split("\"")[0] for s in order]
  assert ids.index("divergence") == ids.index("k1") + 1
  gallery = page.split("<section id=\"gallery\">")[1].split("</section>")[0]
  cards = gallery.split("Largest output divergence (KL)")[1]
  examples = single["tables"]["divergence_examples"]
  assert cards.count("class=\"gal-card ") == len(examples) == 12 + 10  # int8 12 of 30; prune 10
  assert cards.count("data:image/png;base64,") == len(examples)
  assert "tables/divergence_examples.csv" in body
  assert set(single["report"].json["tables"]) >= {"divergence", "divergence_classes",
                                                  "divergence_examples"}
