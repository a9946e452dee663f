"""The user's own model, `.tflite` files and data enter the audit (the binary).

The test plays the user: it trains tiny Keras classifiers with plain tf_keras (not tf_forget's
training) on scikit-learn's digits, writes the test split as a PNG folder (one folder per
class), converts the models with the plain TFLite converter to full int8 and to float32, and
runs the audit command `--reference=... --candidate=...` through its `main` in this process
(`audit_binary.in_process`; the process itself: `test_bad_input_through_the_binary_...`).
"""

import dataclasses
import json
import os

import numpy as np
import pytest
from scipy import stats
import tensorflow as tf

from tests import audit_main
from tests import binary_main
from tests.e2e import audit_binary
from tests.e2e import user_files
from tf_forget.artifacts import layout
from tf_forget.compat import keras2
from tf_forget.config import tree
from tf_forget.data import registry
from tf_forget.report import collect

COMMON = ["--executor=inline", "--deploy_encoding=plain"]


@pytest.fixture(scope="module")
def user(tmp_path_factory):
  """The user's directory: images/<class>/<i>.png, model<k>.keras, int8_<k>.tflite,
  float_<k>.tflite for k = 0, 1, 2."""
  root = tmp_path_factory.mktemp("user")
  data = registry.get("digits")
  train, test = data.load("train"), data.load("test")
  for i, (image, label) in enumerate(zip(test.images, test.labels)):
    folder = root / "images" / str(int(label))
    folder.mkdir(parents=True, exist_ok=True)
    tf.io.write_file(str(folder / f"{i:04d}.png"), tf.io.encode_png(image))
  for k in range(3):
    model = user_files.train(k, train, epochs=10)
    model.save(str(root / f"model{k}.keras"))
    (root / f"int8_{k}.tflite").write_bytes(user_files.convert(model, train, int8=True))
    (root / f"float_{k}.tflite").write_bytes(user_files.convert(model, train, int8=False))
  return root


@pytest.fixture(scope="module")
def k1(user):
  """One audit of reference model0.keras, candidate int8_0.tflite and --compress=dynamic_int8."""
  args = [
    "--dataset=folder:images",
    "--reference=model0.keras",
    "--candidate=int8=int8_0.tflite",
    "--compress=dynamic_int8",
    "--out=k1",
    *COMMON,
  ]
  result = audit_binary.in_process(args, user)
  assert result.returncode == 0, result.stderr[-3000:]
  return args, result


def test_k1_audit_reports_and_ships_the_users_file(user, k1):
  _, result = k1
  assert result.stderr == ""
  report = json.loads((user / "k1" / "report.json").read_text())
  assert set(report["variants"]) == {"dense", "dynamic_int8", "user_int8"}
  assert all(v["members"] == 1 for v in report["variants"].values())
  assert report["config"]["user"]["candidates"] == [["int8", [str(user / "int8_0.tflite")]]]
  manifest = json.loads((user / "k1" / "deploy" / "manifest.json").read_text())
  shipped = {f["variant"]: f for f in manifest["files"]}
  assert shipped["user_int8"]["sha256"] == audit_binary.sha256(user / "int8_0.tflite")
  assert audit_binary.sha256(
    user / "k1" / "deploy" / "user_int8" / "0.tflite"
  ) == audit_binary.sha256(user / "int8_0.tflite")
  assert "your model (keras, 1 reference, 8x8x1 -> 10 classes)" in result.stdout
  assert "one network (K = 1)" in result.stdout


