"""Ctrl-C / SIGTERM while a command is still starting: one line, exit 130 / 143.

A binary imports TensorFlow and most of tf_forget (1-3 s) before `tf_forget.cli.app.run`
installs its handlers; an interrupt then would print Python's traceback of the import under way.
`guard(name)`, run first by the binary (this module is standard library only, so it is in place
within milliseconds of the start), covers that time with the line `app` prints for an interrupt
before the first stage,

  audit: interrupted during start-up; run the same command to resume

and exit status 130 (SIGTERM: "terminated", 143). It exits at once (`os._exit`): nothing is
written yet, and exit hooks of a half-imported TensorFlow must not run. `app.run` then replaces
the handlers with its own.
"""

import os
import signal
import time

STARTED = time.time()  # when the command started: the binary imports this module first
INTERRUPTED = 130  # 128 + SIGINT
TERMINATED = 143  # 128 + SIGTERM
STARTING = "start-up"  # `tf_forget.cli.status.describe()` before the first section


def line(name, terminated, where):
  """ "<name>: interrupted during <where>; run the same command to resume" (or "terminated")."""
  verb = "terminated" if terminated else "interrupted"
  return f"{name}: {verb} during {where}; run the same command to resume"


def _stop(name):
  def stop(signum, frame):
    del frame
    terminated = signum == signal.SIGTERM
    try:
      os.write(2, (line(name, terminated, STARTING) + "\n").encode())
    finally:
      os._exit(TERMINATED if terminated else INTERRUPTED)

  return stop


def guard(name):
  """Makes SIGINT / SIGTERM print `line(name, ..., "start-up")` and exit 130 / 143 at once.

  A signal the command was started with ignored (`nohup`, a background job of a script) stays
  ignored.

  Args:
    name: the command's name, as given to `tf_forget.cli.app.run`.
  """
  stop = _stop(name)
  for signum in (signal.SIGINT, signal.SIGTERM):
    if signal.getsignal(signum) is not signal.SIG_IGN:
      signal.signal(signum, stop)
