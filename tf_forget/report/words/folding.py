"""Repeated lines folded: a caveat said of several files, a note said of several variants.

Standard library only.
"""

import re

_WHO = re.compile(r"^(?P<who>[A-Za-z0-9_.~@+-]+): (?P<what>.+)$")


def fold(lines):
  """`lines` with repeats folded into one line ending "(xN)", in first-seen order."""
  counts = {}
  for line in lines:
    counts[line] = counts.get(line, 0) + 1
  return [line if n == 1 else f"{line} (x{n})" for line, n in counts.items()]


def fold_notes(notes, shown=4):
  """Report notes "<variant>: <text>" that say the same of several variants folded into one
  "<text> (N variants: a, b, ...)", then exact repeats folded (`fold`); first-seen order."""
  groups = {}
  for note in notes:
    m = _WHO.match(note)
    key = m["what"] if m else note
    groups.setdefault(key, []).append(m["who"] if m else None)
  out = []
  for what, who in groups.items():
    named = list(dict.fromkeys(w for w in who if w))
    if len(named) > 1:
      more = f", {len(named) - shown} more" if len(named) > shown else ""
      out.append(f"{what} ({len(named)} variants: {', '.join(named[:shown])}{more})")
    elif named:
      out += [f"{named[0]}: {what}"] * len(who)
    else:
      out += [what] * len(who)
  return fold(out)
