"""Real files as users have them — every common input layout, and input scaling.

The test plays a user of TensorFlow's "Post-training integer quantization" tutorial on digits
(8x8 grey images): in a subprocess with Keras 3 (`import keras`, no TF_USE_LEGACY_KERAS) it
builds the tutorial's shape of model, `keras.Input((8, 8))` -> `Reshape((8, 8, 1))` -> conv
layers (with batch normalization) -> `Dense(10)`, trains it on pixels scaled to [0, 1], and
converts it with the plain converter (`from_keras_model`) to the files a user has:

    float.tflite    float32, input [-1, 8, 8] (no channel axis)
    dynamic.tflite  dynamic-range int8
    uint8.tflite    full integer, uint8 input and output (`inference_input_type = tf.uint8`)
    fixed.tflite    float32 with a fixed batch, input [1, 8, 8]
    nchw.tflite     float32 taking channels first, input [-1, 1, 8, 8] (as from PyTorch)

plus a tf_keras model with input [N, 8, 8] that rescales raw pixels itself (`tfk.keras`).
They are audited on the digits test split as PNGs, through the binary (`audit_binary.audit`: the
`--preprocess=unit` run and the refusal) or the command's `main` in this process (the others):

  * with `--preprocess=unit` every file is accepted; every stored top-1 equals an independent
    LiteRT run of the file here (the test's own feeding: x / 255, the channel axis dropped or
    moved first, uint8 quantized with the file's own scale and zero point), and the report's
    top-1 and flip counts equal those computed from it;
  * without it the audit is refused in one line naming --preprocess=unit, nothing written
    (the reference scores far lower on raw pixels: `tf_forget.evaluate.input_scaling`); with
    `--input_scaling_check=off` it runs, the uint8 file (which quantizes raw pixels with its
    own scale) beats its reference, and the verdict's first caveat says the inputs are
    probably mis-scaled (`tf_forget.report.verdict_sentences.misscaled_caveat`);
  * the tf_keras reference without a channel axis is imported, converted (dynamic range and
    full int8, calibrated on the images) and analysed layer by layer.

Golden values are the interpreter's own outputs on the test's own inputs, not the audit's code.
"""

import json
import os
import subprocess
import sys
import types

from ai_edge_litert import interpreter as litert
import numpy as np
import pandas as pd
import pytest
import tensorflow as tf

from tests.e2e import audit_binary
from tests.e2e import user_files
from tf_forget.artifacts import predictions
from tf_forget.compat import keras2
from tf_forget.data import input_layout
from tf_forget.data import registry
from tf_forget.evaluate import input_scaling
from tf_forget.evaluate import scaling_evidence
from tf_forget.report.words import verdict_sentences

KERAS3_FILES = '''
"""The tutorial's model and files, made with Keras 3 as a user makes them."""
import sys
import numpy as np
import keras
import tensorflow as tf

data = np.load(sys.argv[1])
train, labels = data["images"].astype("float32") / 255.0, data["labels"]
L = keras.layers
keras.utils.set_random_seed(0)
model = keras.Sequential([
    keras.Input((8, 8)), L.Reshape((8, 8, 1)),
    L.Conv2D(16, 3), L.BatchNormalization(), L.ReLU(),
    L.Conv2D(16, 3), L.BatchNormalization(), L.ReLU(),
    L.Flatten(), L.Dense(10)])
model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(train, labels, epochs=15, batch_size=64, verbose=0)


def convert(m, dynamic=False, integer=False):
  converter = tf.lite.TFLiteConverter.from_keras_model(m)
  if dynamic or integer:
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
  if integer:
    converter.representative_dataset = lambda: ([train[i:i + 1]] for i in range(100))
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    converter.inference_input_type = tf.uint8
    converter.inference_output_type = tf.uint8
  return converter.convert()


def wrapped(shape, batch=None, channels_first=False):
  inp = keras.Input(shape, batch_size=batch)
  x = L.Reshape((8, 8))(L.Permute((2, 3, 1))(inp)) if channels_first else inp
  return keras.Model(inp, model(x))


files = {"float": convert(model), "dynamic": convert(model, dynamic=True),
         "uint8": convert(model, integer=True), "fixed": convert(wrapped((8, 8), batch=1)),
         "nchw": convert(wrapped((1, 8, 8), channels_first=True))}
for name, content in files.items():
  with open(f"{name}.tflite", "wb") as f:
    f.write(content)
'''
CANDIDATES = {"dyn": "dynamic", "u8": "uint8", "fixed": "fixed", "nchw": "nchw"}
TUTORIAL = [
  "--dataset=folder:images",
  "--reference=float.tflite",
  *[f"--candidate={name}={stem}.tflite" for name, stem in CANDIDATES.items()],
  *user_files.COMMON,
]


