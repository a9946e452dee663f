"""The ship decision through the binary: target, speed, download size, no gate language.

The test plays a user who followed TensorFlow Model Optimization's tutorials on a tiny tf_keras
digits classifier (raw pixels in, its own `Rescaling`; a Dense(64) layer so that sizes are the
weights', not the flatbuffer's) and brings five files to `eval/audit.py`:

  * `x16`: post-training 16x8 (int16 activations): XNNPACK takes none of its ops, so it runs on
    the reference kernels — about 10x the float file's latency here;
  * `dyn`: dynamic-range int8 (float activations);
  * `u8`: full int8 with uint8 input and output (what integer-only hardware runs);
  * `i8f`: full int8 with float input and output;
  * `pruned`: the float32 file of the model pruned from 50% to 80% sparsity with tfmot and stripped: as
    many bytes as the float file, a fraction of its gzip size.

One audit with the defaults, then the same run again with `--size=gzip` and with
`--target=integer_only` (these change only the decision: the run's files are reused).
"""

import json
import re

import pytest
import tensorflow as tf
import tensorflow_model_optimization as tfmot

from tests.e2e import audit_binary
from tests.e2e import user_files
from tf_forget.compat import keras2
from tf_forget.data import registry

COMMON = [
  "--executor=inline",
  "--deploy_encoding=plain",
  "--dataset=folder:images",
  "--reference=model.keras",
  "--candidate=x16=x16.tflite",
  "--candidate=dyn=dyn.tflite",
  "--candidate=u8=u8.tflite",
  "--candidate=i8f=i8f.tflite",
  "--candidate=pruned=pruned.tflite",
  "--out=run",
  "--summary=summary.md",
]


def _model(train, seed=0):
  keras = keras2.keras()
  keras.utils.set_random_seed(seed)
  model = keras.Sequential(
    [
      keras.Input((8, 8, 1)),
      keras.layers.Rescaling(1 / 255.0),
      keras.layers.Conv2D(8, 3, activation="relu"),
      keras.layers.Flatten(),
      keras.layers.Dense(64, activation="relu"),
      keras.layers.Dense(10),
    ]
  )
  model.compile(
    "adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"]
  )
  model.fit(train.images.astype("float32"), train.labels, epochs=15, batch_size=64, verbose=0)
  return model