def test_k1_predictions_are_the_interpreters_on_the_png_folder(user, k1):
  """The stored predictions of the user's file equal running it here on the PNGs."""
  del k1
  from tf_forget.artifacts import predictions

  got = predictions.read(str(user / "k1" / "predictions" / "user_int8" / "0" / "test.npz"))
  interp = tf.lite.Interpreter(model_path=str(user / "int8_0.tflite"))
  interp.allocate_tensors()
  inp, out = interp.get_input_details()[0], interp.get_output_details()[0]
  files = sorted(
    p.relative_to(user / "images").as_posix() for p in (user / "images").rglob("*.png")
  )
  scale, zero = inp["quantization"]
  top1 = []
  for name in files:
    image = tf.io.decode_png(tf.io.read_file(str(user / "images" / name))).numpy()
    q = np.clip(np.round(image.astype(np.float32) / scale + zero), -128, 127).astype(np.int8)
    interp.set_tensor(inp["index"], q[None])
    interp.invoke()
    top1.append(int(np.argmax(interp.get_tensor(out["index"])[0])))
  assert got["ids"].tolist() == list(range(len(files)))
  assert got["labels"].tolist() == [int(n.split("/")[0]) for n in files]
  assert got["topk"][:, 0].tolist() == top1


def test_rerun_reuses_and_a_changed_candidate_is_redone(user, k1):
  args, _ = k1
  os.remove(layout.finished_file(str(user / "k1")))  # the stages' own reuse: no finished-run record
  again = audit_binary.in_process(args, user)
  assert again.returncode == 0, again.stderr[-3000:]
  assert "1 of 1 candidate files already stored" in again.stdout
  assert "redo" not in again.stdout
  original = (user / "int8_0.tflite").read_bytes()
  try:
    (user / "int8_0.tflite").write_bytes((user / "int8_1.tflite").read_bytes())
    changed = audit_binary.in_process(args, user)
  finally:
    (user / "int8_0.tflite").write_bytes(original)
  assert changed.returncode == 0, changed.stderr[-3000:]
  assert "redo user_int8/0: its file changed since it was stored" in changed.stdout
  assert "redo user_int8/0 test: its .tflite changed since it was evaluated" in changed.stdout
  assert "1 of 1 references already imported" in changed.stdout


def test_three_references_and_float_tflite_references(user):
  keras_refs = audit_binary.in_process(
    [
      "--dataset=folder:images",
      "--reference=model0.keras,model1.keras,model2.keras",
      "--candidate=int8=int8_0.tflite,int8_1.tflite,int8_2.tflite",
      "--out=k3",
      *COMMON,
    ],
    user,
  )
  assert keras_refs.returncode == 0, keras_refs.stderr[-3000:]
  report = json.loads((user / "k3" / "report.json").read_text())
  assert report["variants"]["user_int8"]["members"] == 3
  assert "K = 3 networks" in keras_refs.stdout
  tflite_refs = audit_binary.in_process(
    [
      "--dataset=folder:images",
      "--reference=float_0.tflite",
      "--candidate=int8=int8_0.tflite",
      "--out=tf1",
      *COMMON,
    ],
    user,
  )
  assert tflite_refs.returncode == 0, tflite_refs.stderr[-3000:]
  assert audit_binary.sha256(
    user / "tf1" / "tflite" / "dense" / "0" / "float32.tflite"
  ) == audit_binary.sha256(user / "float_0.tflite")
  assert not (user / "tf1" / "members" / "dense" / "0" / "model.keras").exists()
  # Why: each candidate file is compared tensor by tensor with its reference's
  # float32 file (the user's own float .tflite here); made by one converter from one model,
  # every computing op matches by name. No full int8 file was made: no per-layer analysis.
  for run, members in (("k3", 3), ("tf1", 1)):
    for k in range(members):
      layers = user / run / "layers" / "dense" / str(k)
      doc = json.loads((layers / "user_int8.json").read_text())
      assert doc["format"] == "user_int8" and doc["unmatched"] == 0, doc["matched"]
      assert doc["matched"]["name"] >= 3 and doc["matched"]["position"] == 0
      assert not (layers / "full_int8.json").exists()
  table = json.loads((user / "tf1" / "report.json").read_text())["tables"]["layers"]
  assert {r["format"] for r in table} == {"user_int8"}


