"""Why and repair through the audit command: two planted faults found causally and repaired, chosen
on one half of the test examples and reported on the other.

The user's model: an ordinary BN-free CNN (Conv2D -> pool -> SeparableConv2D x2 -> GAP ->
Dense) trained here on the embedded digits, saved as `.keras`, with one fault planted that
keeps the float function (ReLU is positively homogeneous: max |Δlogit| < 1e-4 checked here):
  * weight fault: the second SeparableConv's pointwise input row 5 x100, its depthwise
    channel 5 /100 — the pointwise CONV_2D must be ranked first by the causal ranking (fault
    "weights"), and first by the user-file ranking of the plain converter's int8 file;
  * range fault: the first Conv2D's output channel 6 x100, the next depthwise channel /100 —
    the range diagnosis must name that conv's channel 6, the ranking name that conv first (the
    range diagnosis picks it for the ablation) and call it a range fault,
    and `--repair=auto` must choose `cle` (no bytes: <= 1.05x the int8 file) and recover
    >= 80% of the int8 file's broken examples on the held-out half; `--repair=int16x8`
    beside it (through the binary too) must recover >= 80% on every example;
  * no fault: the model itself — its int8 file forgets nothing significant, so nothing is
    ablated, no repair is made and none is recommended.
Each audit is `eval/audit.py --reference=<fault>.keras --compress=full_int8 --repair=auto`;
the numbers asserted are recomputed from the run's predictions files and the halves' seed,
not read from the report alone.
"""

import json
import os

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

import numpy as np
import pytest

from tests import audit_main
from tests import binary_main
from tests import planted
from tests.e2e import audit_binary
from tests.e2e import user_files
from tf_forget.artifacts import predictions
from tf_forget.compat import keras2
from tf_forget.data import registry
from tf_forget.stats import halves

ARGS = ("--dataset=digits", "--compress=full_int8", *user_files.COMMON)
# The range fault also gets the 16-bit-activation repair, side by side with the search's.
REPAIRS = {"weight": "auto", "range": "auto,int16x8", "none": "auto"}


@pytest.fixture(scope="module")
def audits(tmp_path_factory):
  """{fault: (run directory, audit result)}, and "layers": the model's SeparableConv2D layer
  names (Keras numbers them by how many were made in the process)."""
  root = tmp_path_factory.mktemp("user")
  data = registry.get("digits")
  train, test = data.load("train"), data.load("test")
  keras = keras2.keras()
  base = planted.train(keras, planted.cnn(keras), train.images, train.labels)
  out = {
    "layers": [
      layer.name for layer in base.layers if isinstance(layer, keras.layers.SeparableConv2D)
    ]
  }
  before = base.predict(test.images.astype(np.float32), verbose=0)
  for fault in ("weight", "range", "none"):
    model = keras.models.clone_model(base)
    model.set_weights(base.get_weights())
    if fault != "none":
      planted.plant(model, fault)
    after = model.predict(test.images.astype(np.float32), verbose=0)
    assert np.max(np.abs(after - before)) < 1e-3 * max(1.0, np.max(np.abs(before)))
    model.save(str(root / f"{fault}.keras"))
    (root / f"{fault}_int8.tflite").write_bytes(user_files.convert(model, train, int8=True))
    result = audit_binary.in_process(
      [
        f"--reference={fault}.keras",
        f"--candidate=int8={fault}_int8.tflite",
        f"--out={fault}",
        f"--repair={REPAIRS[fault]}",
        *ARGS,
      ],
      root,
    )
    assert result.returncode in (0, 3), result.stderr[-3000:]
    out[fault] = (str(root / fault), result)
  return out


def _json(run_dir, *parts):
  with open(os.path.join(run_dir, *parts)) as f:
    return json.load(f)


def _top1(run_dir, variant):
  data = predictions.read(os.path.join(run_dir, "predictions", variant, "0", "test.npz"))
  return data["ids"], data["labels"], data["topk"][:, 0]


def _held_out_broken(run_dir, variant, seed):
  """Broken examples (right in float32, wrong in `variant`) on the report half."""
  ids, labels, ref = _top1(run_dir, "dense")
  ids_v, _, top1 = _top1(run_dir, variant)
  assert np.array_equal(ids, ids_v)
  _, report = halves.held_out_halves_by_id(ids, labels, seed)
  return int(np.sum(report & (ref == labels) & (top1 != labels)))


