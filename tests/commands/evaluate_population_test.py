"""The evaluation binary on `digits`: predictions + agreement, and one-line errors.

The binary's `main` (the command's `run`, `tests/command_main.py`) runs in-process under absl `flagsaver` (one TensorFlow import for the file);
one end-to-end run goes through a subprocess as `bazel run` would.
"""

import hashlib
import json
import os
import shutil
import types

from absl import app
from absl.testing import flagsaver
import pytest

from tests import command_main
from tests.export import binary_helper
from tests.export import fake_run
from tf_forget.commands import evaluate_population_command
from tf_forget.export import export

BINARY = "eval.evaluate_population"
PREFIX = "evaluate_population: error:"
MAIN = command_main.main_of(evaluate_population_command)


def run_main(capsys, **flag_values):
  """Runs the binary's main with `flag_values`; returns an object like a CompletedProcess."""
  with flagsaver.flagsaver(**flag_values):
    code = MAIN(["evaluate_population"])
  out = capsys.readouterr()
  return types.SimpleNamespace(returncode=code, stdout=out.out, stderr=out.err)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
  # Untrained 4-class members are enough to check the plumbing on digits' 8x8x1 images.
  run_dir = str(tmp_path_factory.mktemp("run"))
  fake_run.write_member(run_dir, "dense", 0, fake_run.tiny_cnn(0), dataset="digits")
  export.export_population(run_dir, ["float32", "full_int8"], ["float32"], representative_size=10)
  return run_dir


def test_evaluates_digits(run_dir):
  result = binary_helper.run_binary(BINARY, f"--run_dir={run_dir}", "--batch_size=128")
  assert result.returncode == 0, result.stderr[-2000:]
  assert "[test] vs float32 TFLite" in result.stdout and "[test] vs Keras" in result.stdout
  for variant in ("dense", "full_int8"):
    assert os.path.exists(os.path.join(run_dir, "predictions", variant, "0", "test.npz"))
  with open(os.path.join(run_dir, "eval", "agreement", "test.json")) as f:
    table = json.load(f)
  assert table["dataset"] == "digits"
  assert table["summary_vs_keras"]["dense"]["min_top1_agreement"] >= 0.999


def copy_run(run_dir, tmp_path):
  new = str(tmp_path / "run")
  shutil.copytree(run_dir, new, ignore=shutil.ignore_patterns("predictions*", "eval"))
  return new


def _adopt(path):
  """Makes the export JSON of `path` record its current bytes (an export of a bad file)."""
  meta_path = path[: -len(".tflite")] + ".json"
  with open(meta_path) as f:
    meta = json.load(f)
  with open(path, "rb") as f:
    meta["sha256"] = hashlib.sha256(f.read()).hexdigest()
  with open(meta_path, "w") as f:
    json.dump(meta, f)


def test_truncated_tflite(run_dir, tmp_path, capsys):
  new = copy_run(run_dir, tmp_path)
  path = os.path.join(new, "tflite", "dense", "0", "full_int8.tflite")
  with open(path, "r+b") as f:
    f.truncate(os.path.getsize(path) // 2)
  # A file that is not what its export JSON records is refused before it is run.
  result = run_main(capsys, run_dir=new, check_keras=False)
  assert result.returncode == 1
  (line,) = binary_helper.error_lines(result, PREFIX)
  assert "full_int8.tflite changed since it was exported" in line
  # A truncated file its JSON describes is caught by the interpreter.
  _adopt(path)
  result = run_main(capsys, run_dir=new, check_keras=False)
  assert result.returncode == 1
  (line,) = binary_helper.error_lines(result, PREFIX)
  assert "full_int8.tflite is not a valid TFLite model" in line
  assert not os.path.exists(os.path.join(new, "predictions", "full_int8", "0", "test.npz"))


def test_non_tflite_file(run_dir, tmp_path, capsys):
  new = copy_run(run_dir, tmp_path)
  path = os.path.join(new, "tflite", "dense", "0", "float32.tflite")
  with open(path, "wb") as f:
    f.write(b"this is not a flatbuffer")
  _adopt(path)
  result = run_main(capsys, run_dir=new, check_keras=False)
  assert result.returncode == 1
  (line,) = binary_helper.error_lines(result, PREFIX)
  assert "is not a TFLite flatbuffer" in line


def test_input_shape_mismatch(tmp_path, capsys):
  run = str(tmp_path / "run16")
  fake_run.write_member(
    run, "dense", 0, fake_run.tiny_cnn(0, input_shape=(16, 16, 1)), dataset="digits"
  )
  export.export_population(run, ["float32"], ["float32"])
  result = run_main(capsys, run_dir=run, dataset="digits")
  assert result.returncode == 1
  (line,) = binary_helper.error_lines(result, PREFIX)
  assert "model input shape (16, 16, 1) does not match the data set's image shape (8, 8, 1)" in line
  assert not os.path.exists(os.path.join(run, "predictions"))


def test_unwritable_output_dir(run_dir, tmp_path, capsys):
  new = copy_run(run_dir, tmp_path)
  with open(os.path.join(new, "predictions"), "w") as f:
    f.write("a file where the output directory should be")
  result = run_main(capsys, run_dir=new, check_keras=False)
  assert result.returncode == 1
  (line,) = binary_helper.error_lines(result, PREFIX)
  assert "cannot write" in line and "Traceback" not in result.stderr


def test_usage_errors():
  # Stray arguments are refused by the command harness (tests/e2e/audit_faults_test.py).
  with flagsaver.flagsaver(run_dir="/nonexistent/run"):
    with pytest.raises(app.UsageError, match="is not a directory"):
      MAIN(["evaluate_population"])
