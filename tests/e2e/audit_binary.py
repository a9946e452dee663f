"""Runs the audit binary (`eval/audit.py`) in a subprocess, as a user does, for the tests that
check what a command promises (the exit status, one-line errors, the files it writes)."""

import hashlib
import os
import subprocess
import sys

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


def one_line(result):
  """The one line of a refused command (exit 1, nothing else on stderr)."""
  lines = result.stderr.strip().splitlines()
  assert result.returncode == 1 and len(lines) == 1, result.stderr[-3000:]
  return lines[0]


def sha256(path):
  with open(path, "rb") as f:
    return hashlib.sha256(f.read()).hexdigest()
