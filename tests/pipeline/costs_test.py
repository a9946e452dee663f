"""The audit's cost plan (tf_forget/pipeline/costs.py, audit_plan.plan_report, `audit --plan`)."""

import dataclasses
import json
import os

from absl.testing import flagsaver
import pytest

from tests import audit_main
from tf_forget.config import tree
from tf_forget.data.protocols import protocol_registry as protocols
from tf_forget.pipeline import audit_plan
from tf_forget.pipeline import costs

SMALL = costs.PlanInputs(
  dataset="digits",
  model="small_cnn",
  image_shape=(8, 8, 1),
  members=3,
  dense_variants=1,
  pruned_variants=1,
  steps=10,
  batch_size=4,
  quantizations=("float16", "full_int8"),
  pruned_quantizations=(),
  sparse=True,
  corrupted_splits=2,
  robustness_members=2,
  noise_eps=(0.0, 0.1),
  noise_draws=3,
  noise_examples=50,
  eval_size=100,
)

UNIT_COSTS = {
  "schema": costs.SCHEMA,
  "models": {
    "small_cnn": {
      "image_shape": [8, 8, 1],
      "train_seconds_per_image": 0.01,
      "convert_seconds": {"float32": 2.0, "full_int8": 3.0},
      "infer_seconds_per_image": {"float32": 0.001, "full_int8": 0.0005},
    }
  },
  "corruption_seconds_per_image": {"8x8x1": 0.002},
}


def test_counts_by_hand():
  c = costs.counts(SMALL)
  # train: 2 variants x 3 members = 6 members, 10 steps x 4 = 40 images each.
  assert c["train"] == {
    "members": 6,
    "images_per_member": 40,
    "images": 240,
    "oneshot_members": 0,
    "finetune_images_per_member": 0,
    "retrain_members": 0,
    "retrain_images_per_member": 0,
  }
  # export: dense 3 x (1 + 2) = 9; pruned 3 x 1 (float32 only) x 2 (sparse twin) = 6.
  assert c["export"]["conversions"] == 15 and c["export"]["plain_files"] == 12
  assert c["export"]["by_format"] == {"float32": 3 + 6, "float16": 3, "full_int8": 3}
  # corruptions: 2 splits x 100 images.
  assert c["corruptions"] == {"splits": 2, "images": 200}
  ev = c["evaluation"]
  assert ev["clean"] == 15 * 100
  # robustness files: members 0, 1 of dense (x 3 formats) and of prune (x 1) = 6 + 2 = 8.
  assert ev["robustness_files"] == 8
  assert ev["corrupted"] == 8 * 2 * 100
  # noise: ε = 0 runs one draw, ε = 0.1 three; min(50, 100) examples: (1 + 3) x 50 per file.
  assert ev["noise"] == 8 * (1 + 3) * 50
  assert ev["inferences"] == 1500 + 1600 + 1600 == sum(ev["by_format"].values())
  # float32 files: 9 clean x 100 + 4 robustness files x (200 corrupted + 200 noise).
  assert ev["by_format"]["float32"] == 900 + 4 * 400
  assert ev["by_format"]["full_int8"] == 300 + 2 * 400


def test_estimate_by_hand():
  c = costs.counts(SMALL)
  est = costs.estimate(c, SMALL, UNIT_COSTS, workers=2)
  s = est["seconds"]
  assert s["train"] == pytest.approx(240 * 0.01)
  # float16 is not measured: costed as float32 (and said so).
  assert s["export"] == pytest.approx(9 * 2.0 + 3 * 2.0 + 3 * 3.0)
  assert s["corruptions"] == pytest.approx(200 * 0.002)
  assert s["evaluation"] == pytest.approx(2500 * 0.001 + 1100 * 0.001 + 1100 * 0.0005)
  assert est["total"] == pytest.approx(sum(s.values())) and est["wall"] == est["total"] / 2
  assert any("float16" in n for n in est["notes"])
  text = costs.format_plan(SMALL, c, est)
  assert "6 members" in text and "15 conversions" in text and "ignoring stage barriers" in text


def test_missing_model_is_said_not_invented():
  p = costs.PlanInputs(**{**SMALL.__dict__, "model": "resnet50", "image_shape": (224, 224, 3)})
  est = costs.estimate(costs.counts(p), p, UNIT_COSTS)
  assert est["seconds"]["train"] is None and est["total"] is None
  assert "no measured cost for resnet50" in est["notes"]
  assert "no measured cost" in costs.format_plan(p, costs.counts(p), est)