@pytest.mark.parametrize(
  "args, expected",
  [
    (["--reference=nope.keras", "--candidate=int8=int8_0.tflite"], "nope.keras does not exist"),
    (["--candidate=int8=int8_0.tflite"], "give it with --reference"),
    (["--reference=model0.keras"], "nothing to audit against the reference"),
    (
      ["--reference=model0.keras", "--members=3", "--compress=float16"],
      "--members describes a population tf_forget trains",
    ),
    (["--reference=model0.keras", "--candidate=int8=model1.keras"], "not a TFLite flatbuffer"),
    (
      ["--reference=model0.keras", "--candidate=int8=int8_0.tflite,int8_1.tflite"],
      "has 2 files for 1 references",
    ),
    (["--reference=model0.keras", "--candidate=Bad-Name=int8_0.tflite"], "bad candidate name"),
    (["--reference=float_0.tflite", "--compress=float16"], "needs Keras references"),
    (["--reference=model0.keras", "--compress=full_int8"], "give --calibration=DATA"),
    (
      ["--reference=model0.keras", "--compress=float16", "--calibration=folder:images"],
      "--calibration calibrates --compress=full_int8",
    ),
    (
      ["--reference=model0.keras", "--compress=full_int8", "--calibration=folder:nowhere"],
      "does not exist",
    ),
    (
      ["--reference=model0.keras", "--compress=float16", "--class_names=a,b,c,d,e,f,g,h,i"],
      "is not a class of class_names",
    ),
  ],
)
def test_bad_input_is_one_line_and_writes_nothing(user, args, expected):
  """The binary's `main` in this process (`binary_main.run_argv`): its one line, exit 1."""
  out = user / "refused"
  line = binary_main.run_argv(
    audit_main.main, "audit", ["--dataset=folder:images", f"--out={out}", *args, *COMMON], user
  )
  assert isinstance(line, str) and "\n" not in line, line
  assert line.startswith("audit: error:") and expected in line, line
  assert not out.exists()


@pytest.mark.parametrize(
  "args, expected",
  [
    (["--reference=nope.keras", "--candidate=int8=int8_0.tflite"], "nope.keras does not exist"),
    (["--reference=model0.keras", "--candidate=Bad-Name=int8_0.tflite"], "bad candidate name"),
  ],
)
def test_bad_input_through_the_binary_is_one_line_and_writes_nothing(user, args, expected):
  out = user / "refused"
  result = audit_binary.audit(["--dataset=folder:images", f"--out={out}", *args, *COMMON], user)
  line = audit_binary.one_line(result)
  assert line.startswith("audit: error:") and expected in line, line
  assert not out.exists()


def test_a_model_of_other_classes_is_refused(user, tmp_path):
  nine = tmp_path / "nine"
  for label in range(9):
    (nine / str(label)).mkdir(parents=True)
    src = next((user / "images" / str(label)).iterdir())
    (nine / str(label) / src.name).write_bytes(src.read_bytes())
  result = audit_binary.in_process(
    [
      f"--dataset=folder:{nine}",
      "--reference=model0.keras",
      "--compress=float16",
      f"--out={tmp_path / 'out'}",
      *COMMON,
    ],
    user,
  )
  assert "outputs 10 classes but the data set has 9" in audit_binary.one_line(result)
  assert not (tmp_path / "out").exists()


