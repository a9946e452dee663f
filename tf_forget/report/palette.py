"""One visual style per audited variant, by family: colour = the trained network.

A variant's *family* is the trained variant its file is made from (`names.family`: `dense`,
`prune_0.9`, `oneshot_mp_r10`, `iter_wt_c3`); its quantized or sparse-encoded children
(`prune_0.9+full_int8`, `full_int8`, `float32+sparse`) share its colour and differ by hatch
(bars), marker and line style (points, lines): the style the format table gives each (format,
encoding) (`tflite_formats.Format.style`).

Colours: `dense` is always `DENSE_COLOR` (dark neutral). Each pruning method gets one hue
(`names.parse_trained`: gradual `prune_<t>`, one-shot per algorithm, iterative per algorithm);
several families of one method in a figure get that hue at decreasing lightness by sparsity
(one-shot: 1 − 1/r or t) or cycle, light = least pruned. Names outside the grammar are their own
family, coloured from `EXTRA`. No two variants given to `styles` get the same
(colour, hatch, marker) — checked at the end, so a bug cannot pass silently.

Pure Python (colorsys), no matplotlib.
"""

import colorsys
import math

from tf_forget.artifacts import names
from tf_forget.artifacts import tflite_formats

DENSE_COLOR = "#3a3a3a"
# Base colour of each (method, algorithm) group (seaborn "deep"-like, colour-blind friendly).
GROUP_COLORS = {
  (names.GRADUAL, None): "#dd8452",  # orange
  (names.ONESHOT, "mp"): "#4c72b0",  # blue
  (names.ONESHOT, "gp"): "#55a868",  # green
  (names.ONESHOT, "up"): "#8172b3",  # purple
  (names.ONESHOT, "rp"): "#937860",  # brown
  (names.ITERATIVE, "wt"): "#c44e52",  # red
  (names.ITERATIVE, "ft"): "#3a9fbf",  # teal
}
# Families outside the name grammar, in order of appearance.
EXTRA = (
  "#da8bc3",
  "#ccb974",
  "#64b5cd",
  "#8c613c",
  "#82c6e2",
  "#a1c9f4",
  "#d0bbff",
  "#ff9f9b",
  "#8de5a1",
  "#fab0e4",
)
LIGHTEST, DARKEST = 0.74, 0.30  # HLS lightness range of a group's families
# A repaired full int8 file `full_int8~float<N>`: hatch "x" with a mark per N (and
# one more "x" every 8), its own marker; the same dash-dot line. Several N of one family differ.
# The line style of every repaired file.
_REPAIRED_MARKS = ("", "|", "-", "+", "/", "\\", "o", "O")
_REPAIRED_MARKERS = ("d", "p", "*", "8", "<", ">", "H", "1")
_REPAIRED_LINE = (0, (4, 1, 1, 1))


# The other repairs: hatch "x" with a mark none of float<N> uses, their own marker.
_OTHER_REPAIRS = {"cle": ("x.", "^"), "int16x8": ("x*", "s"), "auto": ("x|-", "D")}


