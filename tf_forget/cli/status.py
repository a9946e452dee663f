"""Which stage a command is in and how many of its units are done.

A leaf module (standard library only) that the stages' progress counters update and the
command's interrupt handler reads (`tf_forget.cli.app`), so that an interrupted command can
say "interrupted during <stage>, N of M units done" without the driver passing state around.
One process-wide record: commands run one audit at a time.
"""

import threading

_LOCK = threading.Lock()
_CURRENT = {"section": None, "stage": None, "done": 0, "total": 0}


def section(name):
  """Starts a section of the command (the audit's "populations"), no stage under way yet."""
  with _LOCK:
    _CURRENT.update(section=str(name), stage=None, done=0, total=0)


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
  """ "<stage>, N of M units done" (or "start-up" before the first stage).

  Within a section: "<section>" before its first stage, "<section> (<stage>, N of M units
  done)" after, "<section>, N of M units done" when the stage has the section's name.
  """
  stage, done, total = current()
  with _LOCK:
    name = _CURRENT["section"]
  counts = f"{done} of {total} unit{'' if total == 1 else 's'} done" if total > 0 else ""
  if stage is None:
    return name or "start-up"
  if name is None or name == stage:
    return f"{stage}, {counts}" if counts else stage
  return f"{name} ({stage}, {counts})" if counts else f"{name} ({stage})"


def reset():
  """Forgets the section and stage (a new command in the same process, e.g. a test)."""
  with _LOCK:
    _CURRENT.update(section=None, stage=None, done=0, total=0)
