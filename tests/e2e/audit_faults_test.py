"""Faults and misuse through the audit command itself.

A subprocess, as a user runs it, where the process is the point (locks held by a live or killed
process, signals, what reaches the terminal); the command's `main` in this process for the
refusals and the `ram://` run (`audit_binary.in_process`: the same exit status and one line).

Nothing lost (a directory that is not a run directory is refused, not written into), nothing
misplaced (`--out=ram://…` stays off the local disk, an unknown scheme is one line), one writer
per run directory (a second audit is refused naming the first; a dead holder's lock is taken
over), clean interrupts (Ctrl-C / SIGTERM: one line, exit 130 / 143, the re-run resumes), no
TensorFlow noise on the terminal (it goes to <out>/logs/; --verbose shows it), one-line errors
for bad flags (the command's `main` in this process: each is its own exit line), and a garbage
run.json redone rather than refused. Also the
output-divergence gate through the command, on a copy of the same finished run: exit 3.
"""

import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from tests import audit_main
from tests import binary_main
from tests.e2e import audit_binary
from tests.e2e import tiny_run

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
AUDIT = os.path.join(ROOT, "eval", "audit.py")
TINY = [
  *tiny_run.FLAGS,
  "--deploy_encoding=plain",
  "--quantizations=",
  "--pruned_quantizations=none",
  "--corruptions=none",
  "--noise_levels=none",
  "--executor=inline",
]


def _env():
  env = dict(os.environ, PYTHONPATH=ROOT)
  env.pop("TF_CPP_MIN_LOG_LEVEL", None)  # as a user has it: TensorFlow's C++ lines are on
  return env


def _run(args, cwd=None, timeout=600):
  return subprocess.run(
    [sys.executable, AUDIT, *args],
    env=_env(),
    cwd=cwd,
    text=True,
    capture_output=True,
    timeout=timeout,
    check=False,
  )


def _start(args, cwd=None):
  return subprocess.Popen(
    [sys.executable, AUDIT, *args],
    env=_env(),
    cwd=cwd,
    text=True,
    stdout=subprocess.PIPE,
    stderr=subprocess.PIPE,
    start_new_session=True,
  )


def _wait_for(predicate, what, proc, timeout=300):
  """Waits until `predicate()`; fails at once if `proc` (the audit waited on) has ended."""
  deadline = time.time() + timeout
  while time.time() < deadline:
    if predicate():
      return
    if proc.poll() is not None:
      raise AssertionError(
        f"the audit ended (exit {proc.returncode}) before {what}: {proc.communicate()[1][-3000:]}"
      )
    time.sleep(0.2)
  raise AssertionError(f"timed out waiting for {what}")


def _lock_holder(out):
  try:
    with open(os.path.join(out, ".tf_forget.lock"), encoding="utf-8") as f:
      text = f.read()
    return json.loads(text) if text.strip() else None
  except (OSError, ValueError):
    return None


def _one_line(result):
  lines = result.stderr.strip().splitlines()
  assert len(lines) == 1, result.stderr[-3000:]
  return lines[0]


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
  """A finished tiny audit from the committed members: (out, CompletedProcess)."""
  out = tiny_run.copy_members(str(tmp_path_factory.mktemp("finished") / "run"))
  result = _run([f"--out={out}", *TINY])
  assert result.returncode == 0, result.stderr[-3000:]
  tiny_run.assert_reused(out)
  return out, result


def test_a_normal_run_prints_no_tensorflow_lines_and_keeps_them_in_logs(finished):
  out, result = finished
  assert result.stderr == "", result.stderr[-3000:]
  assert "== 6/6 deployment bundle" in result.stdout
  for noise in (
    "cuInit",
    "cuda drivers",
    "Created TensorFlow Lite XNNPACK delegate",
    "absl::InitializeLog",
  ):
    assert noise not in result.stdout
  logs = glob.glob(os.path.join(out, "logs", "audit-*.log"))
  assert len(logs) == 1
  with open(logs[0], encoding="utf-8") as f:
    text = f.read()
  assert "absl::InitializeLog" in text or "cuda" in text.lower(), text[:2000]
  assert _lock_holder(out) is None, "a finished audit leaves its lock released (empty)"


