"""An audit of the user's own model: every flag applies or is refused, a model or file is
counted once, and outputs that are NaN are named as such, never reported as an accuracy (the
audit command's `main` in this process, `tests/audit_main.py`).

The user's files are `tests/e2e/user_files.py`'s: a tiny tf_keras model, its int8 and
float32 files and 120 test images; plus copies of them and a float32 file whose classifier
weights are NaN (its outputs are NaN on every image).
"""

import shutil

import numpy as np
import pytest
import tensorflow as tf

from tests import audit_main
from tests import binary_main
from tests.e2e import user_files
from tf_forget.compat import keras2
from tf_forget.data import registry
from tf_forget.evaluate import evaluate


@pytest.fixture(scope="module")
def user(tmp_path_factory):
  """user_files' directory plus model_copy.keras, int8_copy.tflite and nan.tflite."""
  root = user_files.make(tmp_path_factory.mktemp("user"), num_images=120)
  shutil.copy(root / "model.keras", root / "model_copy.keras")
  shutil.copy(root / "int8.tflite", root / "int8_copy.tflite")
  model = keras2.keras().models.load_model(str(root / "model.keras"))
  kernel, bias = model.layers[-1].get_weights()
  model.layers[-1].set_weights([np.full_like(kernel, np.nan), bias])
  (root / "nan.tflite").write_bytes(tf.lite.TFLiteConverter.from_keras_model(model).convert())
  return root


def _refused(user, args):
  """The one line of the audit of `args` (into `refused/`), which must write nothing."""
  out = user / "refused"
  line = binary_main.run_argv(
    audit_main.main,
    "audit",
    ["--dataset=folder:images", f"--out={out}", *args, *user_files.COMMON],
    user,
  )
  assert isinstance(line, str) and "\n" not in line, line
  assert line.startswith("audit: error: "), line
  assert not out.exists()
  return line


OWN = ["--reference=model.keras", "--candidate=int8=int8.tflite"]


@pytest.mark.parametrize(
  "flag",
  [
    "--noise_levels=0,0.1",
    "--noise_draws=3",
    "--noise_examples=50",
    "--quantizations=float16",
    "--pruned_quantizations=float16",
    "--population_seed=3",
    "--robust_training",
    "--robustness=published",
    "--severities=2",
  ],
)
def test_a_flag_of_trained_populations_is_refused_with_your_own_model(user, flag):
  line = _refused(user, [*OWN, flag])
  name = flag.split("=")[0]
  assert line.startswith(f"audit: error: {name} "), line
  assert "your own model (--reference)" in line


def test_flags_that_say_none_or_name_corruptions_are_taken(user, capsys):
  status = binary_main.run_argv(
    audit_main.main,
    "audit",
    [
      "--dataset=folder:images",
      "--out=planned",
      "--plan",
      *OWN,
      "--noise_levels=none",
      "--corruptions=contrast",
      "--severities=2",
      *user_files.COMMON,
    ],
    user,
  )
  assert status == 0, capsys.readouterr().err[-2000:]
  assert "audit plan: your model" in capsys.readouterr().out


@pytest.mark.parametrize(
  "args, expected",
  [
    (
      ["--reference=model.keras,model.keras", "--candidate=int8=int8.tflite,int8_copy.tflite"],
      "--reference gives the same model twice: {u}/model.keras and {u}/model.keras have the "
      "same content",
    ),
    (
      ["--reference=model.keras,model_copy.keras", "--compress=float16"],
      "--reference gives the same model twice: {u}/model.keras and {u}/model_copy.keras",
    ),
    (
      ["--reference=model.keras", "--candidate=a=int8.tflite", "--candidate=b=int8_copy.tflite"],
      "--candidate a and --candidate b are the same files (the same content)",
    ),
  ],
)
def test_the_same_model_or_file_twice_is_refused(user, args, expected):
  line = _refused(user, args)
  assert expected.format(u=user) in line, line


def test_a_candidate_with_the_same_file_for_two_references_is_refused(user, tmp_path):
  other = tmp_path / "other.keras"  # a second, different reference: another training seed
  user_files.train(1, registry.get("digits").load("train"), epochs=1).save(str(other))
  line = _refused(
    user, [f"--reference=model.keras,{other}", "--candidate=int8=int8.tflite,int8_copy.tflite"]
  )
  assert (
    "--candidate int8 gives the same file for references 0 and 1: "
    f"{user}/int8.tflite and {user}/int8_copy.tflite have the same content"
  ) in line


def test_a_file_whose_outputs_are_nan_is_refused_not_reported(user):
  line = _refused(user, ["--reference=model.keras", "--candidate=nan=nan.tflite"])
  assert (
    f"--candidate nan: {user}/nan.tflite gives NaN or infinite outputs on 32 of 32 test "
    "images: no accuracy can be reported for it"
  ) in line, line


def test_the_evaluation_names_nan_outputs_and_writes_nothing(user, tmp_path):
  """Every example is checked where predictions are made (`evaluate.evaluate_file`), not only
  the images the plan runs: NaN outputs are one line naming the file and the count."""
  test = registry.get("digits").load("test").take(np.arange(20))
  out = tmp_path / "test.npz"
  with pytest.raises(evaluate.EvaluationError) as e:
    evaluate.evaluate_file(
      str(user / "nan.tflite"), [test], str(out), "test", metadata={"variant": "user_nan", "k": 0}
    )
  assert (
    f"user_nan/0 test: {user}/nan.tflite gives NaN or infinite outputs on 20 of 20 test examples"
  ) in str(e.value)
  assert not out.exists()
  meta, _ = evaluate.evaluate_file(str(user / "float.tflite"), [test], str(out), "test")
  assert meta["top1_accuracy"] > 0.5 and out.exists()
