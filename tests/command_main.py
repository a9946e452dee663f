"""A command's `main` for in-process tests, without importing its binary.

`main_of(command)` defines the flags of a `tf_forget.commands.<binary>_command` module on this
process's `flags.FLAGS`, as its binary does (`tf_forget.cli.app.run_command`), so that
`tests/binary_main.py` and absl's `flagsaver` set them, and returns the binary's `main` (the
command's `run` over those flags). One command per test file: two commands define flags of the same
name (absl's duplicate flag), as two binaries do (`tests/audit_main.py` is the audit's).
"""

from absl import flags


def main_of(command):
  """Defines `command`'s flags on `flags.FLAGS`; returns `main(argv)` as the binary's."""
  command.define(flags.FLAGS)

  def main(argv):
    del argv  # the command line was parsed into flags.FLAGS
    return command.run(flags.FLAGS)

  return main