def _repaired_child(fmt):
  """(hatch, marker, line style) of the repaired format `fmt` (`full_int8~<repair>`)."""
  kind = names.repair_kind(fmt)
  if kind in _OTHER_REPAIRS:
    return _OTHER_REPAIRS[kind] + (_REPAIRED_LINE,)
  i = names.repair_layers(fmt) - 1
  return (
    "x" * (1 + i // len(_REPAIRED_MARKS)) + _REPAIRED_MARKS[i % len(_REPAIRED_MARKS)],
    _REPAIRED_MARKERS[i % len(_REPAIRED_MARKERS)],
    _REPAIRED_LINE,
  )


def _child(fmt, encoding):
  """(hatch, marker, line style) of a format's file in `encoding` (`tflite_formats`)."""
  style = tflite_formats.get(fmt).style(encoding)
  return style.hatch, style.marker, style.linestyle


class StyleError(ValueError):
  """Two variants of one figure would look the same (a bug in this module)."""


def _parse(variant):
  """(family, format, encoding) of an audited variant name; unknown names are their own
  family with the defaults."""
  try:
    v = names.parse_variant(str(variant))
  except names.FormatError:
    return str(variant), names.DEFAULT_FORMAT, names.DEFAULT_ENCODING
  return names.family(variant), v.format, v.encoding


def _style_parts(variant):
  """`_parse`, but a file the user brings (`user_<NAME>`) is a family of its own:
  it is not one of tf_forget's formats, so it gets a colour of its own, not a hatch."""
  fam, fmt, enc = _parse(variant)
  if names.is_user_format(fmt):
    return str(variant), names.DEFAULT_FORMAT, enc
  if names.repair_kind(fmt) is not None:  # a repaired full int8 file: its hatch
    return fam, fmt, "repaired"
  return fam, fmt, enc


def _group(fam):
  """(group key, order within the group) of a family; group None = outside the grammar."""
  try:
    t = names.parse_trained(fam)
  except names.VariantError:
    return None, 0.0
  if t.method == names.DENSE:
    return (names.DENSE, None), 0.0
  order = float(t.cycle) if t.iterative else t.sparsity
  key = (t.method, t.algorithm if t.method != names.GRADUAL else None)
  return key, order


def _hex(rgb):
  return "#" + "".join(f"{int(round(255 * max(0.0, min(1.0, c)))):02x}" for c in rgb)


def _rgb(color):
  return tuple(int(color[i : i + 2], 16) / 255 for i in (1, 3, 5))


def with_lightness(color, lightness):
  """`color` (#rrggbb) with its HLS lightness replaced."""
  h, _, s = colorsys.rgb_to_hls(*_rgb(color))
  return _hex(colorsys.hls_to_rgb(h, lightness, s))


def luminance(color):
  """Relative luminance (sRGB, WCAG) of #rrggbb, 0 (black) to 1 (white)."""

  def lin(c):
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

  r, g, b = (lin(c) for c in _rgb(color))
  return 0.2126 * r + 0.7152 * g + 0.0722 * b


def ink(color):
  """Black or white, whichever reads better on `color` (hatches, cell annotations)."""
  return "#1a1a1a" if luminance(color) > 0.33 else "#ffffff"


def family_colors(families):
  """{family: #rrggbb} for the distinct families of one figure (see the module docstring)."""
  groups, extra = {}, []
  for fam in dict.fromkeys(families):
    key, order = _group(fam)
    if key is None:
      extra.append(fam)
    else:
      groups.setdefault(key, []).append((order if not math.isnan(order) else 0.0, fam))
  out = {}
  for key, members in groups.items():
    if key == (names.DENSE, None):
      out[members[0][1]] = DENSE_COLOR
      continue
    members.sort()
    base = GROUP_COLORS[key]
    if len(members) == 1:
      out[members[0][1]] = base
      continue
    step = (LIGHTEST - DARKEST) / (len(members) - 1)
    for i, (_, fam) in enumerate(members):
      out[fam] = with_lightness(base, LIGHTEST - i * step)
  for i, fam in enumerate(extra):
    base = EXTRA[i % len(EXTRA)]
    rounds = i // len(EXTRA)
    out[fam] = base if not rounds else with_lightness(base, 0.62 - 0.22 * rounds)
  return out


def styles(variants):
  """One style per variant of a figure.

  Args:
    variants: audited variant names (order does not matter; duplicates collapse).

  Returns:
    dict variant -> {"color": #rrggbb (the family's), "hatch": str ("" for the plain float32
    file), "hatch_color": black or white against the colour, "marker": matplotlib marker,
    "linestyle": matplotlib line style}. Deterministic: the same names give the same styles.

  Raises:
    StyleError: two variants got the same (colour, hatch, marker) (cannot happen for names
      of the grammar; a guard).
  """
  parsed = {v: _style_parts(v) for v in dict.fromkeys(variants)}
  colors = family_colors(sorted({f for f, _, _ in parsed.values()}, key=str))
  out = {}
  for v, (fam, fmt, enc) in parsed.items():
    hatch, marker, linestyle = _repaired_child(fmt) if names.repair_kind(fmt) else _child(fmt, enc)
    out[v] = {
      "color": colors[fam],
      "hatch": hatch,
      "hatch_color": ink(colors[fam]),
      "marker": marker,
      "linestyle": linestyle,
    }
  seen = {}
  for v, s in out.items():
    key = (s["color"], s["hatch"], s["marker"])
    if key in seen:
      raise StyleError(f"variants {seen[key]!r} and {v!r} would look the same")
    seen[key] = v
  return out