def _keras3_env():
  env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
  env.pop("TF_USE_LEGACY_KERAS", None)
  return env


def _tf_keras_model(train):
  """A tf_keras model taking [N, 8, 8] raw pixels, rescaling them itself."""
  keras = keras2.keras()
  keras.utils.set_random_seed(0)
  layers = keras.layers
  model = keras.Sequential(
    [
      keras.Input((8, 8)),
      layers.Reshape((8, 8, 1)),
      layers.Rescaling(1 / 255.0),
      layers.Conv2D(8, 3, activation="relu"),
      layers.Flatten(),
      layers.Dense(10),
    ]
  )
  model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
  model.fit(
    train.images[..., 0].astype("float32"), train.labels, epochs=8, batch_size=64, verbose=0
  )
  return model


@pytest.fixture(scope="module")
def user(tmp_path_factory):
  """The user's directory: images/<class>/<i>.png (the digits test split), the Keras 3
  tutorial's five `.tflite` files and tfk.keras."""
  root = tmp_path_factory.mktemp("tutorial")
  data = registry.get("digits")
  train, test = data.load("train"), data.load("test")
  user_files.write_pngs(root / "images", test)
  np.savez(root / "train.npz", images=train.images[..., 0], labels=train.labels)
  (root / "make.py").write_text(KERAS3_FILES)
  made = subprocess.run(
    [sys.executable, "make.py", "train.npz"],
    cwd=root,
    env=_keras3_env(),
    text=True,
    capture_output=True,
    timeout=600,
    check=False,
  )
  assert made.returncode == 0, made.stderr[-3000:]
  _tf_keras_model(train).save(str(root / "tfk.keras"))
  return root


def _png_images(root):
  """(relative names, uint8 [N, 8, 8, 1], labels) of images/ in the audit's order (sorted)."""
  names = sorted(
    p.relative_to(root / "images").as_posix() for p in (root / "images").rglob("*.png")
  )
  images = np.stack(
    [tf.io.decode_png(tf.io.read_file(str(root / "images" / n))).numpy() for n in names]
  )
  return names, images, np.array([int(n.split("/")[0]) for n in names])


def _litert_top1(path, images, divisor=255.0):
  """Top-1 of `path` on uint8 images [N, 8, 8, 1] divided by `divisor` (255: scaled to
  [0, 1]; 1: raw pixels), one example per invoke, fed as the file's input says: the channel
  axis dropped ([-1, 8, 8]) or first ([-1, 1, 8, 8]), a uint8 input quantized with its own
  scale and zero point (round half up: no value here is a half)."""
  interp = litert.Interpreter(model_path=str(path))
  interp.allocate_tensors()
  inp, out = interp.get_input_details()[0], interp.get_output_details()[0]
  top1 = []
  for image in images.astype(np.float32) / np.float32(divisor):
    x = image[:, :, 0] if len(inp["shape"]) == 3 else image[None, :, :, 0]
    if inp["dtype"] == np.uint8:
      scale, zero = inp["quantization"]
      x = np.clip(np.floor(x / scale + 0.5) + zero, 0, 255).astype(np.uint8)
    interp.set_tensor(inp["index"], x[None])
    interp.invoke()
    top1.append(int(np.argmax(interp.get_tensor(out["index"])[0])))
  return np.array(top1)


def _report(out):
  return json.loads((out / "report.json").read_text())


@pytest.fixture(scope="module")
def unit(user):
  """The tutorial's files audited with --preprocess=unit: (out, CompletedProcess)."""
  result = audit_binary.audit([*TUTORIAL, "--preprocess=unit", "--out=unit"], user)
  assert result.returncode == 0, result.stderr[-3000:]
  return user / "unit", result


