"""The TFLite formats tf_forget converts a member to: one record per format, in one table.

A `Format` holds every fact the code reads about a format, so that export, report and cost
plan agree by construction:

* the converter options (`Format.options`, what `tf_forget.export.converter.convert` sets on a
  `tf.lite.TFLiteConverter`; recorded in each export's JSON and hashed into its lineage,
  docs/artifacts/tflite.md);
* what its files compute in (`cost_class`: the speed per multiply-accumulate
  `tf_forget.pipeline.user_costs` assumes) and how much longer its conversion takes than
  float32's (`convert_factor`: calibration runs the representative data);
* how the report draws its files (`plain`, `sparse`: hatch, marker and line style of the
  plain file and of its sparse-encoded twin, `tf_forget.report.palette`).

The formats are those of 000 §2.4 and appendix A ("float16", "hybrid" dynamic-range int8 and
"fixed-point" int8 with the first 100 training examples as representative data, docs/spec.md
§2.5), plus the float32 reference with no optimisation. `tf_forget.artifacts.names.FORMAT_NAMES`
is their names, in this order. A record without a style, with an unknown cost class or with a
style another format's file already has is refused when this module is imported (`check`).
Standard library only.
"""

import dataclasses
import re
from typing import Optional, Tuple, Union

from tf_forget.artifacts import errors

# What a file computes in: the keys of `tf_forget.pipeline.user_costs.SECONDS_PER_MAC`.
COST_CLASSES = ("float", "int8")
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")  # no "+", "~", "@", "/": they join names
# A matplotlib line style: a name ("-", "--") or (offset, (on, off, ...)) dashes.
LineStyle = Union[str, Tuple[int, Tuple[int, ...]]]


class TableError(errors.Error):
  """A format record that is incomplete or clashes with another (one line)."""


@dataclasses.dataclass(frozen=True)
class Style:
  """How a figure draws the files of one (format, encoding) of a family (`palette.styles`).

  Attributes:
    hatch: the bars' hatch ("" for none).
    marker: matplotlib marker of points.
    linestyle: matplotlib line style of lines.
  """

  hatch: str
  marker: str
  linestyle: LineStyle


@dataclasses.dataclass(frozen=True)
class Format:
  """One TFLite format.

  Attributes:
    name: the format's name in file stems and audited variant names (`names.Variant`).
    optimize: `converter.optimizations = [tf.lite.Optimize.DEFAULT]`.
    supported_types: names of tf dtypes for `converter.target_spec.supported_types`.
    int8_only: integer only: `target_spec.supported_ops = [TFLITE_BUILTINS_INT8]` (fail
      rather than fall back to float kernels).
    io_type: dtype name of `inference_input_type` / `inference_output_type` (None: float32).
    representative: whether the conversion calibrates on representative data
      (docs/spec.md §2.5).
    cost_class: one of `COST_CLASSES`: "int8" when its weights are int8 (dynamic-range and
      full integer), else "float".
    convert_factor: its conversion's time over float32's (`user_costs.convert_seconds`).
    plain: the style of its plain file.
    sparse: the style of its sparse-encoded twin.
  """

  name: str
  optimize: bool
  supported_types: Tuple[str, ...]
  int8_only: bool
  io_type: Optional[str]
  representative: bool
  cost_class: str
  convert_factor: float
  plain: Style
  sparse: Style

  @property
  def options(self):
    """The converter options as a dict (keys `optimize`, `supported_types`, `int8_only`,
    `io_type`, `representative`): what an export records and its lineage hashes."""
    return dict(
      optimize=self.optimize,
      supported_types=self.supported_types,
      int8_only=self.int8_only,
      io_type=self.io_type,
      representative=self.representative,
    )

  @property
  def integer(self):
    """Whether its files compute with int8 weights (`cost_class` "int8")."""
    return self.cost_class == "int8"

  def style(self, encoding):
    """The `Style` of its file in `encoding` ("plain" or "sparse", `names.ENCODINGS`).

    Raises:
      TableError: another encoding.
    """
    if encoding not in ("plain", "sparse"):
      raise TableError(f"format {self.name!r} has no style for encoding {encoding!r}")
    return self.plain if encoding == "plain" else self.sparse


FORMATS = (
  Format(
    "float32",
    optimize=False,
    supported_types=(),
    int8_only=False,
    io_type=None,
    representative=False,
    cost_class="float",
    convert_factor=1.0,
    plain=Style("", "o", "-"),
    sparse=Style("...", "h", (0, (6, 2))),
  ),
  Format(
    "float16",
    optimize=True,
    supported_types=("float16",),
    int8_only=False,
    io_type=None,
    representative=False,
    cost_class="float",
    convert_factor=1.0,
    plain=Style("///", "s", "--"),
    sparse=Style("//..", "P", (0, (6, 2, 1, 2))),
  ),
  Format(
    "dynamic_int8",
    optimize=True,
    supported_types=(),
    int8_only=False,
    io_type=None,
    representative=False,
    cost_class="int8",
    convert_factor=1.0,
    plain=Style("\\\\\\", "^", "-."),
    sparse=Style("\\\\..", "v", (0, (3, 1, 1, 1, 1, 1))),
  ),
  Format(
    "full_int8",
    optimize=True,
    supported_types=(),
    int8_only=True,
    io_type="int8",
    representative=True,
    cost_class="int8",
    convert_factor=1.5,
    plain=Style("xxx", "D", ":"),
    sparse=Style("xx..", "X", (0, (1, 1))),
  ),
)


def check(table):
  """Raises `TableError` unless every record of `table` is complete and its own.

  Complete: a name of lower-case letters, digits and "_"; a `Style` for each encoding; a cost
  class of `COST_CLASSES`; supported types as a tuple. Its own: no name twice, and no
  (hatch, marker) of one (format, encoding) that another has (two files of a family would look
  the same in a figure).
  """
  seen: set = set()
  looks: dict = {}
  for f in table:
    if not isinstance(f, Format) or not _NAME.match(str(f.name)):
      raise TableError(f"bad TFLite format record {f!r}")
    if f.name in seen:
      raise TableError(f"TFLite format {f.name!r} is in the table twice")
    seen.add(f.name)
    if f.cost_class not in COST_CLASSES:
      raise TableError(
        f"format {f.name!r}: cost class {f.cost_class!r} is not one of {', '.join(COST_CLASSES)}"
      )
    if not isinstance(f.supported_types, tuple):
      raise TableError(f"format {f.name!r}: supported_types must be a tuple")
    for encoding in ("plain", "sparse"):
      style = f.style(encoding)
      if not isinstance(style, Style):
        raise TableError(f"format {f.name!r} has no style for its {encoding} files")
      key = (style.hatch, style.marker)
      if key in looks:
        raise TableError(f"format {f.name!r} ({encoding}) would look like {looks[key]}")
      looks[key] = f"{f.name!r} ({encoding})"


def names(table=None):
  """The format names of `table` (default: `FORMATS`), in its order."""
  return tuple(f.name for f in (FORMATS if table is None else table))


def get(name):
  """The `Format` named `name`.

  Raises:
    KeyError: not a format of `FORMATS` (callers check a name from outside first, in one line:
      `names.check_format`).
  """
  for f in FORMATS:
    if f.name == name:
      return f
  raise KeyError(name)


check(FORMATS)