def test_preprocess_feeds_a_model_trained_on_normalized_images(user):
  """A model without its own preprocessing (trained on x / 127.5 - 1) is audited right with
  --preprocess=symmetric: the float32 file's top-1 equals the Keras model's on the same
  inputs; fed the raw pixels instead, it is far off (a shift, unlike a scale, changes a ReLU
  network's argmax)."""
  keras = keras2.keras()
  data = registry.get("digits")
  train, test = data.load("train"), data.load("test")
  norm = lambda x: x / np.float32(127.5) - np.float32(1)
  keras.utils.set_random_seed(0)
  model = keras.Sequential(
    [
      keras.Input((8, 8, 1)),
      keras.layers.Conv2D(8, 3, activation="relu"),
      keras.layers.Flatten(),
      keras.layers.Dense(10),
    ]
  )
  model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
  model.fit(norm(train.images), train.labels, epochs=10, batch_size=64, verbose=0)
  want = float(np.mean(np.argmax(model.predict(norm(test.images), verbose=0), 1) == test.labels))
  model.save(str(user / "symmetric.keras"))
  args = ["--dataset=folder:images", "--reference=symmetric.keras", "--compress=float16", *COMMON]
  fed = audit_binary.in_process([*args, "--preprocess=symmetric", "--out=symmetric"], user)
  assert fed.returncode == 0, fed.stderr[-3000:]
  report = json.loads((user / "symmetric" / "report.json").read_text())
  assert report["variants"]["dense"]["top1"] == pytest.approx(want, abs=0.002)
  assert report["variants"]["float16"]["top1"] == pytest.approx(want, abs=0.01)
  # The same model fed raw pixels: refused (`tf_forget.evaluate.input_scaling`), or, when asked,
  # a wrong audit.
  refused = audit_binary.one_line(audit_binary.in_process([*args, "--out=raw"], user))
  assert (
    "with raw pixels (0-255) but" in refused
    and "your model probably expects --preprocess=symmetric; give it" in refused
  ), refused
  assert not (user / "raw").exists()
  raw = audit_binary.in_process([*args, "--out=raw", "--input_scaling_check=off"], user)
  assert raw.returncode == 0, raw.stderr[-3000:]
  wrong = json.loads((user / "raw" / "report.json").read_text())
  assert wrong["variants"]["dense"]["top1"] < want - 0.1


@pytest.fixture(scope="module")
def unit_trained(tmp_path_factory):
  """A user's model trained on x / 255 with no rescaling of its own (a dense layer and batch
  normalization: raw pixels change its argmax), the digits test split as PNGs, and the model's
  top-1 on that split fed raw pixels and x / 255: (root, test split, raw top-1, unit top-1)."""
  root = tmp_path_factory.mktemp("unit_trained")
  keras = keras2.keras()
  data = registry.get("digits")
  train, test = data.load("train"), data.load("test")
  keras.utils.set_random_seed(0)
  model = keras.Sequential(
    [
      keras.Input((8, 8, 1)),
      keras.layers.Flatten(),
      keras.layers.Dense(32),
      keras.layers.BatchNormalization(),
      keras.layers.ReLU(),
      keras.layers.Dense(10),
    ]
  )
  model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
  model.fit(train.images.astype("float32") / 255, train.labels, epochs=10, batch_size=64, verbose=0)
  model.save(str(root / "model.keras"))
  user_files.write_pngs(root / "images", test)
  x = test.images.astype("float32")
  return (
    root,
    test,
    np.argmax(model.predict(x, verbose=0), 1),
    np.argmax(model.predict(x / 255, verbose=0), 1),
  )


def _gain(labels, given, other):
  """(top-1 gain of `other` over `given`, exact McNemar p of the pairs), computed here."""
  fixed = int(np.sum((other == labels) & (given != labels)))
  broken = int(np.sum((given == labels) & (other != labels)))
  return (fixed - broken) / labels.size, stats.binomtest(
    min(fixed, broken), fixed + broken, 0.5
  ).pvalue


def test_a_gap_under_ten_points_is_refused_once_the_sample_decides(unit_trained):
  """The model fed raw pixels: on the first sample (256 of the 500 images, evenly spaced over the
  folder's order) it scores about 5 points lower than with --preprocess=unit, under a 10-point
  margin and not yet significant (p ~ 0.02); on all 500 the gap (about 7 points) is: refused,
  naming --preprocess=unit, nothing written."""
  root, test, raw, unit = unit_trained
  order = np.lexsort((np.arange(len(test)), test.labels))  # images/<label>/<iiii>.png, sorted
  first = order[np.unique(np.round(np.linspace(0, len(test) - 1, 256)).astype(int))]
  gain, p = _gain(test.labels[first], raw[first], unit[first])
  assert 0.02 <= gain < 0.10 and p >= 0.001, (gain, p)
  gain, p = _gain(test.labels, raw, unit)
  assert gain >= 0.02 and p < 0.001, (gain, p)
  result = audit_binary.in_process(
    [
      "--dataset=folder:images",
      f"--reference={root / 'model.keras'}",
      "--compress=float16",
      "--out=raw",
      *COMMON,
    ],
    root,
  )
  line = audit_binary.one_line(result)
  assert line.startswith(
    f"audit: error: reference {root / 'model.keras'} scores "
    f"{100 * np.mean(raw == test.labels):.1f}% with raw pixels (0-255) but "
    f"{100 * np.mean(unit == test.labels):.1f}% with --preprocess=unit on {len(test)} test "
    f"images (paired, exact McNemar p = {p:.1g}): your model probably expects "
    "--preprocess=unit; give it"
  ), line
  assert not (root / "raw").exists()


