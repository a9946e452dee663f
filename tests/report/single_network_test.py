"""The K = 1 tables (tf_forget/report/single_network.py), their section, the verdict's design
statement, and the verdict cells and gates that read them (`gate_inputs.gate_measures`), on fake
runs with one dense member and planted flips.

Expected values are counted here from the plants of tests/report/fake_run.py (its docstring):
with one member, dense member 0 and every compressed member 0 share the noise pattern (wrong on
positions i % 50 == 0, the same wrong label), so the only flips are the plants — `prune_0.9` is
wrong (label 8) on PLANTED_LOST (20 examples of class 3) and right on PLANTED_GAINED (4 examples
of each class 5-9, where dense says 0); `full_int8` equals dense. The McNemar p-values are
recomputed from the binomial distribution (`scipy.stats.binom.cdf`), not `binomtest`.
"""

import glob
import os
import re

import numpy as np
import pytest
from scipy import stats

from tests.report import fake_run
from tf_forget.policy import gate_inputs
from tf_forget.policy import gates as gates_lib
from tf_forget.report import collect
from tf_forget.report import single_network
from tf_forget.report import summary_terminal
from tf_forget.report import verdict
from tf_forget.report import write
from tf_forget.stats import paired
from tf_forget.stats import paired_bootstrap
from tf_forget.stats import subgroups


def _top1(run_dir, variant):
  """(ids, labels, top-1 of member 0) read straight from the npz file, without collect."""
  (path,) = glob.glob(os.path.join(run_dir, "predictions", variant, "0", "test.npz"))
  with np.load(path, allow_pickle=False) as d:
    return d["ids"], d["labels"], d["topk"][:, 0]


def _mcnemar_by_hand(broken, fixed):
  """Exact two-sided McNemar: p = min(1, 2 · P[X ≤ min(n01, n10)]), X ~ Binomial(m, 1/2)."""
  m = broken + fixed
  return 1.0 if m == 0 else min(1.0, 2 * stats.binom.cdf(min(broken, fixed), m, 0.5))


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
  run_dir = str(tmp_path_factory.mktemp("digits_k1"))
  ids, labels, lost, gained = fake_run.make_digits_run(run_dir, members=1, corrupted=False)
  run = collect.load_run(run_dir, dataset_name="digits")
  tables, notes, settings = single_network.compute(run, seed=0)
  return {
    "run_dir": run_dir,
    "ids": ids,
    "labels": labels,
    "lost": lost,
    "gained": gained,
    "tables": tables,
    "notes": notes,
    "settings": settings,
    "report": write.build_report(run_dir, dataset_name="digits"),
  }


@pytest.fixture(scope="module")
def biased(tmp_path_factory):
  run_dir = str(tmp_path_factory.mktemp("biased_k1"))
  ids, labels, attributes, planted = fake_run.make_biased_run(run_dir, members=1)
  run = collect.load_run(run_dir, dataset_name="digits_biased")
  tables, _, _ = single_network.compute(run, seed=0)
  return {
    "run_dir": run_dir,
    "labels": labels,
    "attributes": attributes,
    "planted": planted,
    "tables": tables,
    "run": run,
    "report": write.build_report(run_dir, dataset_name="digits_biased"),
  }


def _gated(case, dataset, gates):
  """The verdict table (by variant) of a fixture's report under `gates` (a JSON dict)."""
  run = collect.load_run(case["run_dir"], dataset_name=dataset)
  frame, rec = verdict.compute(run, case["report"].measures, gates)
  return frame.set_index("variant"), rec


def _json_gate(case, variant, gates):
  """The gate verdict the bundle gives (tf_forget/evaluate/deploy.py): from report.json, through
  `gate_inputs.gate_measures`."""
  doc = case["report"].json
  measures = gate_inputs.gate_measures(
    variant, doc["variants"][variant], doc["settings"], doc["tables"]
  )
  return gates_lib.verdict(variant, measures, gates_lib.Gates(**gates)), measures