def test_celeb_a_default_plan_matches_the_protocol(tmp_path):
  out = tmp_path / "celeb_a"
  text = audit_plan.plan_report(tree.AuditConfig(out=str(out), data=tree.Data(dataset="celeb_a")))
  assert not out.exists()  # nothing written, no data read
  proto = protocols.get("celeb_a")
  k, pruned, test = 30, 6, 19_962  # 004: K = 30; dense + 6 sparsities (docs/spec.md §2.3)
  # 7 variants x 30 members, 10,000 steps x 256 each.
  assert f"{7 * k} members" in text and "10000 steps x 256" in text
  # dense: 30 x (1 + 2: dynamic_int8, full_int8; no float16); pruned: 180 x float32 x 2 twins.
  conversions = k * (1 + len(proto.quantizations)) + pruned * k * 2
  assert conversions == 450 and "450 conversions" in text and "float16" not in text
  # No corruptions and no noise on CelebA (004 reports the clean test split only).
  assert "0 splits" in text
  clean = 450 * test
  assert costs.human_count(clean) + " inferences" in text and "noise 0" in text


def test_plan_flag_prints_and_writes_nothing(tmp_path, capsys):
  out = tmp_path / "imagenet"
  with flagsaver.flagsaver(plan=True, dataset="imagenet2012", out=str(out)):
    assert audit_main.main(["audit"]) == 0
  text = capsys.readouterr().out
  assert "imagenet2012, model resnet50, input 224x224x3" in text
  assert "32000 steps" in text and not out.exists()


@pytest.mark.parametrize(
  "content, message",
  [
    ("not json", "unit-cost file"),
    (json.dumps({"schema": "other/1"}), "is not a tf_forget.unit_costs/1 file"),
    (
      json.dumps({"schema": costs.SCHEMA, "models": {"m": {}}, "corruption_seconds_per_image": {}}),
      "model 'm' needs",
    ),
  ],
)
def test_bad_unit_cost_file_is_one_line(tmp_path, content, message):
  path = tmp_path / "costs.json"
  path.write_text(content)
  with pytest.raises(costs.CostError, match=message) as e:
    costs.load_unit_costs(str(path))
  assert "\n" not in str(e.value)
  with pytest.raises(costs.CostError):
    costs.load_unit_costs(str(tmp_path / "missing.json"))


def test_committed_unit_cost_file_loads():
  path = costs.default_unit_costs()
  assert path and os.path.basename(path) == "cpu_2core_avx512.json"
  data = costs.load_unit_costs(path)
  assert "small_cnn" in data["models"] and data["machine"]["cores"] >= 1


def test_oneshot_members_cost_their_fine_tuning():
  # 1 dense + 2 one-shot variants x 3 members: 3 trained members x 40 images and 6 fine-tunings
  # x 500 images; the one-shot files are exported and evaluated as pruned files.
  p = dataclasses.replace(
    SMALL, dense_variants=1, pruned_variants=2, oneshot_variants=2, finetune_images=500
  )
  c = costs.counts(p)
  assert c["train"] == {
    "members": 9,
    "images_per_member": 40,
    "images": 3 * 40 + 6 * 500,
    "oneshot_members": 6,
    "finetune_images_per_member": 500,
    "retrain_members": 0,
    "retrain_images_per_member": 0,
  }
  assert c["export"]["plain_files"] == 3 * 3 + 6
  text = costs.format_plan(p, c)
  assert "3 members x 40 images" in text and "6 one-shot fine-tunings x 500 images" in text


def test_prune_retrain_cycles_are_counted_as_retrainings():
  # 2 dense members + 2 cycles x 2 members, each cycle retrained on 20 steps x 4 images = 80:
  # trained images 2 x 40 (10 steps x 4) + 4 x 80 = 400.
  p = costs.PlanInputs(
    dataset="digits",
    model="small_cnn",
    image_shape=(8, 8, 1),
    members=2,
    dense_variants=1,
    pruned_variants=2,
    retrain_variants=2,
    retrain_images=80,
    steps=10,
    batch_size=4,
    quantizations=(),
    pruned_quantizations=(),
    sparse=False,
    corrupted_splits=0,
    robustness_members=2,
    noise_eps=(),
    noise_draws=0,
    noise_examples=0,
    eval_size=10,
  )
  c = costs.counts(p)["train"]
  assert (c["members"], c["retrain_members"], c["images"]) == (6, 4, 400)
  assert "4 prune-retrain cycles x 80 images" in costs.format_plan(p, costs.counts(p))
