"""A finished run's record is used only while nothing it lists changed (finished_run).

A fake run: a folder of two class folders of "images" (the record reads no bytes), a model file
named by the configuration, the run's own files; `record` after `take`, as an audit does. Every
change a re-run must see — a touch keeping the size, an edit in place whose mtime is set back, a
file added, a run file rewritten, a model replaced, another configuration, another environment —
makes `unchanged` None; the executor alone does not. The command's fast path is checked in a
fresh interpreter: it prints the recorded end and loads no TensorFlow.
"""

import dataclasses
import os
import subprocess
import sys
import time

import pytest

from tf_forget.artifacts import layout
from tf_forget.config import tree
from tf_forget.data import fingerprint
from tf_forget.pipeline import finished_run

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@dataclasses.dataclass(frozen=True)
class _Hashed:
  """What `finished_run.record` reads of `data_identity.Hashed`."""

  what: str
  fingerprint: fingerprint.Fingerprint
  files: tuple
  folders: tuple


def _hashed(root):
  """The folder's files as `data_identity.attach` gives them (stats, no bytes read here)."""
  files, entries = [], []
  for parent, dirs, names in sorted(os.walk(root)):
    dirs.sort()
    for name in sorted(names):
      path = os.path.join(parent, name)
      st = os.stat(path)
      rel = os.path.relpath(path, root)
      files.append((rel, path))
      entries.append(
        fingerprint.Entry(
          rel, st.st_size, st.st_mtime_ns, "0" * 64, (1, 1), st.st_ctime_ns, st.st_ino
        )
      )
  folders = []
  for folder in sorted({root} | {os.path.dirname(p) for _, p in files}):
    st = os.stat(folder)
    folders.append((folder, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino))
  return [
    _Hashed("test split", fingerprint.Fingerprint(tuple(entries), 0), tuple(files), tuple(folders))
  ]


@pytest.fixture
def run(tmp_path):
  """(config, image path, model path) of a recorded finished run."""
  images = tmp_path / "images"
  for label in ("a", "b"):
    (images / label).mkdir(parents=True)
    for i in range(3):
      (images / label / f"{i}.png").write_bytes(bytes([i]) * 10)
  model = tmp_path / "model.keras"
  model.write_bytes(b"model")
  out = tmp_path / "run"
  (out / "deploy").mkdir(parents=True)
  (out / "report.json").write_text("{}")
  (out / "deploy" / "manifest.json").write_text("{}")
  (out / "logs").mkdir()
  config = tree.AuditConfig(
    out=str(out),
    data=tree.Data(dataset="folder"),
    user=tree.UserModels(references=(str(model),)),
  )
  config = tree.with_overrides(config, {"data.data_dir": str(images)})
  time.sleep(2 * finished_run.RACY_NS / 1e9)  # the inputs made before the run starts
  snapshot = finished_run.take(config)
  finished_run.record(snapshot, _hashed(str(images)), ["the verdict"], passed=False)
  assert os.path.isfile(layout.finished_file(str(out)))
  return config, images, model


def test_an_unchanged_run_is_its_record(run):
  config, _, _ = run
  doc = finished_run.unchanged(config)
  assert doc is not None and doc["lines"] == ["the verdict"] and doc["passed"] is False


def test_the_executor_and_the_logs_change_nothing(run):
  config, _, _ = run
  with open(os.path.join(config.out, "logs", "audit.log"), "w") as f:
    f.write("a new log")
  other = tree.with_overrides(config, {"execution.executor": "local", "execution.workers": 2})
  assert finished_run.unchanged(other) is not None


def test_a_touched_file_of_the_same_size_is_a_change(run):
  config, images, _ = run
  os.utime(images / "a" / "0.png")  # now: same size, new mtime
  assert finished_run.unchanged(config) is None


def test_an_edit_in_place_whose_mtime_is_set_back_is_a_change(run):
  config, images, _ = run
  path = images / "a" / "1.png"
  st = os.stat(path)
  path.write_bytes(b"x" * st.st_size)
  os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # size and mtime as recorded: ctime not
  assert os.stat(path).st_mtime_ns == st.st_mtime_ns
  assert finished_run.unchanged(config) is None