def test_a_flip_rate_gate_fails_the_command_with_exit_3(finished, tmp_path):
  """The finished tiny run, copied (every artifact reused), audited again with
  --max_flip_rate=0: prune_0.5 (independently trained) flips examples against dense member k,
  so the gate fails it and the command exits 3; report.json has a `divergence` row for every
  compressed variant, and the manifest and the summary lines carry the same numbers."""
  out, _ = finished
  gated = str(tmp_path / "gated")
  shutil.copytree(out, gated)
  result = _run([f"--out={gated}", *TINY, "--max_flip_rate=0", "--max_kl=10"])
  assert "redo" not in result.stdout and "[train]" not in result.stdout, result.stdout[-3000:]
  with open(os.path.join(gated, "report.json"), encoding="utf-8") as f:
    report = json.load(f)
  rows = {r["variant"]: r for r in report["tables"]["divergence"]}
  compressed = set(report["variants"]) - {"dense"}
  assert compressed == {"prune_0.5"} and compressed <= set(rows)
  row = rows["prune_0.5"]
  flips = row["broken"] + row["fixed"] + row["changed"]
  assert flips > 0 and row["flip_rate"] == flips / (row["pairs"] * row["n"])
  assert (row["pairs"], row["design"], row["reference"]) == (2, "pairs", "independent member k")
  assert 0 < row["kl_mean"] < 10  # the KL gate passes
  assert result.returncode == 3, result.stderr[-3000:]
  with open(os.path.join(gated, "deploy", "manifest.json"), encoding="utf-8") as f:
    manifest = json.load(f)
  assert manifest["failed_variants"] == ["prune_0.5"]
  entry = next(e for e in manifest["files"] if e["variant"] == "prune_0.5")
  assert (entry["flip_rate"], entry["kl_mean"]) == (row["flip_rate"], row["kl_mean"])
  assert manifest["gates"]["max_flip_rate"] == 0 and manifest["gates"]["max_kl"] == 10
  (reason,) = entry["gate"]["reasons"]
  assert reason.startswith(f"top-1 flip rate {100 * row['flip_rate']:.2f}% of test examples")
  assert f"gate failed: prune_0.5: {reason}" in result.stdout


def test_verbose_shows_tensorflow_output(tmp_path):
  # celeb_a is not prepared: the command imports TensorFlow, then stops with one line.
  quiet = _run([f"--out={tmp_path / 'q'}", "--dataset=celeb_a"])
  verbose = _run(["--verbose", f"--out={tmp_path / 'v'}", "--dataset=celeb_a"])
  assert quiet.returncode == verbose.returncode == 1
  assert _one_line(quiet).startswith("audit: error: data set 'celeb_a' is not prepared")
  assert verbose.stderr.strip().splitlines()[-1] == _one_line(quiet)
  assert "absl::InitializeLog" in verbose.stderr or "cuda" in verbose.stderr.lower()
  assert list(tmp_path.iterdir()) == [], "a stopped command leaves no log behind"


def test_a_directory_that_is_not_a_run_directory_is_refused(tmp_path):
  out = tmp_path / "p"
  (out / "deploy").mkdir(parents=True)
  (out / "deploy" / "key").write_text("k")
  result = audit_binary.in_process([f"--out={out}", *TINY])
  line = audit_binary.one_line(result)
  assert line.startswith("audit: error:") and "not a tf_forget run directory" in line
  assert (out / "deploy" / "key").read_text() == "k"
  assert sorted(p.name for p in out.iterdir()) == ["deploy"]


def test_ram_out_is_not_written_to_the_local_disk(tmp_path):
  """The committed members copied into `ram://`, then the command audits there (in this
  process, where that file system lives): nothing lands in the working directory."""
  cwd = tmp_path / "cwd"
  cwd.mkdir()
  out = tiny_run.copy_members(f"ram://bucket-{os.getpid()}/run")
  result = audit_binary.in_process([f"--out={out}", *TINY], cwd=str(cwd))
  assert result.returncode == 0, result.stderr[-3000:]
  assert "== 6/6 deployment bundle" in result.stdout
  tiny_run.assert_reused(out)
  assert list(cwd.iterdir()) == [], "the ram:// run landed in the working directory"


def test_an_unknown_scheme_is_one_line_before_anything_is_written(tmp_path):
  result = audit_binary.in_process(["--out=foo://bucket/run", *TINY], cwd=str(tmp_path))
  line = audit_binary.one_line(result)
  assert line.startswith("audit: error: cannot write to foo://bucket/run")
  assert list(tmp_path.iterdir()) == []


