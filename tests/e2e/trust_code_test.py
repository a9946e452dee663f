"""No code the user brings runs unless the user asks (the audit binary).

A `Lambda` layer stores its Python function in the model file, and tf_keras runs it while it
rebuilds the model from an `.h5` file or a SavedModel (its `safe_mode` covers `.keras` files
only); a layer of the user's own class names code to import. The audit reads the model's
configuration first (`tf_forget.train.model_code`) and refuses such a reference in one line
naming the layer and `--trust_model_code`, before anything is loaded or written. The lambdas
here write a marker file from their body, which Keras runs whenever it traces the layer (at
load, when it rebuilds the model): the marker must not appear unless the user trusts the code.

`--preprocess=MODULE:FUNCTION` runs the user's code by design: it is checked on test images
while the audit validates (a Python function of the user's, returning the model's input
shape in numbers), so a wrong function is one line and nothing is written.
"""

import json
import os
import subprocess
import sys
import zipfile

import pytest

from tests import audit_main
from tests import binary_main
from tests.e2e import audit_binary
from tests.e2e import user_files
from tf_forget.commands import audit_command
from tf_forget.compat import keras2
from tf_forget.data import registry
from tf_forget.train import model_code

ARGS = ["--dataset=folder:images", "--compress=float16", *user_files.COMMON]

PREPROCESS = '''"""The user's preprocessing functions (a module of theirs)."""
import numpy as np

def good(x):
  return x.astype(np.float32)

def flat(x):
  return x.reshape(len(x), -1).astype(np.float32)

def count(x):
  return len(x)

def words(x):
  return np.full(x.shape, "a")

def fails(x):
  raise ValueError("the user's code failed")
'''


def _marking(marker):
  """A lambda whose body appends to `marker` (a literal in its code, so that it survives
  Keras' bytecode serialization of the function) and returns its input."""
  source = f"lambda x: (open({str(marker)!r}, 'a').write('ran'), x)[1]"
  return eval(source)


class Doubling(keras2.keras().layers.Layer):
  """A layer of the user's own class (its code would run if the audit imported it)."""

  def __init__(self, marker="", **kwargs):
    super().__init__(**kwargs)
    self.marker = marker

  def call(self, inputs):
    with open(self.marker, "a") as f:
      f.write("ran")
    return inputs * 2.0

  def get_config(self):
    return {**super().get_config(), "marker": self.marker}


def _model(first_layer, train_split):
  """The user_files classifier with `first_layer` in front of it, trained briefly."""
  keras = keras2.keras()
  keras.utils.set_random_seed(1)
  model = keras.Sequential(
    [
      keras.Input((8, 8, 1)),
      first_layer,
      keras.layers.Rescaling(1 / 255.0),
      keras.layers.Conv2D(8, 3, activation="relu"),
      keras.layers.Flatten(),
      keras.layers.Dense(10),
    ]
  )
  model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
  model.fit(
    train_split.images.astype("float32"), train_split.labels, epochs=3, batch_size=64, verbose=0
  )
  return model


@pytest.fixture(scope="module")
def user(tmp_path_factory):
  """user_files' directory plus lambda.{h5,keras}, lambda_savedmodel/, custom.keras (whose
  code writes `marker`) and user_prep.py."""
  root = user_files.make(tmp_path_factory.mktemp("user"))
  train_split = registry.get("digits").load("train")
  marker = root / "marker"
  lam = _model(keras2.keras().layers.Lambda(_marking(marker), name="marker"), train_split)
  lam.save(str(root / "lambda.h5"))
  lam.save(str(root / "lambda.keras"))
  lam.save(str(root / "lambda_savedmodel"), save_format="tf")
  _model(Doubling(marker=str(marker), name="doubling"), train_split).save(
    str(root / "custom.keras")
  )
  (root / "user_prep.py").write_text(PREPROCESS)
  marker.unlink()  # written while building, training and saving the models here
  return root


def _audit(args, root):
  """`eval/audit.py args` in `root`, with `root` importable (`--preprocess=user_prep:...`)."""
  env = dict(audit_binary.env(), PYTHONPATH=os.pathsep.join([audit_binary.ROOT, str(root)]))
  return subprocess.run(
    [sys.executable, os.path.join(audit_binary.ROOT, "eval", "audit.py"), *args],
    cwd=root,
    env=env,
    text=True,
    capture_output=True,
    timeout=900,
    check=False,
  )


def _here(args, root):
  """The same command through its `main` in this process (`audit_binary.in_process`), with
  `root` importable."""
  sys.path.insert(0, str(root))
  try:
    return audit_binary.in_process(args, cwd=str(root))
  finally:
    sys.path.remove(str(root))