def test_flips_are_the_planted_examples(digits):
  flips = digits["tables"]["flips"]
  ids, labels = digits["ids"], digits["labels"]
  pruned = flips[flips.variant == "prune_0.9"]
  assert sorted(pruned[pruned.kind == "broken"].id) == sorted(ids[digits["lost"]])
  assert sorted(pruned[pruned.kind == "fixed"].id) == sorted(ids[digits["gained"]])
  assert len(pruned) == 40 and not (pruned.kind == "changed").any()
  assert (flips.variant == "full_int8").sum() == 0  # the same predictions as dense
  broken = pruned[pruned.kind == "broken"]
  assert (broken.label == 3).all() and (broken.reference_prediction == 3).all()
  assert (broken.candidate_prediction == 8).all()
  fixed = pruned[pruned.kind == "fixed"]
  assert (fixed.reference_prediction == 0).all()
  assert (fixed.candidate_prediction == fixed.label).all()
  assert sorted(np.unique(labels[digits["gained"]])) == [5, 6, 7, 8, 9]
  top = digits["tables"]["k1_topline"].set_index("variant")
  assert top.loc["prune_0.9", ["broken", "fixed", "changed"]].tolist() == [20, 20, 0]
  assert top.loc["full_int8", ["broken", "fixed", "changed"]].tolist() == [0, 0, 0]
  assert (top.n == labels.size).all()


def test_mcnemar_p_from_the_binomial(digits, biased):
  top = digits["tables"]["k1_topline"].set_index("variant")
  assert top.loc["prune_0.9", "mcnemar_p"] == pytest.approx(_mcnemar_by_hand(20, 20))  # 1
  assert top.loc["full_int8", "mcnemar_p"] == 1.0
  classes = digits["tables"]["k1_classes"]
  pruned = classes[classes.variant == "prune_0.9"].set_index("class")
  assert pruned.loc[3, "p_value"] == pytest.approx(2 * 0.5**20)
  assert pruned.loc[3, "p_value"] == pytest.approx(_mcnemar_by_hand(20, 0))
  for c in range(5, 10):
    assert pruned.loc[c, "p_value"] == pytest.approx(_mcnemar_by_hand(0, 4))  # 0.125
  # digits_biased: every planted positive broken (none is a noise position), nothing fixed.
  planted = biased["planted"]
  broken = int(np.sum(planted % fake_run.NOISE_PERIOD != 0))
  row = biased["tables"]["k1_topline"].set_index("variant").loc["prune_0.9"]
  assert (row["broken"], row["fixed"]) == (broken, 0)
  assert row["mcnemar_p"] == pytest.approx(_mcnemar_by_hand(broken, 0), rel=1e-9)


def test_newcombe_interval_is_the_paired_one(digits, biased):
  for case, name in ((digits, "prune_0.9"), (digits, "full_int8"), (biased, "prune_0.9")):
    _, y, a = _top1(case["run_dir"], "dense")
    _, _, b = _top1(case["run_dir"], name)
    want = paired.paired_accuracy_difference(y, a, b)
    row = case["tables"]["k1_topline"].set_index("variant").loc[name]
    assert row["difference"] == pytest.approx(want["difference"])
    assert (row["low"], row["high"]) == pytest.approx((want["low"], want["high"]))
    assert row["low"] <= row["difference"] <= row["high"]
    assert row["accuracy_reference"] == pytest.approx(np.mean(a == y))
    assert row["accuracy_candidate"] == pytest.approx(np.mean(b == y))
  # No discordant pair still gives an interval of positive width (Newcombe does not collapse).
  same = digits["tables"]["k1_topline"].set_index("variant").loc["full_int8"]
  assert same["low"] < 0 < same["high"]


def test_class_3_drops_significantly_and_alone(digits):
  classes = digits["tables"]["k1_classes"]
  pruned = classes[classes.variant == "prune_0.9"].set_index("class")
  n3 = int(np.sum(digits["labels"] == 3))
  assert pruned.loc[3, "n"] == n3 and pruned.loc[3, "broken"] == 20
  assert pruned.loc[3, "change"] == pytest.approx(-20 / n3)
  assert pruned.loc[3, "high"] < 0 and pruned.loc[3, "significant"]
  # Benjamini-Hochberg over the 10 classes: class 3 has the smallest p (rank 1).
  assert pruned.loc[3, "p_adjusted"] == pytest.approx(10 * 2 * 0.5**20)
  assert pruned.significant.sum() == 1  # 4 fixed per class 5-9 is not enough
  assert not classes[classes.variant == "full_int8"].significant.any()