def test_every_layout_and_dtype_is_audited_as_the_interpreter_runs_it(user, unit):
  out, result = unit
  assert result.stderr == ""
  names, images, labels = _png_images(user)
  report = _report(out)
  top = {row["variant"]: row for row in report["tables"]["k1_topline"]}
  reference = _litert_top1(user / "float.tflite", images)
  assert report["variants"]["dense"]["top1"] == pytest.approx(np.mean(reference == labels))
  assert np.mean(reference == labels) > 0.9
  for variant, stem in [("dense", "float")] + [(f"user_{n}", s) for n, s in CANDIDATES.items()]:
    got = predictions.read(str(out / "predictions" / variant / "0" / "test.npz"))
    assert got["ids"].tolist() == list(range(len(names)))
    assert got["labels"].tolist() == labels.tolist()
    want = _litert_top1(user / f"{stem}.tflite", images)
    assert got["topk"][:, 0].tolist() == want.tolist(), variant
    assert report["variants"][variant]["top1"] == pytest.approx(np.mean(want == labels))
    if variant != "dense":  # the flips against the reference, from the interpreter's top-1
      broken = int(np.sum((reference == labels) & (want != labels)))
      fixed = int(np.sum((reference != labels) & (want == labels)))
      assert (top[variant]["broken"], top[variant]["fixed"]) == (broken, fixed), variant


def test_files_in_other_layouts_are_compared_tensor_by_tensor(unit):
  out, _ = unit
  for name in CANDIDATES:
    doc = json.loads((out / "layers" / "dense" / "0" / f"user_{name}.json").read_text())
    assert not doc.get("error") and doc["rows"], name
  nchw = json.loads((out / "layers" / "dense" / "0" / "user_nchw.json").read_text())
  # The same network fed the same pixels transposed: no error anywhere but rounding.
  assert max(r["subsets"]["stable"]["nmse"] or 0.0 for r in nchw["rows"]) < 1e-6


def test_without_preprocess_unit_it_is_refused_in_one_line(user, tmp_path):
  out = tmp_path / "raw"
  line = audit_binary.one_line(audit_binary.audit([*TUTORIAL, f"--out={out}"], user))
  assert line.startswith(f"audit: error: reference {user / 'float.tflite'} scores ")
  assert (
    "with raw pixels (0-255) but " in line
    and "% with --preprocess=unit on 256 test images (paired, exact McNemar p = " in line
    and "): your model probably expects "
    "--preprocess=unit; give it, or --input_scaling_check=off to audit as given"
    in line
  ), line
  assert not out.exists()


def test_the_override_audits_as_given_and_the_verdict_says_mis_scaled(user):
  result = audit_binary.in_process([*TUTORIAL, "--input_scaling_check=off", "--out=raw"], user)
  assert result.returncode == 0, result.stderr[-3000:]
  report = _report(user / "raw")
  _, images, labels = _png_images(user)
  dense = _litert_top1(user / "float.tflite", images, divisor=1.0)
  u8 = _litert_top1(user / "uint8.tflite", images, divisor=1.0)  # every pixel > 0 -> 255
  assert report["variants"]["dense"]["top1"] == pytest.approx(np.mean(dense == labels))
  assert report["variants"]["user_u8"]["top1"] == pytest.approx(np.mean(u8 == labels))
  assert np.mean(u8 == labels) > np.mean(dense == labels) + 0.1
  caveat = report["recommendation"]["caveats"][0]
  fixed = int(np.sum((dense != labels) & (u8 == labels)))
  broken = int(np.sum((dense == labels) & (u8 != labels)))
  assert caveat.startswith(
    f"user_u8 beats its reference by +"
    f"{100 * (fixed - broken) / len(labels):.2f} pt ({fixed} examples "
    f"fixed, {broken} broken; exact McNemar p = "
  ), caveat
  assert "the inputs are probably mis-scaled — check --preprocess" in caveat
  assert "probably mis-scaled" in (user / "raw" / "report.html").read_text()


