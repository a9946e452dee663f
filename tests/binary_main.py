"""Runs an absl binary's `main` in this process with flags set, returning its exit status.

For the many one-line refusals of a binary: each is its `main`'s own `sys.exit` line, without
the seconds a subprocess spends importing TensorFlow. The tests that check what the command
itself promises (exit status, stderr, files) keep running it in a subprocess.
"""

import os

from absl import flags
from absl.testing import flagsaver


def run_main(main, argv0, **flag_values):
  """Calls `main([argv0])` under `flagsaver` with `flag_values`.

  Returns:
    0 if `main` returned, else the `SystemExit` code (an int or the one-line error string).
  """
  with flagsaver.flagsaver(**flag_values):
    try:
      main([argv0])
    except SystemExit as e:
      return e.code
  return 0


def run_argv(main, argv0, args, cwd):
  """Calls `main` on the command line `[argv0, *args]` parsed as the binary parses it, in the
  working directory `cwd` (restored afterwards), under `flagsaver`.

  Returns:
    As `run_main`.
  """
  previous = os.getcwd()
  with flagsaver.flagsaver():
    try:
      os.chdir(cwd)
      main(flags.FLAGS([argv0, *args]))
    except SystemExit as e:
      return e.code
    finally:
      os.chdir(previous)
  return 0
