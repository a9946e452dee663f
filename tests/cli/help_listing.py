"""Reads absl's `--helpfull` listing: the flags under one module's heading (the help tests)."""

import re

FLAG_LINE = r"^  --(?:\[no\])?(\w+):"  # --[no]overwrite: a bool in absl's listing


def flags_under(text, heading_pattern):
  """{flag names} listed under the first heading of `text` matching `heading_pattern`."""
  out, inside = set(), False
  for line in text.splitlines():
    if re.fullmatch(heading_pattern, line):
      inside = True
    elif inside and line and not line.startswith(" "):
      break
    elif inside and re.match(FLAG_LINE, line):
      out.add(re.match(FLAG_LINE, line).group(1))
  return out