def test_section_and_design_sentence_in_the_page(digits):
  report = digits["report"]
  page = report.html
  assert '<section id="k1">' in page and "flips and paired tests (K = 1)" in page
  # K = 1: the sections that compare populations are left out, named in one line.
  ids = re.findall(r'<section id="([^"]+)"', page)
  assert ids[:3] == ["verdict", "glossary", "k1"] and ids[-2:] == ["left-out", "notes"]
  assert not {"overview", "topline", "class-level", "pie", "recall-distortion"} & set(ids)
  left_out = page[page.index('<section id="left-out">') : page.index('<section id="notes">')]
  assert left_out.count("<p") == 1 and "2 Classes" in left_out and "K ≥ 2" in left_out
  assert "6 Robustness (no corrupted splits" in left_out.replace("&#x27;", "'")
  assert "Not shown" not in page
  k1 = page[page.index('<section id="k1">') :]
  k1 = k1[: k1.index("</section>")]
  assert "examples are the unit of uncertainty" in k1 and "500 test examples" in k1
  assert "Flips per class" in k1 and "Subgroups" not in k1  # digits: no protected attribute
  # The verdict's first screen states the design, before the rule.
  verdict = page[page.index('<section id="verdict">') : page.index('<section id="glossary">')]
  design = (
    "Design: one network (K = 1) against its own compressed files: intervals and "
    "tests are over the 500 test examples (paired"
  )
  assert design in verdict.replace("&#x27;", "'")
  assert verdict.index("Design: one network") < verdict.index("Rule:")
  assert report.json["recommendation"]["design"].startswith(design)
  assert "Small populations" not in verdict  # the design replaces the K < 10 caveat
  settings = report.json["settings"]["single_network"]
  assert settings["design"] == single_network.DESIGN
  assert settings["n_resamples"] >= paired_bootstrap.MIN_RESAMPLES and settings["seed"] == 0
  assert {"k1_topline", "k1_classes", "flips"} <= set(report.tables)


def test_verdict_uses_the_k1_interval(digits):
  m = digits["report"].measures
  verdict = m.tables["verdict"].set_index("variant")
  top = m.tables["k1_topline"].set_index("variant")
  for name in ("prune_0.9", "full_int8"):
    assert verdict.loc[name, "pairing"] == "paired examples"
    assert verdict.loc[name, "top1_low"] == top.loc[name, "low"]
    assert verdict.loc[name, "top1_high"] == top.loc[name, "high"]
    assert verdict.loc[name, "top1_change"] == top.loc[name, "difference"]
  why = digits["report"].json["recommendation"]["why"]
  assert "paired over the test examples" in why and "nan" not in why


def test_rare_subgroup_fnr_rises_with_an_interval_excluding_zero(biased):
  t = biased["tables"]["k1_subgroups"]
  run = biased["run"]
  masks = subgroups.subgroup_masks(
    run.attributes, run.eval["dense"].labels.size, run.protected_attributes
  )
  assert list(t[(t.variant == "prune_0.9") & (t.measure == "fnr")].subgroup) == list(masks)
  assert set(t.measure) == {"error", "fnr", "fpr"}
  row = t[(t.variant == "prune_0.9") & (t.subgroup == "Inverted=1") & (t.measure == "fnr")].iloc[0]
  labels, inverted = biased["labels"], np.asarray(biased["attributes"]["Inverted"], bool)
  positives = inverted & (labels == 1)
  assert row["n"] == positives.sum() == biased["planted"].size
  _, _, a = _top1(biased["run_dir"], "dense")
  assert row["rate_reference"] == pytest.approx(np.mean(a[positives] != 1))
  assert row["rate_candidate"] == pytest.approx(1.0)  # every planted positive missed
  assert row["change"] > 0.9 and row["low"] > 0 and row["n_resamples"] >= 2000
  same = t[t.variant == "full_int8"]
  assert (same.change == 0).all()
  # Seeded: the same seed gives the same intervals.
  again, _, _ = single_network.compute(run, seed=0)
  assert again["k1_subgroups"].equals(t)