def test_an_unsure_gain_is_a_caveat_printed_and_recorded_for_the_report(unit_trained):
  """40 of the images, chosen so that --preprocess=unit gets 4 more right than raw pixels and
  none fewer: 10 points, but p = 0.125. The audit runs, prints the caveat, and records it in
  audit.json, where the report's `collect.Run` reads it; with --preprocess=unit there is none."""
  root, test, raw, unit = unit_trained
  labels = test.labels
  picked = np.r_[
    np.flatnonzero((unit == labels) & (raw != labels))[:4],
    np.flatnonzero((unit == labels) & (raw == labels))[:36],
  ]
  user_files.write_pngs(root / "few", test.take(picked))
  args = [
    "--dataset=folder:few",
    f"--reference={root / 'model.keras'}",
    "--compress=float16",
    *COMMON,
  ]
  result = audit_binary.in_process([*args, "--out=few_raw"], root)
  assert result.returncode == 0 and result.stderr == "", result.stderr[-3000:]
  want = (
    f"The input scaling check is unsure: reference {root / 'model.keras'} scores 90.0% "
    "with raw pixels (0-255), as audited, but 100.0% with --preprocess=unit on 40 test "
    "images (paired, exact McNemar p = 0.12; it refuses a gain of 2 points at p < 0.001): "
    "if your model takes --preprocess=unit, give it and audit again."
  )
  assert f"warning: {want}\n" in result.stdout, result.stdout[:3000]
  assert json.loads((root / "few_raw" / "audit.json").read_text())["caveats"] == [want]
  few = registry.get("folder", path=str(root / "few"), image_size=[8, 8], channels=1)
  assert collect.load_run(str(root / "few_raw"), dataset=few).caveats == (want,)
  fed = audit_binary.in_process([*args, "--preprocess=unit", "--out=few_unit"], root)
  assert fed.returncode == 0 and "input scaling" not in fed.stdout, fed.stderr[-3000:]
  assert json.loads((root / "few_unit" / "audit.json").read_text())["caveats"] == []


def _write_folder(root, images, labels):
  for i, (image, label) in enumerate(zip(images, labels)):
    folder = root / str(int(label))
    folder.mkdir(parents=True, exist_ok=True)
    tf.io.write_file(str(folder / f"{i:04d}.png"), tf.io.encode_png(image))


def _input_scale(path):
  interpreter = tf.lite.Interpreter(model_path=str(path))
  return interpreter.get_input_details()[0]["quantization"][0]


