"""End-to-end audit with training: the papers' phenomena as properties.

Training is not pinned: TF's CPU float kernels differ between machines (oneDNN on/off, its ISA, the
thread count; `tf_forget/compat/cpu_kernels.py`), and magnitude pruning turns a 1-ulp weight
difference into another mask, so the numbers of a trained population differ by machine (digits
prune_0.9 top-1 spread 0.923-0.954 over the settings below). Every stage after training is pinned
exactly on committed members by `audit_fixtures_test.py`. Here the whole audit trains small
populations (3 members x dense / prune_0.9, plus full_int8 of the dense members) and checks what
000, 004 and 003 say should happen, with margins calibrated over population seeds 0-2 under four
CPU-kernel settings — S0 the default (oneDNN off, 2 intra-op threads), S1 `TF_ENABLE_ONEDNN_OPTS=1`
(AVX-512 here), S2 `TF_ENABLE_ONEDNN_OPTS=1 ONEDNN_MAX_CPU_ISA=AVX2`, S3 `TF_NUM_INTRAOP_THREADS=1`
— measured with the same configs as below (`benchmarks/calibrate_properties.py`): 10 digits and 8
digits_biased runs (S0-S3 for seeds 0 and 1, S0 for seed 2, and for seed 3 on digits; ranges in each
test's comment); every property held in every run.

`digits_biased` trains 600 steps: at 300 steps the dense members have not learned the planted
rare group (dense FNR of positive ∧ Inverted 0.80-0.82), pruning cannot raise it much, and the
ranking of subgroups was luck (the claim failed on a fresh machine). At 600 steps dense FNR is
~0.5 there and the planted group's rise is the largest in every calibration run.
"""

import pytest

from tf_forget.config import tree
from tf_forget.pipeline import audit_lib

STEPS = {"digits": 300, "digits_biased": 600}


def _audit(dataset, out, population_seed=0):
  config = tree.AuditConfig(
    out=str(out),
    data=tree.Data(dataset=dataset),
    population=tree.Population(
      preset="digits",
      members=3,
      variants=("dense", "prune_0.9"),
      steps=STEPS[dataset],
      population_seed=population_seed,
      preset_overrides={"checkpoint_every": 100},
    ),
    formats=tree.Formats(quantizations=("full_int8",), pruned_quantizations=()),
    deployment=tree.Deployment(encoding="plain"),
    robustness=tree.Robustness(corruptions=("gaussian_noise", "glass_blur"), severities=(3,)),
    # The noise levels the properties read, of the paper's grid: a level's draws do not depend
    # on the other levels (`tf_forget.evaluate.noise_eval`), so these are the calibrated numbers.
    noise=tree.Noise(levels=(0.0, 0.4, 0.7)),
  )
  report, _ = audit_lib.run_audit(config, log=lambda _: None)
  return report


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
  return {d: _audit(d, tmp_path_factory.mktemp(d)) for d in STEPS}


def test_pruning_costs_accuracy_and_quantization_does_not(reports):
  # 000 Table 1: 90% pruning costs top-1, full-integer quantization almost nothing.
  # Calibration (digits): prune_0.9 change -0.060 .. -0.025; full_int8 -0.003 .. +0.002.
  for dataset, report in reports.items():
    v = report["variants"]
    assert v["prune_0.9"]["top1_change"] < -0.01, dataset
    assert abs(v["full_int8"]["top1_change"]) < 0.01, dataset


def test_pruning_forgets_more_exemplars_and_classes_than_quantization(reports):
  # 000 §3 (Tables 2, 4): more PIEs and more significantly changed classes under pruning.
  # Calibration: #PIE prune_0.9 11-20 (digits), 19-33 (biased) vs full_int8 0-2; #significant
  # prune_0.9 0-2 vs full_int8 0.
  for dataset, report in reports.items():
    v = report["variants"]
    assert v["prune_0.9"]["pie_count"] >= v["full_int8"]["pie_count"] + 5, dataset
    assert v["full_int8"]["significant_classes"] <= v["prune_0.9"]["significant_classes"]


def test_digits_biased_planted_subgroup_loses_most(reports):
  # 004 Table 3: the under-represented group (positive ∧ Inverted, 1% of train, the blond-male
  # analogue) gets the largest FNR increase. Calibration (600 steps): Inverted=1 +0.28..+0.51,
  # aggregate +0.17..+0.31, Inverted=0 +0.03..+0.11; Faint=0/1 at most +0.33 (and always below
  # Inverted=1 in the same run, by 0.09 at least).
  rows = [
    r
    for r in reports["digits_biased"]["tables"]["subgroups"]
    if r["variant"] == "prune_0.9" and r["metric"] == "fnr"
  ]
  base = next(r for r in rows if r["model"] == "baseline")
  comp = next(r for r in rows if r["model"] == "compressed")
  increase = {
    k: comp[k] - base[k]
    for k in base
    if k not in ("metric", "model", "variant") and base[k] is not None
  }
  assert increase["Inverted=1"] > increase["aggregate"] > increase["Inverted=0"], increase
  singles = {k: v for k, v in increase.items() if "&" not in k and k != "aggregate"}
  assert max(singles, key=singles.get) == "Inverted=1", increase


def test_corruption_and_noise_lower_accuracy(reports):
  # 000 §3.3 / 003 §4.1: glass blur and l-inf noise at ε = 0.7 cost every variant accuracy.
  # Calibration: glass blur 0.58-0.65 (digits) vs clean >= 0.92; biased 0.80-0.81 vs >= 0.88;
  # noise top-1 at ε 0.7 0.46-0.55 (digits), 0.80 (biased: the 80% negative floor).
  for dataset, report in reports.items():
    rob = {(r["variant"], r["corruption"]): r["top1"] for r in report["tables"]["robustness"]}
    acc = {(r["variant"], r["eps"]): r["top1"] for r in report["tables"]["noise_accuracy"]}
    for variant, s in report["variants"].items():
      assert rob[(variant, "glass_blur")] < s["top1"] - 0.03, (dataset, variant)
      assert acc[(variant, 0.7)] < acc[(variant, 0.0)] - 0.05, (dataset, variant)


def test_quantized_member_stays_closer_to_its_parent_than_an_independent_one(reports):
  # 003 Figure 4: under noise, the quantization of dense member k matches member k's labels
  # more often than two separately trained dense members match each other. 10-class digits
  # only: on the binary digits_biased task, noise drives every model to the majority class and
  # both shares are ~0.99 (calibration margin < 0.5 pt, not a claim worth pinning).
  # Calibration (digits): full_int8 0.91-0.93 vs 0.84-0.86 at ε 0.4; 0.70-0.73 vs 0.57-0.61 at
  # ε 0.7.
  sim = {
    (r["variant"], r["eps"]): r["matching"] for r in reports["digits"]["tables"]["noise_similarity"]
  }
  for eps in (0.4, 0.7):
    assert sim[("full_int8", eps)] > sim[("dense (independent)", eps)] + 0.03, eps
