"""Runs an absl binary's `main` in this process with flags set, returning its exit status."""

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
