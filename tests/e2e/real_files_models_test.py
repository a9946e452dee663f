"""Every common model file is a reference, made the way users make it.

A user following TensorFlow's "Post-training integer quantization" tutorial in TF 2.21 gets
Keras 3 (the default `keras`): the test plays that user in a subprocess with `import keras` and
without `TF_USE_LEGACY_KERAS` (`USER_SCRIPT`): a small Sequential on scikit-learn's digits
(8x8x1 raw pixels in, its own `Rescaling`), saved as `model.keras`, `model.h5` and
`model.export("saved")`, its predictions on the PNG folder (Keras 3 `predict`), the tutorial's
full integer `.tflite` (plain converter, int8 in and out), and a plain `tf.saved_model.save` of
a `tf.Module` (a least-squares linear classifier) with a `serving_default` signature. Each
kind is audited: the Keras 3 file through the binary, as a user runs it, the others through the
command's `main` in this process; what the audit stored is checked against an independent
computation here: Keras 3's predictions, numpy's for the linear model, and the LiteRT
interpreter run directly on the PNG files (as tests/e2e/audit_user_test.py does).
"""

import hashlib
import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import tensorflow as tf

from tests.e2e import audit_binary
from tests.e2e import user_files
from tf_forget.artifacts import layout
from tf_forget.artifacts import predictions
from tf_forget.data import registry
from tf_forget.train import model_code

USER_SCRIPT = r'''
import sys
import numpy as np
import keras
import tensorflow as tf

root = sys.argv[1]
assert keras.__version__.startswith("3.") and tf.keras.__version__.startswith("3.")
data = np.load(f"{root}/arrays.npz")
train_x, train_y = data["train_x"].astype("float32"), data["train_y"]
keras.utils.set_random_seed(0)
model = keras.Sequential([keras.Input((8, 8, 1)), keras.layers.Rescaling(1 / 255.0),
                          keras.layers.Conv2D(8, 3, activation="relu"), keras.layers.Flatten(),
                          keras.layers.Dense(10)])
model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy"])
model.fit(train_x, train_y, epochs=3, batch_size=64, verbose=0)
model.save(f"{root}/model.keras")
model.save(f"{root}/model.h5")
model.export(f"{root}/saved")
np.save(f"{root}/keras3_logits.npy", model.predict(data["test_x"].astype("float32"), verbose=0))
converter = tf.lite.TFLiteConverter.from_keras_model(model)
converter.optimizations = [tf.lite.Optimize.DEFAULT]
converter.representative_dataset = lambda: ([train_x[i:i + 1]] for i in range(100))
converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
converter.inference_input_type = tf.int8
converter.inference_output_type = tf.int8
with open(f"{root}/user_int8.tflite", "wb") as f:
  f.write(converter.convert())

lam = keras.Sequential([keras.Input((8, 8, 1)), keras.layers.Lambda(lambda t: t / 255.0),
                        keras.layers.Flatten(), keras.layers.Dense(10)])
lam.save(f"{root}/lambda.keras")


class Doubled(keras.layers.Layer):
  def call(self, x):
    return x * 2


keras.Sequential([keras.Input((8, 8, 1)), Doubled(), keras.layers.Flatten(),
                  keras.layers.Dense(10)]).save(f"{root}/custom.h5")

flat = np.concatenate([train_x.reshape(len(train_x), -1) / 255.0,
                       np.ones((len(train_x), 1))], 1)
weights = np.linalg.lstsq(flat, np.eye(10)[train_y], rcond=None)[0].astype("float32")


class Linear(tf.Module):
  def __init__(self, w, noisy=False):
    super().__init__()
    self.w, self.b, self.noisy = tf.Variable(w[:-1]), tf.Variable(w[-1]), noisy

  @tf.function(input_signature=[tf.TensorSpec([None, 8, 8, 1], tf.float32)])
  def __call__(self, images):
    if self.noisy:
      tf.print("images", tf.shape(images))
    return tf.matmul(tf.reshape(images, [-1, 64]) / 255.0, self.w) + self.b


for name, noisy in (("plain", False), ("printing", True)):
  linear = Linear(weights, noisy)
  tf.saved_model.save(linear, f"{root}/{name}", signatures={"serving_default": linear.__call__})
np.save(f"{root}/linear_weights.npy", weights)
'''
COMMON = (*user_files.COMMON, "--compress=dynamic_int8,full_int8", "--calibration=folder:calib")


