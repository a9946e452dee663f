"""examples/model_optimization/README.md's commands, run as written on the offline digits.

`make_files.py` without `--mnist_dir` (the README's `$MNIST_DIR` left empty) follows the Model
Optimization tutorials on scikit-learn's digits resized to 28x28; the audit of its seven files
then ships an eligible file, never the 16x8 file (XNNPACK takes none of its ops: too slow), and
names the gzip sizes and what ran each file.
"""

import json
import os
import subprocess

from tests.examples import readme_commands

ROOT = readme_commands.ROOT


def test_the_readme_commands_weigh_the_seven_files(tmp_path):
  out = str(tmp_path / "tfmot")
  env = dict(os.environ, TF_USE_LEGACY_KERAS="1", CUDA_VISIBLE_DEVICES="", MNIST_DIR="")
  env.pop("BUILD_WORKING_DIRECTORY", None)
  commands = readme_commands.commands("examples/model_optimization/README.md", "/tmp/tfmot", out)
  assert len(commands) == 2
  for command in commands:
    result = subprocess.run(
      command,
      shell=True,
      cwd=ROOT,
      env=env,
      text=True,
      capture_output=True,
      timeout=1500,
      check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
  with open(os.path.join(out, "audit", "report.json"), encoding="utf-8") as f:
    report = json.load(f)
  rows = {r["variant"]: r for r in report["tables"]["verdict"]}
  assert len(rows) == 8  # the reference and seven files
  assert rows["user_ptq_16x8"]["verdict"] == "too slow"
  assert "reference kernels, 0/" in rows["user_ptq_16x8"]["runtime"]
  rec = report["recommendation"]
  assert rows[rec["variant"]]["verdict"] == "recommended" and rec["variant"] != "user_ptq_16x8"
  assert all(rows[v]["gzip_bytes"] > 0 for v in rows)
  assert rows["user_pruned_dyn"]["gzip_bytes"] < 0.6 * rows["user_ptq_dyn"]["gzip_bytes"]
  assert "XNNPACK" in rows["user_ptq_dyn"]["runtime"] and "gzip" in rec["why"]
  assert rec["why"] in result.stdout
