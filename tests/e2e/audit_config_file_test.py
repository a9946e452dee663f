"""`audit --config=PATH`, through the audit command's `main` (`audit_binary.in_process`).

A finished run's `audit.json` records the whole configuration it was made with; fed back with
`--config` into a new `--out`, it reproduces the run: from the same trained members (the
committed tiny ones), the same `.tflite` files and the same report tables (latency columns
aside). Flags given with `--config` replace its fields, and are checked as the flags alone are.
`tf_forget.api.load_report` reads the finished run back.
"""

import hashlib
import json
import os
import re
import subprocess
import sys

import pandas as pd

from tests import timed
from tests.e2e import audit_binary
from tests.e2e import tiny_run
from tests.examples import readme_commands
from tf_forget import api
from tf_forget.artifacts import audit_json
from tf_forget.artifacts import names
from tf_forget.config import tree

TINY = [
  *tiny_run.FLAGS,
  "--quantizations=dynamic_int8",
  "--pruned_quantizations=none",
  "--corruptions=gaussian_noise",
  "--severities=3",
  "--noise_levels=none",
  "--deploy_encoding=plain",
  "--executor=inline",
]


def _tflite(run):
  """{relative path: sha256} of every .tflite file under `run`."""
  out = {}
  for root, _, files in os.walk(run):
    for name in files:
      if name.endswith(".tflite"):
        path = os.path.join(root, name)
        with open(path, "rb") as f:
          out[os.path.relpath(path, run)] = hashlib.sha256(f.read()).hexdigest()
  return out


def test_a_runs_audit_json_fed_back_reproduces_the_run(tmp_path):
  # Both runs start from the committed tiny members (tests/e2e/tiny_run.py).
  first = tiny_run.copy_members(str(tmp_path / "first"))
  again = tiny_run.copy_members(str(tmp_path / "again"))
  result = audit_binary.in_process([f"--out={first}", *TINY])
  assert result.returncode == 0, result.stderr[-3000:]
  recorded = json.loads((tmp_path / "first" / "audit.json").read_text())
  config = tree.AuditConfig.from_json(recorded[audit_json.CONFIG_KEY])
  assert config.out == first and config.population.members == 2
  assert config.robustness.corruptions == ("gaussian_noise",)

  result = audit_binary.in_process([f"--config={first}/audit.json", f"--out={again}"])
  assert result.returncode == 0, result.stderr[-3000:]
  tiny_run.assert_reused(first)
  tiny_run.assert_reused(again)
  assert _tflite(first) == _tflite(again) and len(_tflite(first)) >= 8
  a, b = api.load_report(first), api.load_report(again)
  assert a.passed and list(a.tables) == list(b.tables) and "verdict" in a.tables
  for name in a.tables:
    pd.testing.assert_frame_equal(
      timed.untimed(a.tables[name]), timed.untimed(b.tables[name]), obj=name
    )
  assert timed.without_timings(a.verdict) == timed.without_timings(b.verdict)
  assert a.verdict["variant"]
  assert b.report["config"] == dict(recorded[audit_json.CONFIG_KEY], out=again)
  # The tables of a Result are the report's CSV files, names (class 7) as text.
  csv = pd.read_csv(
    os.path.join(first, "tables", "verdict.csv"), dtype={c: str for c in names.NAME_COLUMNS}
  )
  assert csv["worst_class"].dropna().map(type).eq(str).all()
  pd.testing.assert_frame_equal(a.tables["verdict"], csv)

  # Flags given with --config replace its fields and are checked as flags.
  bad = audit_binary.in_process(
    [f"--config={first}/audit.json", f"--out={tmp_path}/x", "--members=1"]
  )
  assert audit_binary.one_line(bad) == "audit: error: --members must be an integer >= 2, got 1"
  assert not (tmp_path / "x").exists()
  plan = audit_binary.in_process(
    [f"--config={first}/audit.json", "--plan", "--members=3", "--variants=dense"]
  )
  assert plan.returncode == 0, plan.stderr[-3000:]
  # 3 dense members, trained for the file's 40 steps (not the tiny preset's 60), and the
  # file's dynamic_int8 format: 3 x (float32 + dynamic_int8) conversions.
  assert "3 members x" in plan.stdout and "(40 steps x" in plan.stdout, plan.stdout
  assert "6 conversions (float32 3, dynamic_int8 3)" in plan.stdout, plan.stdout

  # README's Python snippet, as written, on the first run: it resumes it, every artifact kept.
  with open(os.path.join(readme_commands.ROOT, "README.md"), encoding="utf-8") as f:
    snippet = [
      block
      for block in re.findall(r"```python\n(.*?)```", f.read(), re.S)
      if "runs/digits/audit.json" in block
    ][0]
  snippet = snippet.replace("runs/digits/audit.json", f"{first}/audit.json")
  run = subprocess.run(
    [sys.executable, "-c", snippet],
    env=audit_binary.env(),
    cwd=tmp_path,
    text=True,
    capture_output=True,
    timeout=600,
    check=False,
  )
  assert run.returncode == 0, run.stderr[-3000:]
  assert f"True {a.verdict['why']}" in run.stdout and "redo" not in run.stdout


def test_a_bad_configuration_file_is_one_line_and_writes_nothing(tmp_path):
  (tmp_path / "c.json").write_text(json.dumps({"schema": tree.CONFIG_SCHEMA, "noise": {"draw": 3}}))
  out = tmp_path / "run"
  result = audit_binary.in_process([f"--config={tmp_path}/c.json", f"--out={out}"])
  assert audit_binary.one_line(result).startswith(
    f"audit: error: {tmp_path}/c.json: unknown configuration field noise.draw (known: "
  )
  result = audit_binary.in_process([f"--config={tmp_path}/none.json", f"--out={out}"])
  assert "cannot read" in audit_binary.one_line(result)
  assert not out.exists()