def _pngs(root):
  """The PNG folder's files, in the audit's example order (sorted paths: ids 0..N-1)."""
  return sorted(p.relative_to(root / "images").as_posix() for p in (root / "images").rglob("*.png"))


@pytest.fixture(scope="module")
def user(tmp_path_factory):
  """The user's directory: images/<class>/<i>.png (the digits test split), calib/ (100 train
  images), and what `USER_SCRIPT` writes with Keras 3."""
  root = tmp_path_factory.mktemp("real_files")
  data = registry.get("digits")
  train, test = data.load("train"), data.load("test")
  user_files.write_pngs(root / "images", test)
  user_files.write_pngs(root / "calib", train.take(np.arange(100)))
  images = np.stack(
    [tf.io.decode_png(tf.io.read_file(str(root / "images" / name))).numpy() for name in _pngs(root)]
  )
  np.savez(root / "arrays.npz", train_x=train.images, train_y=train.labels, test_x=images)
  env = dict(audit_binary.env(), CUDA_VISIBLE_DEVICES="")
  env.pop("TF_USE_LEGACY_KERAS")  # TensorFlow's default: Keras 3, as the tutorial's user has
  made = subprocess.run(
    [sys.executable, "-c", USER_SCRIPT, str(root)],
    env=env,
    text=True,
    capture_output=True,
    timeout=600,
    check=False,
  )
  assert made.returncode == 0, made.stderr[-3000:]
  return root


@pytest.fixture(scope="module")
def expected(user):
  """Top-1 per example (in id order): Keras 3's predict, the linear model's in numpy, and the
  user's int8 file run by the LiteRT interpreter on the PNG files; and the true labels."""
  images = np.load(user / "arrays.npz")["test_x"].astype(np.float64)
  weights = np.load(user / "linear_weights.npy").astype(np.float64)
  linear = images.reshape(len(images), -1) / 255.0 @ weights[:-1] + weights[-1]
  return {
    "keras3": np.load(user / "keras3_logits.npy").argmax(1),
    "linear": linear.argmax(1),
    "user_int8": _interpreter_top1(user / "user_int8.tflite", user),
    "labels": np.array([int(name.split("/")[0]) for name in _pngs(user)]),
  }


def _interpreter_top1(path, root):
  """Top-1 of the `.tflite` file `path` on every PNG (decoded here, fed one at a time; an int8
  input quantized with the file's own scale and zero point)."""
  interp = tf.lite.Interpreter(model_path=str(path))
  interp.allocate_tensors()
  inp, out = interp.get_input_details()[0], interp.get_output_details()[0]
  top1 = []
  for name in _pngs(root):
    image = tf.io.decode_png(tf.io.read_file(str(root / "images" / name))).numpy()
    image = image.astype(np.float32)
    if inp["dtype"] == np.int8:
      scale, zero = inp["quantization"]
      image = np.clip(np.round(image / scale + zero), -128, 127).astype(np.int8)
    interp.set_tensor(inp["index"], image[None])
    interp.invoke()
    top1.append(int(np.argmax(interp.get_tensor(out["index"])[0])))
  return np.array(top1)


def _top1(run, kind, variant, k):
  """The stored top-1 of `variant`'s member k on the test split (kind: predictions /
  predictions_keras), with the file's metadata."""
  got = predictions.read(str(run / kind / variant / str(k) / "test.npz"))
  assert got["ids"].tolist() == list(range(len(got["ids"])))
  return got["topk"][:, 0], got["metadata"]