@pytest.mark.parametrize(
  "reference, layer, run",
  [
    ("lambda.h5", "layer 'marker' (Lambda)", _audit),  # as a user runs it
    ("lambda.keras", "layer 'marker' (Lambda)", _here),
    ("lambda_savedmodel", "layer 'marker' (Lambda)", _here),
    ("custom.keras", "layer 'doubling' (Doubling)", _here),
  ],
)
def test_model_code_is_refused_before_it_runs_and_nothing_is_written(user, reference, layer, run):
  out = f"out_{reference.replace('.', '_')}"
  line = audit_binary.one_line(run([f"--reference={reference}", f"--out={out}", *ARGS], user))
  assert line.startswith("audit: error: reference ") and f"{reference}: {layer} " in line, line
  assert "--trust_model_code" in line
  assert not (user / "marker").exists()  # the layer's code never ran
  assert not (user / out).exists()


def test_the_plan_refuses_it_too(user):
  line = audit_binary.one_line(
    _here(["--reference=lambda.h5", "--plan", "--out=planned", *ARGS], user)
  )
  assert "layer 'marker' (Lambda)" in line and "--trust_model_code" in line
  assert not (user / "marker").exists()


def test_a_trusted_lambda_model_is_audited(user):
  """With --trust_model_code, the .keras Lambda model loads (safe mode off) and is audited
  end to end: its float32 and float16 files are made from the imported member, whose
  model.keras (holding the Lambda) the export loads again."""
  result = _here(["--reference=lambda.keras", "--trust_model_code", "--out=trusted", *ARGS], user)
  assert result.returncode == 0, result.stderr[-3000:]
  assert (user / "marker").exists()  # the user asked for it: the lambda ran
  report = json.loads((user / "trusted" / "report.json").read_text())
  assert {"dense", "float16"} <= set(report["variants"])
  assert report["variants"]["dense"]["top1"] > 0.5
  meta = json.loads((user / "trusted" / "members" / "dense" / "0" / "metadata.json").read_text())
  assert meta["reference"]["trust_model_code"] is True
  # `tf-forget report` audits the run's audit.json again: that file cannot let the code run.
  (user / "marker").unlink()
  with pytest.raises(SystemExit) as refused:
    audit_command.render(str(user / "trusted"), name="report")
  line = str(refused.value.code)
  assert line.startswith("report: error: ") and "audit.json sets trust_model_code" in line
  assert "--trust_model_code" in line and "\n" not in line
  assert not (user / "marker").exists()
  assert audit_command.render(str(user / "trusted"), name="report", trust_model_code=True) == 0
  assert (user / "marker").exists()


def _layer(class_name, name, module="keras.layers", registered_name=None, **config):
  return {
    "module": module,
    "class_name": class_name,
    "registered_name": registered_name,
    "config": {"name": name, **config},
  }


@pytest.mark.parametrize(
  "layer, refusal",
  [
    (_layer("Dense", "d", units=2), None),
    (_layer("TFOpLambda", "m", function="math.multiply"), None),
    (
      _layer("Lambda", "l", function=["AAAA", None, None], function_type="lambda"),
      "layer 'l' (Lambda) runs Python code stored in the model file",
    ),
    (_layer("Dense", "d", module="os"), "layer 'd' (Dense) is not a built-in Keras class"),
    (
      _layer("Dense", "d", registered_name="user>Dense"),
      "layer 'd' (Dense) is not a built-in Keras class",
    ),
    (
      _layer(
        "Dense",
        "d",
        kernel_initializer={
          "module": "builtins",
          "class_name": "function",
          "config": "init",
          "registered_name": "function",
        },
      ),
      "function in layer 'd' is not a built-in Keras class",
    ),
    (
      _layer("TFOpLambda", "w", function="io.write_file"),
      "layer 'w' (TFOpLambda) calls tf.io.write_file",
    ),
  ],
)
def test_the_configuration_is_read_without_loading_it(tmp_path, layer, refusal):
  """`model_code.check` on a `.keras` file written by hand (config.json only: nothing of it
  could be loaded, so a refusal comes from reading the configuration alone)."""
  config = {
    "module": "keras",
    "class_name": "Sequential",
    "registered_name": None,
    "config": {"name": "seq", "layers": [layer]},
  }
  path = tmp_path / "hand.keras"
  with zipfile.ZipFile(path, "w") as archive:
    archive.writestr("config.json", json.dumps(config))
  if refusal is None:
    model_code.check(str(path))
    return
  with pytest.raises(model_code.UntrustedCodeError) as e:
    model_code.check(str(path))
  assert f"reference {path}: {refusal}" in str(e.value)
  assert "--trust_model_code" in str(e.value)


def test_built_in_models_of_every_format_pass(tmp_path):
  """No false refusal: TensorFlow ops in a functional model (TFOpLambda), batch norm, an l2
  regularizer, a compiled optimizer, loss and metric, as .h5, .keras and SavedModel."""
  keras = keras2.keras()
  inputs = keras.Input((8, 8, 1))
  x = keras.layers.Conv2D(4, 3, kernel_regularizer="l2")(inputs * 2.0)
  x = keras.layers.Flatten()(keras.layers.BatchNormalization()(x))
  model = keras.Model(inputs, keras.layers.Dense(10)(keras.activations.relu(x)))
  model.compile(
    keras.optimizers.Adam(), keras.losses.SparseCategoricalCrossentropy(True), metrics=["accuracy"]
  )
  for name in ("m.h5", "m.keras", "m_savedmodel"):
    model.save(str(tmp_path / name))
    model_code.check(str(tmp_path / name), compiled=True)


