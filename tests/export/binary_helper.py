"""Runs a binary's module in a subprocess (both binaries define --run_dir, so not in-process)."""

import os
import subprocess
import sys


def run_binary(module, *args, timeout=240):
  """Runs `python -m module args...`; returns the CompletedProcess (text)."""
  env = dict(
    os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p), TF_CPP_MIN_LOG_LEVEL="2"
  )
  return subprocess.run(
    [sys.executable, "-m", module, *args],
    capture_output=True,
    text=True,
    env=env,
    timeout=timeout,
    check=False,
  )


def error_lines(result, prefix):
  """The stderr lines of a binary's own error message (TensorFlow logs aside)."""
  return [line for line in result.stderr.splitlines() if line.startswith(prefix)]