@pytest.fixture(scope="module")
def keras3_audit(user):
  """The tutorial's files as they are: model.keras (Keras 3) and its int8 file."""
  result = audit_binary.audit(
    [
      "--dataset=folder:images",
      "--reference=model.keras",
      "--candidate=int8=user_int8.tflite",
      "--out=k3",
      *COMMON,
    ],
    user,
  )
  assert result.returncode == 0, result.stderr[-3000:]
  return result


def test_keras3_file_is_audited_with_keras3(user, expected, keras3_audit):
  """The Keras 3 `.keras` reference: stored by Keras 3, its Keras predictions Keras 3's own,
  its float32 file (converted here through a SavedModel endpoint) predicting the same top-1
  on every PNG, and every file's stored predictions the interpreter's on the PNG folder."""
  assert keras3_audit.stderr == ""
  run = user / "k3"
  meta = json.loads((run / "members" / "dense" / "0" / "metadata.json").read_text())
  assert meta["reference"]["kind"] == "keras3"
  assert meta["inputs"]["reference"] == audit_binary.sha256(user / "model.keras")
  keras_top1, keras_meta = _top1(run, "predictions_keras", "dense", 0)
  assert keras_meta["runtime"] == "keras3"
  np.testing.assert_array_equal(keras_top1, expected["keras3"])
  np.testing.assert_array_equal(_top1(run, "predictions", "dense", 0)[0], expected["keras3"])
  np.testing.assert_array_equal(_top1(run, "predictions", "user_int8", 0)[0], expected["user_int8"])
  for fmt in ("dynamic_int8", "full_int8"):
    top1 = _top1(run, "predictions", fmt, 0)[0]
    np.testing.assert_array_equal(
      top1, _interpreter_top1(run / "tflite" / "dense" / "0" / f"{fmt}.tflite", user)
    )
    assert (
      np.mean(top1 == expected["labels"])
      >= np.mean(expected["keras3"] == expected["labels"]) - 0.05
    )


def test_keras3_flips_are_the_independent_ones(user, expected, keras3_audit):
  """`tables/flips.csv` of the user's int8 file: exactly the examples whose top-1 differs
  between Keras 3's predict and the interpreter on the PNGs, each with its kind."""
  del keras3_audit
  flips = pd.read_csv(user / "k3" / "tables" / "flips.csv")
  mine = flips[flips["variant"] == "user_int8"]
  ref, cand, labels = expected["keras3"], expected["user_int8"], expected["labels"]
  want = np.flatnonzero(ref != cand)
  assert want.size > 0  # the tiny model's int8 file flips a few of the 519 examples
  assert sorted(mine["id"].tolist()) == want.tolist()
  kinds = {
    i: ("broken" if ref[i] == labels[i] else "fixed" if cand[i] == labels[i] else "changed")
    for i in want
  }
  assert dict(zip(mine["id"], mine["kind"])) == kinds
  report = json.loads((user / "k3" / "report.json").read_text())
  assert report["variants"]["dense"]["top1"] == pytest.approx(np.mean(ref == labels), abs=1e-9)