@pytest.mark.parametrize(
  "function, message",
  [
    ("user_prep:flat", "returned an array of shape [8, 64], not [8, 8, 8, 1]"),
    ("user_prep:count", "returned int, not an array of shape [8, 8, 8, 1]"),
    ("user_prep:words", "returned an array of dtype <U1, not numbers"),
    ("user_prep:fails", "raised ValueError: the user's code failed"),
    ("os:system", "os.system is a builtin_function_or_method, not a Python function"),
    ("user_prep:nothing", "cannot be imported"),
  ],
)
def test_a_bad_preprocess_function_is_one_line_and_writes_nothing(
  user, function, message, monkeypatch
):
  """The binary's `main` in this process (`binary_main.run_argv`), `user_prep` importable;
  `os:system` also through the binary below."""
  monkeypatch.syspath_prepend(str(user))
  out = f"out_{function.replace(':', '_')}"
  line = binary_main.run_argv(
    audit_main.main,
    "audit",
    ["--reference=model.keras", f"--preprocess={function}", f"--out={out}", *ARGS],
    user,
  )
  assert isinstance(line, str) and "\n" not in line, line
  assert line.startswith("audit: error: ") and message in line, line
  assert not (user / out).exists()


def test_a_bad_preprocess_function_is_refused_by_the_binary(user):
  line = audit_binary.one_line(
    _audit(["--reference=model.keras", "--preprocess=os:system", "--out=out_os", *ARGS], user)
  )
  assert line.startswith("audit: error: ") and "not a Python function" in line, line
  assert not (user / "out_os").exists()


def test_a_good_preprocess_function_feeds_the_model(user):
  """user_prep:good passes the pixels as float32: the same model as without --preprocess."""
  result = _here(
    ["--reference=model.keras", "--preprocess=user_prep:good", "--out=good", *ARGS], user
  )
  assert result.returncode == 0, result.stderr[-3000:]
  report = json.loads((user / "good" / "report.json").read_text())
  assert report["variants"]["dense"]["top1"] > 0.8


# A module of the user's whose top-level code leaves a mark when it is imported.
MARKING_PREPROCESS = '''"""Marks {marker} when imported."""
import numpy as np
open({marker!r}, "a").write("imported")

def good(x):
  return x.astype(np.float32)
'''


def _config_file(root, name, **user):
  """A configuration file (`tf_forget.config/1`) auditing `user`'s fields on root/images."""
  path = root / name
  path.write_text(
    json.dumps(
      {
        "schema": "tf_forget.config/1",
        "out": str(root / f"out_{name[:-5]}"),
        "data": {"dataset": f"folder:{root / 'images'}"},
        "execution": {"executor": "inline"},
        "deployment": {"encoding": "plain"},
        "user": {"compress": ["float16"], **user},
      }
    )
  )
  return path


def test_a_config_file_cannot_trust_code_the_command_line_does_not(user, monkeypatch):
  """Trust is said on the command line, never taken from a file: a `--config` setting
  `trust_model_code` or a MODULE:FUNCTION preprocess is one line naming the flag, and neither
  the model's code nor the module runs; given on the command line too, the same file is taken
  (`--plan`, which loads the reference)."""
  import tf_forget

  monkeypatch.syspath_prepend(str(user))
  (user / "marker").unlink(missing_ok=True)  # an earlier test of this module may have trusted
  marker = user / "prep_marker"
  (user / "marking_prep.py").write_text(MARKING_PREPROCESS.format(marker=str(marker)))
  trusting = _config_file(
    user, "trusting.json", references=[str(user / "lambda.keras")], trust_model_code=True
  )
  preprocessing = _config_file(
    user,
    "preprocessing.json",
    references=[str(user / "model.keras")],
    preprocess="marking_prep:good",
  )
  for config, flag in (
    (trusting, "--trust_model_code"),
    (preprocessing, "--preprocess=marking_prep:good"),
  ):
    line = binary_main.run_argv(audit_main.main, "audit", [f"--config={config}"], user)
    assert isinstance(line, str) and "\n" not in line, line
    assert line.startswith("audit: error: the --config file sets ") and flag in line, line
    assert not (user / f"out_{config.stem}").exists()
    with pytest.raises(tf_forget.AuditError, match="the --config file sets "):
      tf_forget.plan(str(config))  # the notebook's face reads a file as --config does
  assert not (user / "marker").exists() and not marker.exists()  # no code of theirs ran
  assert (
    binary_main.run_argv(
      audit_main.main, "audit", [f"--config={trusting}", "--trust_model_code", "--plan"], user
    )
    == 0
  )
  assert (user / "marker").exists()  # said on the command line: the lambda ran
  assert (
    binary_main.run_argv(
      audit_main.main,
      "audit",
      [f"--config={preprocessing}", "--preprocess=marking_prep:good", "--plan"],
      user,
    )
    == 0
  )
  (user / "marker").unlink()
