"""The audit command's `main` for in-process tests, without importing the binary.

Defines the audit's flags on this process's `flags.FLAGS` as `eval/audit.py` does
(`tf_forget.commands.audit_flags.define`), so that `tests/binary_main.py` and absl's
`flagsaver` set them, and runs the command's body (`tf_forget.commands.audit_command.run`).
Importing this module and a binary that defines the same flags in one process is an error
(absl's duplicate flag), as importing two binaries is.
"""

from absl import flags

from tf_forget.commands import audit_command
from tf_forget.commands import audit_flags

audit_flags.define(flags.FLAGS)
GATE_FAILED = audit_command.GATE_FAILED


def main(argv):
  """`eval/audit.py`'s `main`: the audit command over the parsed flags."""
  del argv  # the command line was parsed into flags.FLAGS
  return audit_command.run(flags.FLAGS, "audit")
