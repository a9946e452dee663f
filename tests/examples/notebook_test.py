"""examples/notebook/audit_in_python.py, run as a script: `tf_forget.audit(...)`
with the command's flags as keywords, on a user's model, its int8 file and an image folder
(`tests/e2e/user_files.py`'s tiny ones, named as examples/own_model makes them). The script
selects Keras 2 itself: the environment does not."""

import json
import os
import shutil
import subprocess
import sys

from tests.e2e import audit_binary
from tests.e2e import user_files

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "examples", "notebook", "audit_in_python.py")


def test_the_example_audits_a_users_files_from_python(tmp_path):
  user = user_files.make(tmp_path / "files", num_images=100)
  shutil.copy(user / "int8.tflite", user / "model_int8.tflite")
  env = audit_binary.env()
  env.pop("TF_USE_LEGACY_KERAS")
  out = tmp_path / "audit"
  run = subprocess.run(
    [sys.executable, SCRIPT, str(user), str(out)],
    env=env,
    cwd=tmp_path,
    text=True,
    capture_output=True,
    timeout=600,
    check=False,
  )
  assert run.returncode == 0, run.stderr[-3000:]
  report = json.loads((out / "report.json").read_text())
  assert set(report["variants"]) == {"dense", "dynamic_int8", "user_int8"}
  rec = report["recommendation"]
  assert f"ship: {rec['file']} — {rec['why']}" in run.stdout
  assert "passed: True | failed: none" in run.stdout
  assert all(line in run.stdout for line in rec["users"])
  assert "user_int8" in run.stdout and f"report: {out}/report.html" in run.stdout