def test_a_file_added_to_a_class_folder_is_a_change(run):
  config, images, _ = run
  (images / "b" / "9.png").write_bytes(b"new")
  assert finished_run.unchanged(config) is None


def test_a_class_folder_added_is_a_change(run):
  config, images, _ = run
  (images / "c").mkdir()
  assert finished_run.unchanged(config) is None


def test_a_model_replaced_by_the_same_bytes_is_a_change(run, tmp_path):
  config, _, model = run
  other = tmp_path / "other"
  other.write_bytes(b"model")
  os.replace(other, model)  # same bytes, a new inode
  assert finished_run.unchanged(config) is None


def test_a_rewritten_report_is_a_change(run):
  config, _, _ = run
  with open(os.path.join(config.out, "report.json"), "w") as f:
    f.write("{}")
  assert finished_run.unchanged(config) is None


def test_another_configuration_or_environment_is_a_change(run, monkeypatch):
  config, _, _ = run
  assert finished_run.unchanged(tree.with_overrides(config, {"deployment.num_threads": 1})) is None
  monkeypatch.setenv(
    "TF_ENABLE_ONEDNN_OPTS", "1" if os.environ.get("TF_ENABLE_ONEDNN_OPTS") != "1" else "0"
  )
  assert finished_run.unchanged(config) is None


def test_the_lock_removes_the_record(run):
  from tf_forget.artifacts import run_lock

  config, _, _ = run
  run_lock.acquire(config.out, "audit", check=False).release()
  assert not os.path.exists(layout.finished_file(config.out))
  assert finished_run.unchanged(config) is None


def test_data_changed_after_the_start_leaves_no_record(tmp_path):
  images = tmp_path / "images"
  (images / "a").mkdir(parents=True)
  (images / "a" / "0.png").write_bytes(b"x")
  out = tmp_path / "run"
  out.mkdir()
  config = tree.with_overrides(
    tree.AuditConfig(out=str(out)), {"data.dataset": "folder", "data.data_dir": str(images)}
  )
  snapshot = finished_run.take(config)
  time.sleep(0.01)
  (images / "a" / "0.png").write_bytes(b"y")  # while the run reads it
  finished_run.record(snapshot, _hashed(str(images)), [], passed=True)
  assert not os.path.exists(layout.finished_file(str(out)))


def test_code_the_configuration_runs_leaves_no_record(tmp_path):
  config = tree.AuditConfig(
    out=str(tmp_path / "run"), user=tree.UserModels(references=("m.keras",), trust_model_code=True)
  )
  assert finished_run.take(config) is None


_REPORT = """
import sys
from tf_forget.commands import audit_command, tf_forget_main
from tf_forget.config import tree
from tf_forget.pipeline import finished_run
audit_command.prepare()
out = sys.argv[1]
config = tree.AuditConfig(out=out)
tree.save(config, out + "/audit.json")
finished_run.record(finished_run.take(config), [], ["the recorded verdict"], passed=False)
try:
  tf_forget_main.main(["report", out])
except SystemExit as e:
  print("exit", e.code)
print("loaded:", sorted(m for m in sys.modules if m.split(".")[0] in ("tensorflow", "tf_keras",
      "keras", "ai_edge_litert", "matplotlib")))
"""


def test_report_of_a_finished_run_prints_its_end_and_loads_no_tensorflow(tmp_path):
  out = tmp_path / "run"
  (out / "deploy").mkdir(parents=True)
  (out / "report.json").write_text("{}")
  (out / "deploy" / "manifest.json").write_text("{}")
  env = dict(os.environ, PYTHONPATH=ROOT)
  env.pop("GITHUB_STEP_SUMMARY", None)
  done = subprocess.run(
    [sys.executable, "-c", _REPORT, str(out)],
    capture_output=True,
    text=True,
    env=env,
    cwd=ROOT,
    timeout=120,
  )
  assert done.returncode == 0, done.stderr
  lines = done.stdout.splitlines()
  assert "is a finished run of this configuration" in lines[0], done.stdout
  assert "the recorded verdict" in lines and "exit 3" in lines
  assert lines[-1] == "loaded: []"