def _pruned(model, train):
  """The tutorial's pruning: the Dense and Conv2D layers from 50% to 75% sparsity while
  fine-tuning, then stripped."""
  keras = keras2.keras()
  sparsity = tfmot.sparsity.keras
  steps = -(-len(train.labels) // 64) * 15
  schedule = sparsity.PolynomialDecay(0.5, 0.75, begin_step=0, end_step=steps // 2)
  wrap = lambda layer: (
    sparsity.prune_low_magnitude(layer, pruning_schedule=schedule)
    if isinstance(layer, (keras.layers.Dense, keras.layers.Conv2D))
    else layer
  )
  pruned = keras.models.clone_model(model, clone_function=wrap)
  pruned.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
  pruned.fit(
    train.images.astype("float32"),
    train.labels,
    epochs=15,
    batch_size=64,
    verbose=0,
    callbacks=[sparsity.UpdatePruningStep()],
  )
  return sparsity.strip_pruning(pruned)


def _convert(model, train, kind):
  converter = tf.lite.TFLiteConverter.from_keras_model(model)
  if kind == "float32":
    return converter.convert()
  converter.optimizations = [tf.lite.Optimize.DEFAULT]
  if kind == "dyn":
    return converter.convert()
  converter.representative_dataset = lambda: (
    [train.images[i : i + 1].astype("float32")] for i in range(100)
  )
  if kind == "x16":
    converter.target_spec.supported_ops = [
      tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8
    ]
    return converter.convert()
  converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
  if kind == "u8":
    converter.inference_input_type = converter.inference_output_type = tf.uint8
  return converter.convert()


@pytest.fixture(scope="module")
def user(tmp_path_factory):
  root = tmp_path_factory.mktemp("ship")
  data = registry.get("digits")
  train, test = data.load("train"), data.load("test")
  user_files.write_pngs(root / "images", test)
  model = _model(train)
  model.save(str(root / "model.keras"))
  for kind in ("x16", "dyn", "u8", "i8f"):
    (root / f"{kind}.tflite").write_bytes(_convert(model, train, kind))
  (root / "pruned.tflite").write_bytes(_convert(_pruned(model, train), train, "dyn"))
  return root


def _audit(root, *extra):
  result = audit_binary.in_process([*COMMON, *extra], root)
  assert result.returncode == 0, result.stderr[-3000:]
  report = json.loads((root / "run" / "report.json").read_text())
  rows = {r["variant"]: r for r in report["tables"]["verdict"]}
  return result, report["recommendation"], rows, (root / "summary.md").read_text()


@pytest.fixture(scope="module")
def default(user):
  return _audit(user)


def test_a_file_on_the_reference_kernels_is_too_slow_and_says_why(default):
  result, rec, rows, _ = default
  x16 = rows["user_x16"]
  assert x16["verdict"] == "too slow"
  assert "x the float reference's latency at batch" in x16["reason"]
  assert "reference kernels, 0/" in x16["reason"] and "--max_latency_ratio of 2x" in x16["reason"]
  assert x16["latency_vs_dense_low"] > 2
  assert rec["variant"] != "user_x16"
  line = next(u for u in rec["users"] if u.startswith("Your x16 file"))
  assert "too slow" in line and line in result.stdout


def test_no_gate_set_means_no_gate_language(default):
  result, rec, _, summary = default
  assert not re.search(r"\bgates?\b", " ".join(rec["users"]))
  assert "pass every gate" not in rec["rule"]
  assert "### tf_forget audit — no gate set" in summary and "every gate holds" not in summary


def test_download_sizes_reach_the_terminal_and_the_summary(default):
  result, rec, rows, summary = default
  pruned = rows["user_pruned"]
  assert pruned["gzip_bytes"] < 0.6 * pruned["size_bytes"]
  assert "gzip" in rec["why"] and "gzip" in summary
  assert f"gzip {pruned['gzip_bytes'] / 1024:.1f} KiB" in summary
  assert rec["why"] in result.stdout


def test_gzip_size_decides_for_the_pruned_file(user):
  """With a 3-point budget (the pruned file loses about 1 point, a few examples of 500 either
  way on another machine) the pruned file is eligible: by bytes it is `dyn`'s size and does not
  ship, and the recommendation says that gzip would choose it; under --size=gzip it ships."""
  _, rec, rows, summary = _audit(user, "--max_accuracy_drop=0.03")
  assert rows["user_pruned"]["verdict"] in ("pass", "dominated")
  assert rec["variant"] != "user_pruned"
  assert rec["size_note"].startswith(
    "Weighed by gzip size (the download), the rule would choose user_pruned"
  )
  assert rec["size_note"] in summary
  _, rec_gz, _, _ = _audit(user, "--max_accuracy_drop=0.03", "--size=gzip")
  assert rec_gz["variant"] == "user_pruned" and "gzip size (the download)" in rec_gz["rule"]


def test_integer_only_target_refuses_float_io_and_dynamic_range_files(user):
  _, rec, rows, _ = _audit(user, "--target=integer_only")
  assert rows["user_dyn"]["verdict"] == "not for target"
  assert "dynamic-range int8: its activations are float" in rows["user_dyn"]["reason"]
  assert rows["user_i8f"]["verdict"] == "not for target"
  assert "its input is float32" in rows["user_i8f"]["reason"]
  assert rows["user_pruned"]["verdict"] == "not for target"  # dynamic range
  assert rows["user_u8"]["verdict"] in ("recommended", "pass", "dominated")
  assert rec["variant"] in ("user_u8", "dense")
  assert any("not the integer_only target's" in c for c in rec["caveats"])
