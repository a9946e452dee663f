"""A re-run whose report cannot be written fails with one line and leaves the previous report
(tables/, report.json) and bundle byte for byte, through the audit binary."""

import os
import subprocess
import sys

from tests import files

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _audit(out):
  """A tiny inline audit (two members a variant, 40 steps, no corruptions, noise or sparse)."""
  cmd = [
    sys.executable,
    os.path.join(ROOT, "eval", "audit.py"),
    "--dataset=digits",
    f"--out={out}",
    "--preset=tiny",
    "--members=2",
    "--variants=dense,prune_0.5",
    "--steps=40",
    "--quantizations=",
    "--pruned_quantizations=none",
    "--corruptions=none",
    "--noise_levels=none",
    "--deploy_encoding=plain",
    "--executor=inline",
  ]
  return subprocess.run(
    cmd, env=dict(os.environ, PYTHONPATH=ROOT), capture_output=True, text=True, timeout=900
  )


def test_a_rerun_that_cannot_write_its_report_keeps_the_previous_one(tmp_path):
  out = str(tmp_path / "run")
  first = _audit(out)
  assert first.returncode == 0, first.stderr[-3000:]
  before = files.snapshot(out, ("tables", "report.json", "deploy"))
  assert "report.json" in before and any(p.startswith("tables/") for p in before)
  os.remove(os.path.join(out, "report.html"))
  os.mkdir(os.path.join(out, "report.html"))  # report.html replaced by a directory
  again = _audit(out)
  assert again.returncode == 1, again.stdout[-3000:] + again.stderr[-3000:]
  errors = [line for line in again.stderr.splitlines() if line.startswith("audit: error:")]
  assert len(errors) == 1, again.stderr[-3000:]
  assert errors[0] == again.stderr.rstrip("\n").splitlines()[-1]
  assert errors[0].startswith(f"audit: error: cannot write the report under {out}: ")
  assert errors[0].endswith("report.html: Is a directory")
  # tables/, report.json and the bundle, byte for byte
  assert files.snapshot(out, ("tables", "report.json", "deploy")) == before
  assert os.path.isdir(os.path.join(out, "report.html"))
  assert not [e for e in os.listdir(out) if e.startswith((".report.", "deploy."))]
