"""The `tf-forget` command (`python -m tf_forget`), in a subprocess as a user runs it.

Its dispatch (`--help`, `--version`, an unknown or missing command: one line, exit 1), the
audit's flags (exactly those of `eval/audit.py`), `plan`, `report RUN_DIR` (a finished run's
report written again from its artifacts) and the Markdown summary of `--summary` and
`$GITHUB_STEP_SUMMARY` (`tf_forget/report/summary_md.py`), on one tiny audit of a user's files
whose int8 file fails a gate (`--max_kl=0`: exit 3).
"""

import json
import os
import re
import subprocess
import sys

from tests.e2e import audit_binary
from tests.e2e import user_files
import tf_forget


def _command(args, cwd=None, **env):
  """`python -m tf_forget args` from this checkout; the Keras switch is left to the command."""
  environ = dict(audit_binary.env())
  for name in ("TF_USE_LEGACY_KERAS", "GITHUB_STEP_SUMMARY"):  # a CI runner's own summary
    environ.pop(name, None)
  environ.update(env)
  return subprocess.run(
    [sys.executable, "-m", "tf_forget", *args],
    cwd=cwd,
    env=environ,
    text=True,
    capture_output=True,
    timeout=600,
    check=False,
  )


def _one_line(result):
  lines = result.stderr.strip().splitlines()
  assert result.returncode == 1 and len(lines) == 1, (result.returncode, result.stderr[-3000:])
  return lines[0]


def _flags(help_text):
  return re.findall(r"^  --(\w+):", help_text, flags=re.M)


def test_dispatch_help_version_and_refusals():
  shown = _command(["--help"])
  assert shown.returncode == 0 and all(
    f"tf-forget {c}" in shown.stdout for c in ("audit", "plan", "report RUN_DIR")
  )
  version = _command(["--version"])
  assert version.returncode == 0 and version.stdout == f"tf-forget {tf_forget.__version__}\n"
  assert _one_line(_command(["frob"])) == (
    "tf-forget: error: unknown command 'frob' (the commands: audit, plan, report; tf-forget --help)"
  )
  assert _command([]).returncode == 1
  assert _one_line(_command(["report", "a", "b"])).startswith(
    "tf-forget: error: report takes one run directory, got 2"
  )
  assert _one_line(_command(["audit", "--members=x"])).startswith(
    "tf-forget audit: error: flag --members=x:"
  )
  assert _one_line(_command(["audit", "stray"])) == (
    "tf-forget audit: error: unexpected arguments: stray (see --help)"
  )

  ours, theirs = _command(["audit", "--help"]), audit_binary.audit(["--help"])
  assert ours.returncode == 0 and theirs.returncode == 0, ours.stderr[-2000:]
  assert _flags(ours.stdout) == _flags(theirs.stdout) and len(_flags(ours.stdout)) > 70
  assert "summary" in _flags(ours.stdout)
  assert _command(["plan", "--help"]).returncode == 0
  report_help = _command(["report", "--help"])
  assert report_help.returncode == 0
  assert _flags(report_help.stdout) == ["summary", "trust_model_code", "preprocess", "verbose"]


def test_plan_prints_the_cost_plan_and_writes_nothing(tmp_path):
  out = tmp_path / "run"
  plan = _command(["plan", "--dataset=digits", "--members=2", f"--out={out}"])
  assert plan.returncode == 0, plan.stderr[-3000:]
  assert plan.stdout.startswith("audit plan: digits") and "6 members x" in plan.stdout
  assert not out.exists()  # 3 variants x 2 members; nothing written
  refused = _command(["plan", f"--summary={tmp_path}/s.md"])
  assert _one_line(refused) == (
    "tf-forget plan: error: --summary is not for --plan (the plan writes nothing)"
  )


def test_summary_step_summary_and_report_again(tmp_path):
  user = user_files.make(tmp_path / "user", num_images=100)
  out, summary = tmp_path / "run", tmp_path / "summary.md"
  bad = _command(["audit", *user_files.args(out), f"--summary={tmp_path}/no/s.md"], cwd=user)
  assert "--summary: cannot write" in _one_line(bad) and not out.exists()

  gated = _command(["audit", *user_files.args(out), "--max_kl=0", f"--summary={summary}"], cwd=user)
  assert gated.returncode == 3, gated.stderr[-3000:]
  text = summary.read_text()
  assert text.startswith("### tf_forget audit — a gate failed: user_int8\n"), text
  report = json.loads((out / "report.json").read_text())
  rec = report["recommendation"]
  assert f"**Ship `{rec['file']}`**: {rec['why']}" in text  # the verdict sentence
  assert rec["users"] and all(f"- {line}" in text for line in rec["users"])  # your files
  assert "| variant | verdict | file to ship |" in text  # the verdict table
  assert re.search(r"^\| user_int8 \(K=1, paired examples\) \| fail \|", text, re.M), text
  assert "Failed gates:\n\n- `user_int8`: mean KL(reference ‖ file)" in text

  # report RUN_DIR: report.html made again from the artifacts, the same report.json; the
  # summary appended to GitHub's step summary file.
  before = (out / "report.json").read_bytes()
  os.remove(out / "report.html")
  step = tmp_path / "step.md"
  step.write_text("an earlier step's line\n")
  again = _command(["report", str(out)], cwd=tmp_path, GITHUB_STEP_SUMMARY=str(step))
  assert again.returncode == 3, again.stderr[-3000:]
  assert (out / "report.html").exists() and "  redo " not in again.stdout
  assert (out / "report.json").read_bytes() == before
  assert step.read_text() == "an earlier step's line\n" + text
  assert _one_line(_command(["report", str(tmp_path / "none")])).startswith(
    "tf-forget report: error:"
  )