def test_calibration_data_calibrates_the_full_int8_file(user):
  """--calibration=folder:DIR: full_int8 is calibrated on 100 images of DIR evenly spaced over
  its sorted paths, not on a train split the test folder does not have. Independent check: the int8
  input's scale is the calibration images' range / 255 (the converter's asymmetric input
  quantization over [min(0, lo), max(0, hi)]); calibration images rewritten in place with their
  pixels halved redo the export, and give half the scale."""
  data = registry.get("digits").load("train")
  _write_folder(user / "calib", data.images[:150], data.labels[:150])
  paths = sorted(str(p.relative_to(user / "calib")) for p in (user / "calib").rglob("*.png"))
  spread = np.round(np.linspace(0, len(paths) - 1, 100)).astype(int)  # evenly spaced, not first
  picked = np.stack([data.images[int(paths[i].split("/")[1][:4])] for i in spread])
  args = [
    "--dataset=folder:images",
    "--reference=model0.keras",
    "--compress=full_int8",
    "--out=cal",
    *COMMON,
  ]
  result = audit_binary.in_process([*args, "--calibration=folder:calib"], user)
  assert result.returncode == 0, result.stderr[-3000:]
  meta = json.loads((user / "cal" / "tflite" / "dense" / "0" / "full_int8.json").read_text())
  rep = meta["representative"]
  assert rep["size"] == 100 and rep["calibration"]["name"] == "folder"
  assert rep["calibration"]["options"]["path"] == str(user / "calib")
  int8_file = user / "cal" / "tflite" / "dense" / "0" / "full_int8.tflite"
  assert _input_scale(int8_file) == pytest.approx(float(picked.max()) / 255, rel=0.01)
  _write_folder(user / "calib", data.images[:150] // 2, data.labels[:150])
  again = audit_binary.in_process([*args, "--calibration=folder:calib"], user)
  assert again.returncode == 0, again.stderr[-3000:]
  assert "redo full_int8/0 export" in again.stdout, again.stdout
  assert _input_scale(int8_file) == pytest.approx(float((picked // 2).max()) / 255, rel=0.01)


def test_a_k1_gate_on_the_paired_tests_fails_the_command_with_exit_3(user):
  """An untrained network's file as the candidate: its per-class McNemar tests (BH) find
  significant classes, so --max_significant_classes=0 fails it and the command exits 3 (what a
  deployment's CI reads); the reference's own conversion passes."""
  keras = keras2.keras()
  keras.utils.set_random_seed(1)
  untrained = keras.Sequential(
    [
      keras.Input((8, 8, 1)),
      keras.layers.Rescaling(1 / 255.0),
      keras.layers.Flatten(),
      keras.layers.Dense(10),
    ]
  )
  converter = tf.lite.TFLiteConverter.from_keras_model(untrained)
  (user / "untrained.tflite").write_bytes(converter.convert())
  result = audit_binary.in_process(
    [
      "--dataset=folder:images",
      "--reference=model0.keras",
      "--candidate=bad=untrained.tflite",
      "--compress=float16",
      "--max_significant_classes=0",
      "--out=gated",
      *COMMON,
    ],
    user,
  )
  assert result.returncode == 3, result.stderr[-3000:]
  manifest = json.loads((user / "gated" / "deploy" / "manifest.json").read_text())
  assert manifest["failed_variants"] == ["user_bad"]
  report = json.loads((user / "gated" / "report.json").read_text())
  k1 = [r for r in report["tables"]["k1_classes"] if r["variant"] == "user_bad"]
  assert sum(bool(r["significant"]) for r in k1) >= 1
  verdict = {r["variant"]: r for r in report["tables"]["verdict"]}
  assert "McNemar + BH over the test examples" in verdict["user_bad"]["reasons"]
  assert verdict["float16"]["gate"] == "pass"


def test_output_index_picks_the_class_scores_of_tflite_files_with_two_outputs(user):
  """A network with an auxiliary head, converted with both outputs (float reference, int8
  candidate): refused in one line without --output_index; with it (in the files' own output
  order), the audit runs on the class scores, and the reference's top-1 is the interpreter's on
  those scores."""
  keras = keras2.keras()
  data = registry.get("digits")
  train, test = data.load("train"), data.load("test")
  keras.utils.set_random_seed(3)
  inputs = keras.Input((8, 8, 1))
  hidden = keras.layers.Flatten()(keras.layers.Rescaling(1 / 255.0)(inputs))
  hidden = keras.layers.Dense(32, activation="relu")(hidden)
  model = keras.Model(
    inputs,
    [keras.layers.Dense(4, name="aux")(hidden), keras.layers.Dense(10, name="classes")(hidden)],
  )
  model.compile(
    "adam",
    [keras.losses.MeanSquaredError(), keras.losses.SparseCategoricalCrossentropy(from_logits=True)],
  )
  model.fit(
    train.images.astype("float32"),
    [np.zeros([len(train), 4]), train.labels],
    epochs=5,
    batch_size=64,
    verbose=0,
  )
  (user / "two_f32.tflite").write_bytes(user_files.convert(model, train, int8=False))
  (user / "two_i8.tflite").write_bytes(user_files.convert(model, train, int8=True))
  interpreter = tf.lite.Interpreter(model_path=str(user / "two_f32.tflite"))
  outputs = interpreter.get_output_details()
  index = [int(o["shape"][-1]) for o in outputs].index(10)
  args = [
    "--dataset=folder:images",
    "--reference=two_f32.tflite",
    "--candidate=int8=two_i8.tflite",
    *COMMON,
  ]
  refused = audit_binary.in_process([*args, "--out=two_refused"], user)
  assert "has 2 outputs: choose the class scores with --output_index" in audit_binary.one_line(
    refused
  )
  result = audit_binary.in_process([*args, f"--output_index={index}", "--out=two"], user)
  assert result.returncode == 0, result.stderr[-3000:]
  report = json.loads((user / "two" / "report.json").read_text())
  interpreter.resize_tensor_input(interpreter.get_input_details()[0]["index"], [len(test), 8, 8, 1])
  interpreter.allocate_tensors()
  interpreter.set_tensor(interpreter.get_input_details()[0]["index"], test.images.astype("float32"))
  interpreter.invoke()
  scores = interpreter.get_tensor(outputs[index]["index"])
  want = float(np.mean(np.argmax(scores, 1) == test.labels))
  assert report["variants"]["dense"]["top1"] == pytest.approx(want, abs=1e-9)
  assert report["variants"]["user_int8"]["top1"] > want - 0.1


def test_a_tfds_data_set_and_a_tfrecord_file_enter_the_same_audit(tmp_path):
  """--dataset=tfds:mnist (a mock tfds data set) and --dataset=tfrecord:GLOB (written here):
  the same K = 1 audit, in this process (tfds' mock lives in it)."""
  import tensorflow_datasets as tfds

  from tf_forget.pipeline import audit_lib

  keras = keras2.keras()
  keras.utils.set_random_seed(0)
  model = keras.Sequential(
    [
      keras.Input((28, 28, 1)),
      keras.layers.Rescaling(1 / 255.0),
      keras.layers.Flatten(),
      keras.layers.Dense(10),
    ]
  )
  model.save(str(tmp_path / "m.keras"))
  (tmp_path / "m.tflite").write_bytes(user_files.convert(model, None, int8=False))
  # An untrained model on tfds' random mock images scores at chance: no scaling check.
  user = tree.UserModels(
    references=(str(tmp_path / "m.keras"),),
    candidates=(("f32", (str(tmp_path / "m.tflite"),)),),
    input_scaling_check=False,
  )
  with tfds.testing.mock_data(num_examples=12):
    config = tree.AuditConfig(
      out=str(tmp_path / "tfds"),
      data=tree.Data(dataset="tfds:mnist"),
      user=user,
      deployment=tree.Deployment(encoding="plain"),
    )
    report, _ = audit_lib.run_audit(config, log=lambda line: None)
    images = registry.get("mnist").load("test")
  assert set(report["variants"]) == {"dense", "user_f32"}
  assert report["dataset"]["examples"] == 12
  with tf.io.TFRecordWriter(str(tmp_path / "d.tfrecord")) as writer:
    for image, label in zip(images.images, images.labels):
      writer.write(
        tf.train.Example(
          features=tf.train.Features(
            feature={
              "image/encoded": tf.train.Feature(
                bytes_list=tf.train.BytesList(value=[tf.io.encode_png(image).numpy()])
              ),
              "image/class/label": tf.train.Feature(
                int64_list=tf.train.Int64List(value=[int(label)])
              ),
            }
          )
        ).SerializeToString()
      )
  config = tree.AuditConfig(
    out=str(tmp_path / "rec"),
    data=tree.Data(dataset=f"tfrecord:{tmp_path}/*.tfrecord"),
    user=dataclasses.replace(user, class_names=tuple(str(c) for c in range(10))),
    deployment=tree.Deployment(encoding="plain"),
  )
  again, _ = audit_lib.run_audit(config, log=lambda line: None)
  # The same images and model: the same top-1 through either source.
  assert again["variants"]["user_f32"]["top1"] == report["variants"]["user_f32"]["top1"]
