"""The output-divergence section and gates: the flip-rate and KL gates, the gate
measures and the deployment summary's fields, the report's section and gallery cards.

On `divergence_run.make_single_run` (K = 1), whose logits make every number a hand computation
(`tests/report/divergence_run.py` derives KL_RR, KL_UR, KL_RU): full_int8 flips 30 of 500
examples, prune_0.9 10; float16 has no saved logits.
"""

import pytest

from tests.report import divergence_run
from tests.report.divergence_run import single
from tf_forget.policy import gate_inputs
from tf_forget.policy import gates as gates_lib
from tf_forget.report import collect
from tf_forget.report import summary_terminal
from tf_forget.report import verdict

KL_RR, KL_UR = divergence_run.KL_RR, divergence_run.KL_UR
REL = divergence_run.REL


def _reasons(case, gates):
  """{variant: (passed, reasons)} from the verdict table and through report.json (bundle)."""
  run = collect.load_run(case["run_dir"], dataset_name="digits")
  frame, _ = verdict.compute(run, case["report"].measures, gates)
  doc = case["report"].json
  out = {}
  for variant in ("full_int8", "prune_0.9", "float16"):
    row = frame.set_index("variant").loc[variant]
    m = gate_inputs.gate_measures(variant, doc["variants"][variant], doc["settings"], doc["tables"])
    passed, reasons = gates_lib.verdict(variant, m, gates_lib.Gates(**gates))
    assert (row.gate == "pass") == passed and (row.reasons or "") == "; ".join(reasons)
    out[variant] = (passed, reasons)
  return out


def test_flip_rate_gate(single):
  # full_int8 flips 30 / 500 = 6% > 5%; prune_0.9 10 / 500 = 2%; float16 has no logits.
  got = _reasons(single, {"max_flip_rate": 0.05})
  assert got["full_int8"] == (
    False,
    [
      "top-1 flip rate 6.00% of test examples vs the reference "
      "(20 broken, 5 fixed, 5 changed) (max 5.00%)"
    ],
  )
  assert got["prune_0.9"] == (True, [])
  assert got["float16"] == (
    False,
    [
      "gate max_flip_rate could not be evaluated: no output "
      "divergence (no saved logits for the variant or its dense "
      "reference, or no paired member)"
    ],
  )


def test_kl_gate(single):
  # full_int8: (20 KL_RR + 10 KL_UR) / 500 ≈ 0.008773 > 0.005;
  # prune_0.9: 10 KL_RU / 500 ≈ 0.001847.
  got = _reasons(single, {"max_kl": 0.005})
  passed, (reason,) = got["full_int8"]
  assert not passed and reason.startswith("mean KL(reference ‖ file) 0.008773 nats (95% CI ")
  assert reason.endswith(", t over the test examples; max 0.005)")
  assert got["prune_0.9"] == (True, [])
  assert not got["float16"][0] and "gate max_kl could not be evaluated" in got["float16"][1][0]


def test_gate_measures_and_the_manifest_fields(single):
  doc = single["report"].json
  m = gate_inputs.gate_measures(
    "full_int8", doc["variants"]["full_int8"], doc["settings"], doc["tables"]
  )
  assert m["flip_rate"] == pytest.approx(0.06)
  assert m["kl_mean"] == pytest.approx((20 * KL_RR + 10 * KL_UR) / 500, rel=REL)
  assert m["design"] == gate_inputs.K1_DESIGN  # K = 1: the paired tests too
  summary = {"top1": 0.9, "top1_change": 0.0}
  assert gate_inputs.gate_measures("dense", summary, {}, {}) is summary  # never gated
  unknown = gate_inputs.gate_measures("prune_0.9", summary, {}, {})
  assert unknown["flip_rate"] is None and unknown["kl_mean"] is None and "design" not in unknown
  lines = []
  summary_terminal.print_summary(doc, {"files": []}, log=lines.append)
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
  assert set(single["report"].json["tables"]) >= {
    "divergence",
    "divergence_classes",
    "divergence_examples",
  }