def test_a_tf_keras_reference_without_a_channel_axis_is_converted_and_analysed(user):
  result = audit_binary.in_process(
    [
      "--dataset=folder:images",
      "--reference=tfk.keras",
      "--compress=dynamic_int8,full_int8",
      "--calibration=folder:images",
      "--out=tfk",
      *user_files.COMMON,
    ],
    user,
  )
  assert result.returncode == 0, result.stderr[-3000:]
  out = user / "tfk"
  _, images, labels = _png_images(user)
  model = keras2.keras().models.load_model(str(user / "tfk.keras"))
  want = np.argmax(model.predict(images[..., 0].astype(np.float32), verbose=0), axis=1)
  for variant in ("dense", "dynamic_int8", "full_int8"):
    io = json.loads(
      (
        out / "tflite" / "dense" / "0" / f"{'float32' if variant == 'dense' else variant}.json"
      ).read_text()
    )["io"]
    assert io["inputs"][0]["shape"] == [-1, 8, 8], variant
  dense = predictions.read(str(out / "predictions" / "dense" / "0" / "test.npz"))
  assert dense["topk"][:, 0].tolist() == want.tolist()
  keras_top1 = predictions.read(str(out / "predictions_keras" / "dense" / "0" / "test.npz"))
  assert keras_top1["topk"][:, 0].tolist() == want.tolist()
  assert _report(out)["variants"]["full_int8"]["top1"] > np.mean(want == labels) - 0.05
  layers = json.loads((out / "layers" / "dense" / "0" / "full_int8.json").read_text())
  assert layers["rows"] and not layers.get("error")  # the debugger fed [N, 8, 8] inputs


# The lines of `tf_forget.evaluate.input_scaling` for the decisions of
# `tf_forget.evaluate.scaling_evidence` (whose rule tests/evaluate/scaling_evidence_test.py covers), on
# predictions made up to sit on either side of its thresholds.
def _top1(labels, right):
  """Predictions that are right exactly where `right` is."""
  return np.where(right, labels, (labels + 1) % 10)


def test_scaling_refusal_names_the_better_preprocessing_and_its_evidence():
  labels = np.arange(256) % 10
  given = _top1(labels, np.arange(256) < 120)  # 46.9%
  unit = _top1(labels, np.arange(256) < 250)  # 97.7%, every given-right one right too
  decision = scaling_evidence.verdict(labels, {"raw": given, "unit": unit}, "raw", 10)
  assert (decision.kind, decision.other.name) == ("better", "unit")
  line = input_scaling.message("m.tflite", decision, "raw", 10)
  assert line == (
    "reference m.tflite scores 46.9% with raw pixels (0-255) but 97.7% with "
    "--preprocess=unit on 256 test images (paired, exact McNemar p = 1e-39): your "
    "model probably expects --preprocess=unit; give it, or "
    "--input_scaling_check=off to audit as given"
  )


def test_scaling_refuses_chance_and_says_what_to_check():
  labels = np.arange(256) % 10
  chance = _top1(labels, np.arange(256) % 10 == 0)  # 10%: chance for 10 classes
  decision = scaling_evidence.verdict(labels, {"symmetric": chance, "raw": chance}, "symmetric", 10)
  assert decision.kind == "chance"
  line = input_scaling.message("m.keras", decision, "symmetric", 10)
  assert line.startswith(
    "reference m.keras scores 10.2% with --preprocess=symmetric on 256 "
    "test images, no better than chance (10%, 10 classes)"
  )
  assert line.endswith("or --input_scaling_check=off to audit as given")
  # Raw pixels right, a given unit wrong: the line says to drop the flag.
  good = _top1(labels, np.arange(256) < 240)
  decision = scaling_evidence.verdict(labels, {"unit": chance, "raw": good}, "unit", 10)
  assert "probably expects raw pixels (0-255); drop --preprocess=unit, or" in input_scaling.message(
    "m.keras", decision, "unit", 10
  )


def test_scaling_caveat_is_one_sentence_with_the_evidence():
  labels = np.arange(40) % 10
  given = _top1(labels, np.arange(40) < 36)  # 90%; with unit all 40: 4 pairs, p = 0.125
  decision = scaling_evidence.verdict(labels, {"unit": given, "raw": labels}, "unit", 10)
  assert decision.kind == "caveat"
  assert input_scaling.caveat("m.keras", decision, "unit") == (
    "The input scaling check is unsure: reference m.keras scores 90.0% with "
    "--preprocess=unit, as audited, but 100.0% with raw pixels (0-255) on 40 test images "
    "(paired, exact McNemar p = 0.12; it refuses a gain of 2 points at p < 0.001): if your "
    "model takes raw pixels (0-255), drop --preprocess=unit and audit again."
  )