def test_verdict_worst_class_and_count_come_from_mcnemar(digits):
  frame = digits["report"].measures.tables["verdict"].set_index("variant")
  classes = digits["tables"]["k1_classes"]
  k1 = classes[classes.variant == "prune_0.9"].set_index("class")
  n3 = int(np.sum(digits["labels"] == 3))
  row = frame.loc["prune_0.9"]
  assert row["significant_classes"] == 1 and frame.loc["full_int8", "significant_classes"] == 0
  assert row["worst_class"] == "3" and row["worst_class_n"] == n3
  assert row["worst_class_change"] == pytest.approx(-20 / n3)
  assert (row["worst_class_low"], row["worst_class_high"]) == (k1.loc[3, "low"], k1.loc[3, "high"])
  assert row["worst_class_p"] == pytest.approx(_mcnemar_by_hand(20, 0))  # not Welch's
  assert row["worst_class_p_bh"] == pytest.approx(10 * 2 * 0.5**20)
  page = digits["report"].html
  cells = page[page.index('<section id="verdict">') : page.index('<section id="glossary">')]
  assert "McNemar p 1.9e-06, BH 1.9e-05; 1 class significant (McNemar + BH)" in cells
  assert "0 classes significant (McNemar + BH)" in cells  # full_int8
  assert "exact McNemar p-value" in cells and "Welch p-value" not in cells
  # The audit's summary line (tf_forget/report/summary_terminal.py) counts the same: #signif 1 for
  # prune_0.9.
  lines = []
  summary_terminal.print_summary(digits["report"].json, {"files": []}, log=lines.append)
  (line,) = [ln for ln in lines if ln.startswith("prune_0.9 ")]
  head = next(ln for ln in lines if "#signif" in ln)
  assert line[head.index("#signif") : head.index("#signif") + 7].strip() == "1"


def test_significant_classes_gate_reads_mcnemar_at_k1(digits):
  gates = {"max_significant_classes": 0}
  frame, rec = _gated(digits, "digits", gates)
  assert frame.loc["prune_0.9", "gate"] == "fail"
  assert frame.loc["prune_0.9", "reason"] == (
    "1 significant class (McNemar + BH over the test examples; max 0)"
  )
  assert frame.loc["full_int8", "gate"] == "pass" and rec["variant"] == "full_int8"
  # The bundle (manifest, exit status) reads report.json the same way.
  (passed, reasons), measures = _json_gate(digits, "prune_0.9", gates)
  assert not passed and reasons == [
    "1 significant class (McNemar + BH over the test examples; max 0)"
  ]
  assert measures["significant_classes"] == 1 and measures["design"] == gate_inputs.K1_DESIGN
  assert _json_gate(digits, "full_int8", gates)[0] == (True, [])
  assert gate_inputs.K1_SETTINGS_KEY == single_network.SETTINGS_KEY


def test_k1_gates_refuse_a_variant_without_paired_tests():
  settings = {single_network.SETTINGS_KEY: {}}
  summary = {"top1_change": 0.0, "significant_classes": 0, "worst_subgroup": None}
  m = gate_inputs.gate_measures("prune_0.9", summary, settings, {"k1_classes": []})
  assert m["significant_classes"] is None  # not the population's (Welch) 0
  passed, reasons = gates_lib.verdict("prune_0.9", m, gates_lib.Gates(max_significant_classes=3))
  assert not passed and reasons == [
    "gate max_significant_classes could not be evaluated: "
    "significant classes undefined (no per-class McNemar test)"
  ]
  k5 = gate_inputs.gate_measures("prune_0.9", summary, {}, {})  # K > 1: the summary's measures
  assert "design" not in k5 and {k: k5[k] for k in summary} == summary
  assert gate_inputs.gate_measures("dense", summary, settings, {}) is summary


def test_k1_worst_rate_skips_the_aggregate_and_keeps_the_first_tie():
  rows = [
    {"subgroup": "aggregate", "measure": "fnr", "change": 0.9},
    {"subgroup": "A=1", "measure": "error", "change": 0.8},
    {"subgroup": "A=0", "measure": "fnr", "change": float("nan")},
    {
      "subgroup": "B=1",
      "measure": "fnr",
      "change": 0.3,
      "n": 7,
      "low": 0.1,
      "high": 0.5,
      "rate_reference": 0.1,
      "rate_candidate": 0.4,
    },
    {"subgroup": "B=0", "measure": "fnr", "change": 0.3, "n": 9},
  ]
  worst = gate_inputs.k1_worst_rate(rows, "fnr")
  assert (worst["subgroup"], worst["increase"], worst["n"]) == ("B=1", 0.3, 7)
  assert (worst["low"], worst["high"]) == (0.1, 0.5)
  assert gate_inputs.k1_worst_rate(rows[:3], "fnr") is None


