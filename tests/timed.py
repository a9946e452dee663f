"""What differs between two identical audits: timings and what is computed from them.

Latencies (and their ratios to the float reference), stage seconds and wall times are measured
anew by every run; a test comparing two runs' tables or JSON leaves them out.
"""

import re

TIMED = ("latency", "seconds", "per_second", "_ms", "wall_time", "vs_reference")
# Columns decided by timings: the ship rule's row verdict and its reason (dominated or too slow
# in one run, on the front in the next), the encoding's reason.
DECIDED = ("verdict", "reason")


def is_timed(name):
  """Whether a column or key named `name` holds a timing."""
  return any(t in name for t in TIMED)


def untimed(table):
  """`table` (a DataFrame) without its timed columns and those decided by timings."""
  return table[[c for c in table.columns if not is_timed(c) and c not in DECIDED]]


_RATIO = re.compile(r"\d+(\.\d+)?x the float reference's latency")
_SPREAD = re.compile(r"interquartile \d+(\.\d+)?-\d+(\.\d+)?x")


def without_timings(value):
  """`value` (a JSON value: the recommendation) with the measured latency ratios in its sentences
  replaced by `N`, so that two runs' verdicts compare equal when only their timings differ."""
  if isinstance(value, dict):
    return {k: without_timings(v) for k, v in value.items()}
  if isinstance(value, list):
    return [without_timings(v) for v in value]
  if isinstance(value, str):
    return _SPREAD.sub("interquartile N-Nx", _RATIO.sub("Nx the float reference's latency", value))
  return value