def test_h5_and_savedmodels_are_references(user, expected):
  """K = 3 references of three kinds: Keras 3's `.h5`, its `model.export()` SavedModel and a
  plain `tf.Module` SavedModel. Each member stored as its kind needs (the SavedModels copied
  as they are, lineage the hash of their files), its Keras predictions and float32 file the
  independent top-1, its full int8 file's predictions the interpreter's on the PNGs."""
  result = audit_binary.in_process(
    ["--dataset=folder:images", "--reference=model.h5,saved,plain", "--out=kinds", *COMMON], user
  )
  assert result.returncode == 0, result.stderr[-3000:]
  run = user / "kinds"
  for k, (kind, want) in enumerate(
    (("keras3", "keras3"), ("saved_model", "keras3"), ("saved_model", "linear"))
  ):
    member = run / "members" / "dense" / str(k)
    meta = json.loads((member / "metadata.json").read_text())
    assert meta["reference"]["kind"] == kind
    if kind == "saved_model":
      source = user / ("saved", "plain")[k - 1]
      assert meta["inputs"]["reference"] == _tree_sha256(source)
      assert _tree_sha256(member / "saved_model") == _tree_sha256(source)
      assert not (member / "model.keras").exists()
    keras_top1, keras_meta = _top1(run, "predictions_keras", "dense", k)
    assert keras_meta["runtime"] == kind
    np.testing.assert_array_equal(keras_top1, expected[want])
    np.testing.assert_array_equal(_top1(run, "predictions", "dense", k)[0], expected[want])
    np.testing.assert_array_equal(
      _top1(run, "predictions", "full_int8", k)[0],
      _interpreter_top1(run / "tflite" / "dense" / str(k) / "full_int8.tflite", user),
    )
  os.remove(layout.finished_file(str(user / "kinds")))  # the stages' own reuse: no record
  again = audit_binary.in_process(
    ["--dataset=folder:images", "--reference=model.h5,saved,plain", "--out=kinds", *COMMON], user
  )
  assert again.returncode == 0, again.stderr[-3000:]
  assert "3 of 3 references already imported" in again.stdout
  assert "redo" not in again.stdout


def _tree_sha256(folder):
  """sha256 of the JSON {relative path: sha256} of every file below `folder` (computed here
  with hashlib, as `hashing.path_sha256` documents it)."""
  entries = {}
  for root, _, files in os.walk(folder):
    for name in files:
      path = os.path.join(root, name)
      with open(path, "rb") as f:
        entries[os.path.relpath(path, folder)] = hashlib.sha256(f.read()).hexdigest()
  text = json.dumps(entries, sort_keys=True, separators=(",", ":"))
  return hashlib.sha256(text.encode()).hexdigest()


@pytest.mark.parametrize(
  "reference, expected",
  [
    ("model.keras", "is a Keras 3 file"),
    ("saved", "is a SavedModel without Keras metadata"),
  ],
)
def test_oneshot_pruning_of_keras3_is_one_line(user, reference, expected):
  out = user / "pruned"
  result = audit_binary.in_process(
    [
      "--dataset=folder:images",
      f"--reference={reference}",
      "--pruning=oneshot",
      "--train=folder:calib",
      f"--out={out}",
      *user_files.COMMON,
    ],
    user,
  )
  line = audit_binary.one_line(result)
  assert (
    line.startswith("audit: error: --pruning=oneshot uses tfmot, which needs a tf_keras model;")
    and expected in line
  ), line
  assert not out.exists()


@pytest.mark.parametrize(
  "name, expected",
  [
    ("lambda.keras", "layer 'lambda' (Lambda) runs Python code"),
    ("custom.h5", "(Doubled) is not a built-in Keras class"),
    ("printing", "signature runs op PrintV2"),
  ],
)
def test_keras3_and_savedmodel_code_is_refused(user, name, expected):
  """The model-code check reads Keras 3 configs (and a SavedModel's serving graph) too."""
  with pytest.raises(model_code.UntrustedCodeError, match="--trust_model_code") as raised:
    model_code.check(str(user / name))
  assert expected in str(raised.value)


@pytest.mark.parametrize("name", ["model.keras", "model.h5", "saved", "plain"])
def test_the_users_own_files_pass_the_model_code_check(user, name):
  model_code.check(str(user / name))


def test_a_keras3_lambda_reference_is_one_line_and_writes_nothing(user):
  out = user / "lambda_out"
  result = audit_binary.audit(
    [
      "--dataset=folder:images",
      "--reference=lambda.keras",
      "--compress=float16",
      f"--out={out}",
      *user_files.COMMON,
    ],
    user,
  )
  line = audit_binary.one_line(result)
  assert "layer 'lambda' (Lambda)" in line and "--trust_model_code" in line, line
  assert not out.exists()