def test_biased_worst_subgroup_and_fnr_gate_at_k1(biased):
  t = biased["tables"]["k1_subgroups"]
  fnr = t[(t.variant == "prune_0.9") & (t.measure == "fnr") & (t.subgroup != "aggregate")]
  want = fnr.set_index("subgroup").loc["Inverted=1"]
  assert want["change"] == fnr.change.max()  # the largest FNR increase (first of the ties)
  frame = biased["report"].measures.tables["verdict"].set_index("variant")
  row = frame.loc["prune_0.9"]
  assert row["worst_subgroup"] == "Inverted=1"
  assert row["worst_subgroup_n"] == biased["planted"].size == want["n"]
  assert row["worst_subgroup_fnr_change"] == want["change"] == pytest.approx(1.0)
  assert (row["worst_subgroup_low"], row["worst_subgroup_high"]) == (want["low"], want["high"])
  assert frame.loc["full_int8", "worst_subgroup_fnr_change"] == 0
  gates = {"max_subgroup_fnr_increase": 0.05}
  gated, rec = _gated(biased, "digits_biased", gates)
  reason = (
    f"FNR of subgroup Inverted=1 rises by 100.00 points (95% CI {100 * want['low']:.2f} "
    f"to {100 * want['high']:.2f} points, paired bootstrap over the test examples; "
    "max 5.00)"
  )
  assert gated.loc["prune_0.9", "gate"] == "fail" and gated.loc["prune_0.9", "reason"] == reason
  assert gated.loc["full_int8", "gate"] == "pass" and rec["variant"] == "full_int8"
  (passed, reasons), measures = _json_gate(biased, "prune_0.9", gates)
  assert not passed and reasons == [reason]
  worst = measures["worst_subgroup"]["fnr"]
  assert (worst["subgroup"], worst["n"], worst["test"]) == (
    "Inverted=1",
    want["n"],
    gate_inputs.K1_SUBGROUP_TEST,
  )
  # The accuracy gate names its paired interval too.
  top = biased["tables"]["k1_topline"].set_index("variant").loc["prune_0.9"]
  (passed, reasons), _ = _json_gate(biased, "prune_0.9", {"max_accuracy_drop": 0.01})
  assert not passed and reasons == [
    f"top-1 accuracy drops by {-100 * top['difference']:.2f} points (95% CI "
    f"{-100 * top['high']:.2f} to {-100 * top['low']:.2f} points, Newcombe, paired over the "
    "test examples; max 1.00)"
  ]


def test_k5_has_no_k1_tables_and_renders_as_before(tmp_path, monkeypatch):
  run_dir = str(tmp_path / "run")
  fake_run.make_digits_run(run_dir, members=5, corrupted=False)
  run = collect.load_run(run_dir, dataset_name="digits")
  assert single_network.compute(run, seed=0) == ({}, {}, {})
  report = write.build_report(run_dir, dataset_name="digits")
  assert not any(name.startswith("k1_") or name == "flips" for name in report.tables)
  assert "single_network" not in report.json["settings"]
  assert "single_network" not in report.json["notes"]
  assert "design" not in report.json["recommendation"]
  assert 'id="k1"' not in report.html and "K = 1" not in report.html
  assert "significant_classes" not in report.measures.tables["verdict"]
  for variant, s in report.json["variants"].items():  # the gates read the summary's measures
    g = gate_inputs.gate_measures(variant, s, report.json["settings"], report.json["tables"])
    assert "design" not in g and {k: g[k] for k in s} == s
  # The same page with the K = 1 module switched off: byte for byte.
  monkeypatch.setattr(single_network, "compute", lambda *a, **k: ({}, {}, {}))
  without = write.build_report(run_dir, dataset_name="digits")
  assert without.html == report.html and without.json == report.json
  assert without.tables == report.tables
