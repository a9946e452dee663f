"""Quantities as text: rates, counts of examples, changes in points and sizes.

* `rate`: a fraction as a percentage with enough digits to tell it from a gate's bound (two
  significant digits, more when the bound needs them: 0.07% and 0.15% differ, a flip rate of
  0.0007 is not "0.1%"), and the count behind it when it is small ("0.03% (3 of 10,000)");
* `count`: a count of examples, whole or a mean over members;
* `points`: a change in percentage points ("+0.40 pt");
* `kib`: a size in KiB.

Standard library only.
"""

import math

# A rate whose count is at most this is shown with its count ("0.03% (3 of 10,000)").
SMALL_COUNT = 99


def _decimals(percent, significant=2):
  """Decimals that show `percent` with `significant` significant digits (at least 1 for >= 1)."""
  if percent == 0:
    return 0
  magnitude = math.floor(math.log10(abs(percent)))
  return max(1, significant - 1 - magnitude) if abs(percent) < 1 else 1


def rate(fraction, count=None, total=None, bound=None):
  """A fraction as a percentage that can be told apart from `bound` ("n/a" if undefined).

  Args:
    fraction: the rate (0.0007 -> "0.07%"); None or NaN -> "n/a".
    count, total: the count and denominator behind it, appended when the count is small
      (`SMALL_COUNT`): "0.03% (3 of 10,000)".
    bound: a gate's bound (a fraction): digits are added until the shown rate and the shown
      bound differ, whenever the two values differ.

  Returns:
    str.
  """
  if fraction is None or isinstance(fraction, bool) or fraction != fraction:
    return "n/a"
  percent = 100 * float(fraction)
  digits = _decimals(percent)
  if bound is not None and bound == bound and float(bound) != float(fraction):
    b = 100 * float(bound)
    while digits < 8 and round(percent, digits) == round(b, digits):
      digits += 1
  text = f"{percent:.{digits}f}"
  if abs(percent) < 1 and "." in text:  # 0.070 -> 0.07 (the same value: still told apart)
    text = text.rstrip("0").rstrip(".")
  text += "%"
  if count is not None and total and int(count) <= SMALL_COUNT:
    text += f" ({int(count):,} of {int(total):,})"
  return text


def count(x):
  """A count of examples: whole, or one decimal for a mean over members ("n/a": undefined)."""
  if x != x:
    return "n/a"
  return f"{x:.0f}" if abs(x - round(x)) < 1e-6 else f"{x:.1f}"


def points(x):
  """A change as percentage points with its sign: '+0.40 pt'."""
  return f"{100 * x:+.2f} pt"


def kib(x):
  """A size in bytes as KiB: '12.3 KiB'."""
  return f"{x / 1024:.1f} KiB"
