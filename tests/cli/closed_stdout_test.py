"""A command whose standard output's reader went away (`... | head -1`) stops without a
traceback: the audit binary's and `tf-forget`'s `--help` exit 0 with nothing on stderr, and a
command still at work stops with exit status 141 and, once a stage is under way, one line
saying where.

Each runs in a subprocess whose standard output is a pipe whose reading end is closed before
it starts (a reader that left at once): every write to it fails, whatever the timing.
"""

import os
import subprocess
import sys
import textwrap

from tests.e2e import audit_binary

PIPE_CLOSED = 141


def _run(args):
  """`subprocess.CompletedProcess` of `args` (stderr captured) writing to a closed pipe."""
  read_end, write_end = os.pipe()
  os.close(read_end)
  try:
    return subprocess.run(
      args,
      stdout=write_end,
      stderr=subprocess.PIPE,
      text=True,
      env=audit_binary.env(),
      cwd=audit_binary.ROOT,
      timeout=300,
      check=False,
    )
  finally:
    os.close(write_end)


def test_help_to_a_closed_stdout_exits_quietly():
  for args in (
    ["eval/audit.py", "--help"],
    ["-m", "tf_forget", "--help"],
    ["-m", "tf_forget", "audit", "--help"],
  ):
    result = _run([sys.executable, *args])
    assert (result.returncode, result.stderr) == (0, ""), (args, result.stderr[-2000:])


# A command under `tf_forget.cli.app.run` that writes progress lines during a stage.
_WORKING = textwrap.dedent("""
    import sys
    from tf_forget.cli import app, status

    def main(argv):
      status.section("train")
      status.begin("train", 4)
      status.advance(1)
      for i in range(100_000):
        print(f"  [train] line {i}")
      return 0

    app.run(main, "toy")
""")


def test_a_command_at_work_stops_with_one_line():
  result = _run([sys.executable, "-c", _WORKING])
  assert result.returncode == PIPE_CLOSED, result.stderr[-2000:]
  assert result.stderr.splitlines() == [
    "toy: stopped during train, 1 of 4 units done (its output was closed); run the same "
    "command to resume"
  ]
