"""An artifact is reused only if it is exactly what the current inputs would produce.

One tiny audit (preset "tiny", 2 members of dense and prune_0.5, float32 files, one corrupted
split, a small noise protocol) is made once per module, starting with the two measured typos
into the same --out; each test works on a copy of it. Without lineage, every scenario below
would give exit 0 and a wrong report, or a traceback:
  * an altered .tflite whose predictions were computed from the altered bytes;
  * a replaced model.keras;
  * a truncated predictions .npz (a BadZipFile traceback on every re-run);
  * a run directory made with another audit config (silently mixed into the report);
  * `--model=nosuch` / `--steps=7` / `--steps=70` (would write run.json, then refuse the
    corrected command);
  * an --out that cannot be written (a traceback).
"""

import errno
import json
import os
import shutil

from absl import flags
from absl.testing import flagsaver
import pytest

from tests import audit_main
from tf_forget.artifacts import fileio
from tf_forget.artifacts import predictions
from tf_forget.data import registry as data_registry
from tf_forget.evaluate import evaluate

FLAGS = flags.FLAGS
CONFIG = dict(
  preset="tiny",
  members=2,
  variants=["dense", "prune_0.5"],
  quantizations=[],
  pruned_quantizations=["none"],
  deploy_encoding="plain",
  corruptions=["gaussian_noise"],
  severities=["3"],
  noise_levels=["0", "0.5"],
  noise_draws=1,
  noise_examples=30,
)


def _run_main(capsys, **flag_values):
  """(exit code, stdout) of the audit binary."""
  code = 0
  with flagsaver.flagsaver(**flag_values):
    try:
      audit_main.main(["audit"])
    except SystemExit as e:
      code = e.code
  return code, capsys.readouterr().out


def _one_line_error(code):
  assert isinstance(code, str) and code.startswith("audit: error:"), code
  assert "\n" not in code
  return code


def _tree(path):
  """{relative path: (size, mtime_ns)} of every file under `path`."""
  out = {}
  for root, _, files in os.walk(path):
    for name in files:
      full = os.path.join(root, name)
      st = os.stat(full)
      out[os.path.relpath(full, path)] = (st.st_size, st.st_mtime_ns)
  return out


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
  """(run dir, report.json) of the tiny audit, made after two typos into the same --out."""
  out = tmp_path_factory.mktemp("base") / "run"
  capsys = _Capture()
  # The two typos: one line, exit 1, nothing written, --out not even created.
  for typo, message in (
    (dict(model="nosuch"), "unknown model 'nosuch'"),
    (dict(steps=7), "does not fit in 7 steps"),
    (dict(steps=70), "steps=70 is not a multiple of checkpoint_every=20"),
  ):
    code, _ = _run_main(capsys, out=str(out), **dict(CONFIG, **typo))
    assert message in _one_line_error(code)
    assert not out.exists()
  # ... and the corrected command into the same --out works.
  code, _ = _run_main(capsys, out=str(out), **CONFIG)
  assert code == 0
  config = json.loads((out / "audit.json").read_text())["config"]
  assert config["variants"] == ["dense", "prune_0.5"] and config["members"] == 2
  return out, json.loads((out / "report.json").read_text())


class _Capture:
  """A capsys stand-in for the module fixture (the audit prints its progress)."""

  def readouterr(self):
    return type("Out", (), {"out": ""})()


@pytest.fixture
def run(baseline, tmp_path):
  out = tmp_path / "run"
  shutil.copytree(baseline[0], out)
  return out, baseline[1]


def test_rerun_reuses_everything(run, capsys):
  out, report = run
  before = _tree(out / "predictions")
  code, log = _run_main(capsys, out=str(out), **CONFIG)
  assert code == 0 and "redo" not in log and "training" not in log
  assert _tree(out / "predictions") == before
  assert json.loads((out / "report.json").read_text())["variants"] == report["variants"]


def test_altered_tflite_predictions_are_redone(run, capsys):
  # The file is altered on disk (here: replaced by another valid model, the dense one), and
  # evaluation runs on the altered bytes. Later the export restores the file; the predictions
  # made from the altered bytes must not be reused.
  out, report = run
  tflite = out / "tflite" / "prune_0.5" / "0" / "float32.tflite"
  shipped = tflite.read_bytes()
  tflite.write_bytes((out / "tflite" / "dense" / "1" / "float32.tflite").read_bytes())
  # The stage refuses to evaluate a file that is not its export JSON's (rather than evaluate it
  # and record the JSON's sha256) ...
  with pytest.raises(evaluate.EvaluationError, match="changed since it was exported"):
    from tf_forget.evaluate import population_eval

    population_eval.evaluate_population(str(out), splits=["test"], check_keras=False)
  # ... and predictions of the altered bytes record the altered bytes' sha256.
  dataset = data_registry.get("digits")
  pred = out / "predictions" / "prune_0.5" / "0" / "test.npz"
  split_id = predictions.split_identity("digits", dataset.spec.options, "test")
  evaluate.evaluate_file(
    str(tflite),
    lambda: dataset.batches("test", 256),
    str(pred),
    "test",
    metadata={"variant": "prune_0.5", "k": 0},
    split_id=split_id,
    overwrite=True,
  )
  altered_top1 = predictions.read(str(pred))["metadata"]["top1_accuracy"]
  code, log = _run_main(capsys, out=str(out), **CONFIG)
  assert code == 0
  assert "redo prune_0.5/0 export: its .tflite changed since it was exported" in log
  assert "redo prune_0.5/0 test: its .tflite changed since it was evaluated" in log
  assert tflite.read_bytes() == shipped  # restored by the export
  meta = predictions.read(str(pred))["metadata"]
  export_json = json.loads((out / "tflite" / "prune_0.5" / "0" / "float32.json").read_text())
  assert meta["tflite_sha256"] == meta["inputs"]["tflite"] == export_json["sha256"]
  again = json.loads((out / "report.json").read_text())
  assert again["variants"] == report["variants"]  # the numbers of the shipped file
  assert meta["top1_accuracy"] != altered_top1


