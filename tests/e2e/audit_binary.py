"""Runs the audit command for the end-to-end tests: in a subprocess (`audit`: `eval/audit.py`,
as a user does, for what only the process shows — its stderr, signals, the start-up), or through
the command's `main` in this process (`in_process`: the same exit status, one-line error and
files, without a second interpreter importing TensorFlow)."""

import contextlib
import hashlib
import io
import os
import subprocess
import sys
import types

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def env():
  """The environment of the binary: this checkout on PYTHONPATH, tf_keras, no GPU."""
  out = dict(os.environ, PYTHONPATH=ROOT, TF_USE_LEGACY_KERAS="1", CUDA_VISIBLE_DEVICES="")
  out.pop("BUILD_WORKING_DIRECTORY", None)
  return out


def audit(args, cwd=None, timeout=600):
  """`subprocess.CompletedProcess` of `eval/audit.py args` (text output captured)."""
  return subprocess.run(
    [sys.executable, os.path.join(ROOT, "eval", "audit.py"), *args],
    cwd=cwd,
    env=env(),
    text=True,
    capture_output=True,
    timeout=timeout,
    check=False,
  )


def in_process(args, cwd=None):
  """`eval/audit.py args` through the audit command's `main` in this process, as a
  `subprocess.CompletedProcess`-like result: `returncode` (0, 3 for a failed gate, 1 with the
  one-line error as `stderr`) and `stdout` (what the command printed). Needs the audit's flags
  on this process's `flags.FLAGS` (`tests/audit_main.py`), so a test file uses it only if it
  runs no other command in-process."""
  from tests import audit_main  # the audit's flags, defined on import
  from tests import binary_main

  out = io.StringIO()
  with contextlib.redirect_stdout(out):
    code = binary_main.run_argv(audit_main.main, "audit", list(args), cwd or os.getcwd())
  if isinstance(code, str):
    return types.SimpleNamespace(returncode=1, stdout=out.getvalue(), stderr=code + "\n")
  return types.SimpleNamespace(returncode=code or 0, stdout=out.getvalue(), stderr="")


def one_line(result):
  """The one line of a refused command (exit 1, nothing else on stderr)."""
  lines = result.stderr.strip().splitlines()
  assert result.returncode == 1 and len(lines) == 1, result.stderr[-3000:]
  return lines[0]


def sha256(path):
  with open(path, "rb") as f:
    return hashlib.sha256(f.read()).hexdigest()