def test_a_stray_argument_is_one_line_and_writes_nothing(tmp_path):
  result = _run([f"--out={tmp_path / 'out'}", "extra"], cwd=str(tmp_path))
  assert result.returncode == 1
  line = _one_line(result)
  assert line.startswith("audit: error:") and "unexpected arguments: extra (see --help)" in line
  assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
  "args, expected",
  [
    (["--image_size=abc"], "image_size must be two positive integers"),
    (["--image_size=28"], "image_size must be two positive integers"),
    (["--image_size=28.5,28"], "image_size must be two positive integers"),
    (["--image_size=3,3,3"], "image_size must be two positive integers"),
    (["--max_accuracy_drop=nan"], "--max_accuracy_drop must be a finite number"),
    (["--max_subgroup_fnr_increase=nan"], "--max_subgroup_fnr_increase must be a finite"),
    (["--max_subgroup_fnr_increase=0"], "digits has no protected attributes to gate"),
    (["--max_kl=nan"], "--max_kl must be a finite number"),
    (["--max_flip_rate=inf"], "--max_flip_rate"),
    (["--dataset=celeb_a"], "tfds build celeb_a --data_dir=DIR"),
    (["--executor=ray", "--ray_address=bogus:1234"], "cannot reach the Ray cluster at bogus:1234"),
  ],
)
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, args, expected):
  """In this process, through the command's `main` (its exit: the one-line message, status 1);
  the process itself is checked above and by the tests that run it."""
  code = binary_main.run_argv(
    audit_main.main, "audit", [f"--out={tmp_path / 'out'}", *args], str(tmp_path)
  )
  assert isinstance(code, str) and "\n" not in code, code
  assert code.startswith("audit: error:") and expected in code, code
  assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
  "binary, args",
  [
    ("eval/evaluate_population.py", []),
    ("tflite_export/export_population.py", []),
    ("tf_forget/train/train_population.py", []),
    ("tf_forget/corruptions/generate_corruptions.py", []),
    ("eval/evaluate_population.py", ["--run_dir=/tmp", "stray"]),
  ],
)
def test_stage_binaries_give_one_usage_line(binary, args):
  result = subprocess.run(
    [sys.executable, os.path.join(ROOT, binary), *args],
    env=_env(),
    text=True,
    capture_output=True,
    timeout=300,
    check=False,
  )
  assert result.returncode == 1
  line = _one_line(result)
  assert line.endswith("(see --help)") and ": error:" in line, line


def test_a_second_audit_is_refused_and_a_dead_holder_is_taken_over(tmp_path):
  out = str(tmp_path / "run")
  args = [f"--out={out}", *TINY[:3], "--steps=300", *TINY[4:]]  # ~35 s of training
  first = _start(args)
  try:
    _wait_for(lambda: (_lock_holder(out) or {}).get("pid") == first.pid, "the first's lock", first)
    second = _run(args, timeout=120)
    assert second.returncode == 1
    line = _one_line(second)
    assert f"is in use by audit (pid {first.pid} on" in line, line
    stage = subprocess.run(  # a stage binary takes the same lock
      [
        sys.executable,
        os.path.join(ROOT, "tflite_export", "export_population.py"),
        f"--run_dir={out}",
        "--formats=float32",
        "--pruned_formats=float32",
      ],
      env=_env(),
      text=True,
      capture_output=True,
      timeout=120,
      check=False,
    )
    assert stage.returncode == 1
    assert f"is in use by audit (pid {first.pid} on" in _one_line(stage)
    assert first.poll() is None, "the refused commands disturbed the running audit"
  finally:
    os.killpg(first.pid, signal.SIGKILL)
    first.communicate()
  assert _lock_holder(out)["pid"] == first.pid  # the dead holder's record is still there
  with open(os.path.join(out, "run.json"), "w", encoding="utf-8") as f:
    f.write("garbage{")  # and a garbage run.json: redone, not refused
  # The take-over is the point, not training again: the killed run's members and what they
  # were made with are replaced by the committed tiny ones, which the tiny audit then reuses.
  shutil.rmtree(os.path.join(out, "members"))
  os.remove(os.path.join(out, "audit.json"))
  tiny_run.copy_members(out)
  again = audit_binary.in_process([f"--out={out}", *TINY])
  assert again.returncode == 0, again.stderr[-3000:]
  assert f"taking over the lock of audit (pid {first.pid} on" in again.stdout
  assert "redo run.json: " in again.stdout
  tiny_run.assert_reused(out)
  with open(os.path.join(out, "run.json"), encoding="utf-8") as f:
    assert json.load(f)["dataset"] == "digits"
  assert _lock_holder(out) is None


@pytest.mark.parametrize(
  "signum, code, verb",
  [
    (signal.SIGINT, 130, "interrupted"),
    (signal.SIGTERM, 143, "terminated"),
  ],
)
def test_an_interrupt_is_one_line_and_the_rerun_resumes(tmp_path, signum, code, verb):
  out = str(tmp_path / "run")
  args = [f"--out={out}", *TINY[:2], "--variants=dense", "--steps=200", *TINY[4:]]
  proc = _start(args)
  try:
    _wait_for(lambda: os.path.isdir(os.path.join(out, "members")), "training to start", proc)
    time.sleep(1.0)
    proc.send_signal(signum)
    _, stderr = proc.communicate(timeout=120)
  finally:
    if proc.poll() is None:
      os.killpg(proc.pid, signal.SIGKILL)
  assert proc.returncode == code, stderr[-3000:]
  lines = stderr.strip().splitlines()
  assert len(lines) == 1, stderr[-3000:]
  assert lines[0].startswith(f"audit: {verb} during populations"), lines[0]
  assert lines[0].endswith("; run the same command to resume")
  assert _lock_holder(out) is None
  assert not glob.glob(os.path.join(out, "members", "*", "*", "*.tmp-*"))
  if signum == signal.SIGINT:  # the same command resumes (once is enough)
    done = _run(args)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "taking over" not in done.stdout and done.stderr == ""
