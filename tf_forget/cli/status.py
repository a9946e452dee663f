"""Which stage a command is in and how many of its units are done (issue #25).

A leaf module (standard library only) that the stages' progress counters update and the
command's interrupt handler reads (`tf_forget.cli.app`), so that an interrupted command can
say "interrupted during <stage>, N of M units done" without the driver passing state around.
One process-wide record: commands run one audit at a time.
"""

import threading

_LOCK = threading.Lock()
_CURRENT = {"stage": None, "done": 0, "total": 0}


def begin(stage, total):
  """Starts `stage` with `total` units of work, none done."""
  with _LOCK:
    _CURRENT.update(stage=str(stage), done=0, total=int(total))


def advance(n=1):
  """Counts `n` more units of the current stage as done."""
  with _LOCK:
    _CURRENT["done"] = min(_CURRENT["done"] + int(n), max(_CURRENT["total"], 0))


def current():
  """(stage or None, units done, units in total) of the stage under way."""
  with _LOCK:
    return _CURRENT["stage"], _CURRENT["done"], _CURRENT["total"]


def describe():
  """"<stage>, N of M units done" (or "start-up" before the first stage)."""
  stage, done, total = current()
  if stage is None:
    return "start-up"
  if total <= 0:
    return stage
  return f"{stage}, {done} of {total} unit{'' if total == 1 else 's'} done"


def reset():
  """Forgets the stage (a new command in the same process, e.g. a test)."""
  begin(None, 0)
  with _LOCK:
    _CURRENT["stage"] = None
