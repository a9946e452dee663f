"""examples/own_model/README.md's commands, run as written.

The README's shell block is the promise: a model and an int8 file tf_forget did not make, a
folder of images and an attributes CSV, audited with one command. The test runs that block
(with the interpreter running this test and a temporary directory for /tmp/own_model) and
checks what the README says the report shows.
"""

import hashlib
import json
import os
import subprocess

from tests.examples import readme_commands

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_the_readme_commands_audit_a_model_tf_forget_did_not_make(tmp_path):
  out = str(tmp_path / "own")
  env = dict(os.environ, TF_USE_LEGACY_KERAS="1", CUDA_VISIBLE_DEVICES="")
  env.pop("BUILD_WORKING_DIRECTORY", None)
  for command in readme_commands.commands("examples/own_model/README.md", "/tmp/own_model", out):
    result = subprocess.run(
      command,
      shell=True,
      cwd=ROOT,
      env=env,
      text=True,
      capture_output=True,
      timeout=900,
      check=False,
    )
    assert result.returncode == 0, (command, result.stderr[-3000:])
  report = json.loads(open(os.path.join(out, "audit", "report.json")).read())
  assert set(report["variants"]) == {"dense", "dynamic_int8", "full_int8", "user_int8"}
  assert report["recommendation"]["design"].startswith("Design: one network (K = 1)")
  assert "paired over the test examples" in report["recommendation"]["why"]
  assert {r["subgroup"] for r in report["tables"]["k1_subgroups"]} >= {"heavy_ink=1", "heavy_ink=0"}
  kinds = {"broken", "fixed", "changed"}
  assert all(r["kind"] in kinds for r in report["tables"].get("flips", []))
  manifest = json.loads(open(os.path.join(out, "audit", "deploy", "manifest.json")).read())
  with open(os.path.join(out, "model_int8.tflite"), "rb") as f:
    sha = hashlib.sha256(f.read()).hexdigest()
  assert {f["variant"]: f["sha256"] for f in manifest["files"]}["user_int8"] == sha
  page = open(os.path.join(out, "audit", "report.html"), encoding="utf-8").read()
  assert "one network (K = 1)" in page and "<section id=\"k1\">" in page