def test_the_candidates_compared_depend_on_channels():
  assert input_scaling.candidates("raw", 1) == ["raw", "unit", "symmetric"]
  assert input_scaling.candidates("unit", 3) == [
    "unit",
    "raw",
    "symmetric",
    "imagenet_caffe",
    "imagenet_torch",
  ]
  assert input_scaling.candidates("mod:fn", 1) == ["mod:fn", "raw", "unit", "symmetric"]


def test_misscaled_caveat_needs_a_significant_one_sided_gain():
  def caveat(broken, fixed, p):
    table = pd.DataFrame(
      [
        {
          "variant": "user_u8",
          "difference": (fixed - broken) / 500,
          "broken": broken,
          "fixed": fixed,
          "mcnemar_p": p,
        }
      ]
    )
    return verdict_sentences.misscaled_caveat(types.SimpleNamespace(tables={"k1_topline": table}))

  assert caveat(36, 115, 8e-11).startswith(
    "user_u8 beats its reference by +15.80 pt (115 "
    "examples fixed, 36 broken; exact McNemar p = 8e-11)"
  )
  assert caveat(5, 9, 0.42) is None  # not significant
  assert caveat(40, 70, 0.0005) is None  # significant, but not many more fixed than broken
  assert caveat(30, 2, 1e-7) is None  # a significant loss is the audit's usual news
  assert verdict_sentences.misscaled_caveat(types.SimpleNamespace(tables={})) is None
  # The input scaling check ran and found the preprocessing right: a fine-tuned file (pruned,
  # clustered, QAT) can beat its reference; the sentence does not blame the scaling.
  table = pd.DataFrame(
    [
      {
        "variant": "user_clustered",
        "difference": 0.0054,
        "broken": 36,
        "fixed": 90,
        "mcnemar_p": 2e-6,
      }
    ]
  )
  checked = verdict_sentences.misscaled_caveat(
    types.SimpleNamespace(tables={"k1_topline": table}), True
  )
  assert "trained further than the reference" in checked and "mis-scaled" not in checked


def test_a_quantized_inputs_range_is_what_its_scale_and_zero_point_cover():
  """By hand: uint8 of scale 1/255, zero point 0 covers [0, 1]; int8 of scale 1, zero point
  -128 covers [0, 255]; float32 covers anything."""
  u8 = input_layout.from_shape((None, 8, 8), "uint8", scale=1 / 255, zero_point=0)
  assert input_scaling.input_range(u8) == pytest.approx((0.0, 1.0))
  i8 = input_layout.from_shape((None, 8, 8, 1), "int8", scale=1.0, zero_point=-128)
  assert input_scaling.input_range(i8) == pytest.approx((0.0, 255.0))
  assert input_scaling.input_range(input_layout.from_shape((None, 8, 8))) is None


def test_clipping_counts_values_beyond_half_a_step():
  values = np.array([-0.004, -0.001, 0.0, 0.5, 1.0, 1.001, 1.003, 255.0])
  # scale 0.004: half a step 0.002 -> -0.004, 1.003 and 255 are out (3 of 8)
  assert input_scaling.clipped_fraction(values, (0.0, 1.0), 0.004) == pytest.approx(3 / 8)


def test_range_rule_names_the_preprocessing_that_fits():
  raw = input_scaling.RAW
  full = {raw: 1.0, "unit": 1.0, "symmetric": 1.0}
  verdict = input_scaling.range_verdict
  assert verdict({raw: 0.51, "unit": 0.0, "symmetric": 0.49}, full, raw) == "unit"
  assert verdict({raw: 0.05, "unit": 0.0}, full, raw) is None  # under 10% outside
  assert verdict({"unit": 0.3, raw: 0.0}, full, "unit") == raw
  # Too narrow a calibration of the right scale (real_files_report_test's worse.tflite: int8
  # for [0, 127.5] fed 0-255): x / 255 fits inside but spans 1 / 127.5 of it, not a fit.
  assert verdict({raw: 0.33, "unit": 0.0}, {raw: 2.0, "unit": 1 / 127.5}, raw) is None
  assert input_scaling.range_use(np.array([0.0, 1.0]), (0.0, 127.5)) == pytest.approx(1 / 127.5)