def test_replaced_model_keras_invalidates_downstream(run, capsys):
  out, report = run
  model = out / "members" / "prune_0.5" / "1" / "model.keras"
  model.write_bytes((out / "members" / "dense" / "1" / "model.keras").read_bytes())
  code, log = _run_main(capsys, out=str(out), **CONFIG)
  assert code == 0
  assert "redo members prune_0.5/1: its model.keras changed since it was trained" in log
  assert "redo prune_0.5/1 export: its model.keras changed since it was exported" in log
  meta = json.loads((model.parent / "metadata.json").read_text())
  export_json = json.loads((out / "tflite" / "prune_0.5" / "1" / "float32.json").read_text())
  assert export_json["inputs"]["model"] == meta["model_sha256"]
  assert export_json["sparsity"]["kernels"]["fraction"] == pytest.approx(0.5, abs=1e-3)
  pred = predictions.read(str(out / "predictions" / "prune_0.5" / "1" / "test.npz"))
  assert pred["metadata"]["tflite_sha256"] == export_json["sha256"]
  # Retraining is deterministic (same seed, op determinism): the same numbers again.
  again = json.loads((out / "report.json").read_text())
  assert again["variants"] == report["variants"]


def test_truncated_predictions_are_redone(run, capsys):
  out, report = run
  for split in ("test", "gaussian_noise@3"):
    path = out / "predictions" / "dense" / "1" / f"{split}.npz"
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])
  noise = out / "noise" / "prune_0.5" / "0" / "linf.npz"
  noise.write_bytes(noise.read_bytes()[:100])
  code, log = _run_main(capsys, out=str(out), **CONFIG)
  assert code == 0
  assert "redo dense/1 test: it is unreadable" in log
  assert "redo dense/1 gaussian_noise@3: it is unreadable" in log
  assert "redo prune_0.5/0 l-inf noise: it is unreadable" in log
  again = json.loads((out / "report.json").read_text())
  assert again["variants"] == report["variants"]
  assert again["tables"]["noise_accuracy"] == report["tables"]["noise_accuracy"]


@pytest.mark.parametrize(
  "change, message",
  [
    (
      dict(quantizations=["full_int8"]),
      "was made with quantizations=[]; this run asks "
      "quantizations=['full_int8']: use another --out or remove it",
    ),
    (
      dict(corruptions=["fog"]),
      "corruptions=['gaussian_noise@3']; this run asks corruptions=['fog@3']",
    ),
    (dict(noise_levels=["0", "0.3"]), "noise.eps=[0.0, 0.5]; this run asks noise.eps=[0.0, 0.3]"),
    (dict(members=3), "members=2; this run asks members=3"),
    (dict(steps=40), "preset_params.steps=60; this run asks preset_params.steps=40"),
  ],
)
def test_conflicting_config_is_refused_and_nothing_written(run, capsys, change, message):
  out, _ = run
  before = _tree(out)
  code, _ = _run_main(capsys, out=str(out), **dict(CONFIG, **change))
  assert message in _one_line_error(code)
  assert _tree(out) == before


def test_settings_that_only_affect_the_bundle_are_not_conflicts(run, capsys):
  out, _ = run
  code, log = _run_main(capsys, out=str(out), **dict(CONFIG, num_threads=1, max_accuracy_drop=1.0))
  assert code == 0
  # Only the latency-based encoding choice is timed again (other threads: the choice records the
  # settings it was measured with); no artifact is redone.
  redone = [line.strip() for line in log.splitlines() if line.strip().startswith("redo")]
  assert redone and all(
    " encoding: settings changed (num_threads 2 -> 1)" in line for line in redone
  ), redone


def test_unwritable_out_is_one_line(tmp_path, capsys, monkeypatch):
  def denied(path, data):
    raise PermissionError(errno.EACCES, "Permission denied")

  monkeypatch.setattr(fileio, "_write_file", denied)
  out = tmp_path / "ro"
  out.mkdir()
  code, _ = _run_main(capsys, out=str(out), **CONFIG)
  assert f"cannot write to {out}: Permission denied" in _one_line_error(code)
  assert list(out.iterdir()) == []
  code, _ = _run_main(capsys, out=str(tmp_path / "new" / "run"), **CONFIG)
  assert "Permission denied" in _one_line_error(code)
  assert not (tmp_path / "new").exists()  # what the check created is removed again


def test_a_bug_keeps_its_traceback(tmp_path, capsys, monkeypatch):
  # Only the project's error base class is turned into one line: a KeyError from a bug is not.
  from tf_forget.pipeline import audit_plan

  def bug(config):
    raise KeyError("bug")

  monkeypatch.setattr(audit_plan, "plan", bug)
  with pytest.raises(KeyError):
    _run_main(capsys, out=str(tmp_path / "run"), **CONFIG)
