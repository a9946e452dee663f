"""tf_forget.cli.startup: Ctrl-C / SIGTERM before `app.run` (a binary's imports) is one line and
exit 130 / 143, in a child process that guards itself and then waits."""

import os
import signal
import subprocess
import sys

import pytest

from tf_forget.cli import startup

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_CHILD = (
  "import sys, time\n"
  "from tf_forget.cli import startup\n"
  "startup.guard('cmd')\n"
  "print('guarded', flush=True)\n"
  "time.sleep(60)\n"
)


def _child(ignore=()):
  def reset():  # the default handlers, whatever the test runner ignores; then `ignore`
    for signum in (signal.SIGINT, signal.SIGTERM):
      signal.signal(signum, signal.SIG_IGN if signum in ignore else signal.SIG_DFL)

  proc = subprocess.Popen(
    [sys.executable, "-c", _CHILD],
    cwd=_ROOT,
    text=True,
    env=dict(os.environ, PYTHONPATH=_ROOT),
    stdout=subprocess.PIPE,
    stderr=subprocess.PIPE,
    preexec_fn=reset,
  )
  assert proc.stdout.readline() == "guarded\n"
  return proc


@pytest.mark.parametrize(
  "signum, code, verb", [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")]
)
def test_a_signal_while_starting_is_one_line(signum, code, verb):
  proc = _child()
  proc.send_signal(signum)
  _, err = proc.communicate(timeout=30)
  assert proc.returncode == code
  assert err == f"cmd: {verb} during start-up; run the same command to resume\n"
  assert startup.line("cmd", signum == signal.SIGTERM, startup.STARTING) == err.strip()


def test_an_ignored_signal_stays_ignored():
  proc = _child(ignore=(signal.SIGINT,))  # a background job of a script
  try:
    proc.send_signal(signal.SIGINT)
    with pytest.raises(subprocess.TimeoutExpired):
      proc.wait(timeout=1.0)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 143 and err.startswith("cmd: terminated during start-up")
  finally:
    if proc.poll() is None:
      proc.kill()
      proc.wait()