def test_the_weight_fault_is_ranked_first_by_both_rankings(audits):
  run_dir, _ = audits["weight"]
  planted_op = f"{audits['layers'][1]}/Relu"  # the second SeparableConv's pointwise CONV_2D
  doc = _json(run_dir, "layers", "dense", "0", "full_int8.json")
  top = doc["ranking"][0]
  assert doc["ranked_by"] == "ablation" and top["evidence"] == "ablation"
  assert top["op_name"] == "CONV_2D" and planted_op in top["tensor_name"], top["tensor_name"]
  assert top["fault"] == "weights", top
  assert top["recovered"] >= 0.5 * doc["ablation"]["plain"]["broken_forgotten"]
  user = _json(run_dir, "layers", "dense", "0", "user_int8.json")
  first = user["ranking"][0]
  assert first["op_name"] == "CONV_2D" and planted_op in first["tensor_name"], first


def test_the_range_fault_is_named_and_repaired_by_equalization(audits):
  run_dir, _ = audits["range"]
  doc = _json(run_dir, "layers", "dense", "0", "full_int8.json")
  (wide,) = [r for r in doc["ranges"] if r["op_name"] == "CONV_2D"]
  assert wide["channel"] == 6 and wide["ratio"] >= 50
  top = doc["ranking"][0]  # the op writing the wide tensor, ablated for the range diagnosis
  assert top["fault"] == "range" and top["op_index"] == wide["op_index"], top
  assert top["evidence"] == "ablation" and "range" in top["picked_by"], top
  meta = _json(run_dir, "tflite", "dense", "0", "full_int8~auto.json")
  assert meta["repair"]["chosen"] == "cle"
  plain = _json(run_dir, "tflite", "dense", "0", "full_int8.json")
  assert meta["size_bytes"]["raw"] <= 1.05 * plain["size_bytes"]["raw"]
  seed = meta["repair"]["halves"]["seed"]
  before = _held_out_broken(run_dir, "full_int8", seed)
  after = _held_out_broken(run_dir, "full_int8~auto", seed)
  assert before >= 5 and after <= 0.2 * before, (before, after)
  report = _json(run_dir, "report.json")
  (row,) = [r for r in report["tables"]["repair"] if r["variant"] == "full_int8~auto"]
  assert row["examples"] == "held-out half" and row["broken_int8"] == before
  assert row["broken_repaired"] == after
  # --repair=int16x8 beside it: 16-bit activations see the narrow channels too.
  (wide16,) = [r for r in report["tables"]["repair"] if r["variant"] == "full_int8~int16x8"]
  assert wide16["examples"] == "all" and wide16["repair"] == "int16x8"
  assert wide16["broken_repaired"] <= 0.2 * wide16["broken_int8"], wide16
  why = " ".join(report["recommendation"]["why_forgot"])
  assert "channel 6 spans" in why and "activation range" in why


def test_a_model_without_a_fault_gets_no_repair(audits):
  run_dir, result = audits["none"]
  doc = _json(run_dir, "layers", "dense", "0", "full_int8.json")
  assert doc["ranked_by"] == "error statistic", doc["flips"]
  assert not os.path.exists(os.path.join(run_dir, "tflite", "dense", "0", "full_int8~auto.tflite"))
  assert "no repair of dense/0 full_int8: it forgot nothing significant" in result.stdout
  report = _json(run_dir, "report.json")
  assert not report["recommendation"]["variant"].startswith("full_int8~")
  assert "why_forgot" not in report["recommendation"]
  assert any(
    "forgot nothing significant" in line for line in report["recommendation"].get("repairs", [])
  )


def test_equalizing_a_keras_3_reference_is_refused_before_anything_is_written(tmp_path):
  # Equalization clones tf_keras layers; a Keras 3 file (`import keras`, TensorFlow 2.21's
  # default) asked for --repair=cle is one line at plan time (--repair=auto skips cle).
  import keras as keras3

  model = keras3.Sequential(
    [
      keras3.Input((8, 8, 1)),
      keras3.layers.Rescaling(1 / 255.0),
      keras3.layers.Flatten(),
      keras3.layers.Dense(10),
    ]
  )
  model.save(str(tmp_path / "k3.keras"))
  out = tmp_path / "run"
  line = binary_main.run_argv(
    audit_main.main,
    "audit",
    [
      "--dataset=digits",
      "--reference=k3.keras",
      "--compress=full_int8",
      "--repair=cle",
      f"--out={out}",
      *user_files.COMMON,
    ],
    tmp_path,
  )
  assert isinstance(line, str) and "\n" not in line, line
  assert (
    line.startswith("audit: error: --repair=cle needs tf_keras references: ")
    and "is a Keras 3 model" in line
  ), line
  assert not out.exists()
