"""TFLite formats and the variant names they produce (SPEC §1.1).

The format registry is a plain dict `FORMATS`: name -> converter options (what
`converter.convert` sets on a `tf.lite.TFLiteConverter`). The formats are those of
000 §2.4 and appendix A ("float16", "hybrid" dynamic range int8 and "fixed-point" int8 with the
first 100 training examples as representative data, TFLite with MLIR), plus the float32
reference with no optimisation.

Variant names (SPEC §1.1): a TFLite file is identified by (member variant, format, encoding).
Its *audited variant name* joins the parts with "+", leaving out the defaults:

  =================  ==========  ============  ===========================
  member variant     format      encoding      variant name
  =================  ==========  ============  ===========================
  dense              float32     plain         ``dense``
  dense              full_int8   plain         ``full_int8``
  prune_0.9          float32     plain         ``prune_0.9``
  prune_0.9          full_int8   plain         ``prune_0.9+full_int8``
  dense              float32     sparse        ``float32+sparse``
  dense              full_int8   sparse        ``full_int8+sparse``
  prune_0.9          float32     sparse        ``prune_0.9+sparse``
  prune_0.9          full_int8   sparse        ``prune_0.9+full_int8+sparse``
  =================  ==========  ============  ===========================

Encodings (issue #10): "plain" stores every weight, zeros included; "sparse" adds
`tf.lite.Optimize.EXPERIMENTAL_SPARSITY` to the converter's optimizations, which stores the
(pruned) constant weights in TFLite's compressed sparse format (`Tensor.sparsity`, CSR-like
`DimensionMetadata`). A sparse file is the "sparse-encoded twin" of the plain file of the same
member variant, format and member.
"""

import dataclasses

DENSE = "dense"
DEFAULT_FORMAT = "float32"
DEFAULT_ENCODING = "plain"

# name -> converter options. Keys:
#   optimize: set `converter.optimizations = [tf.lite.Optimize.DEFAULT]`.
#   supported_types: names of tf dtypes for `converter.target_spec.supported_types`.
#   int8_only: `target_spec.supported_ops = [TFLITE_BUILTINS_INT8]` (fail rather than fall back
#     to float kernels).
#   io_type: dtype name of `inference_input_type` / `inference_output_type` (None: float32).
#   representative: whether the format needs a representative data set (SPEC §2.5).
FORMATS = {
    "float32": dict(optimize=False, supported_types=(), int8_only=False, io_type=None,
                    representative=False),
    "float16": dict(optimize=True, supported_types=("float16",), int8_only=False, io_type=None,
                    representative=False),
    "dynamic_int8": dict(optimize=True, supported_types=(), int8_only=False, io_type=None,
                         representative=False),
    "full_int8": dict(optimize=True, supported_types=(), int8_only=True, io_type="int8",
                      representative=True),
}

# Weight encodings of a file (issue #10): name -> whether the converter gets
# `tf.lite.Optimize.EXPERIMENTAL_SPARSITY`.
ENCODINGS = ("plain", "sparse")
SPARSE = "sparse"


class FormatError(ValueError):
  """An unknown format, encoding or malformed variant name."""


@dataclasses.dataclass(frozen=True)
class Variant:
  """A TFLite variant: which member population, which format, which encoding.

  Attributes:
    member_variant: the trained population, "dense" or "prune_<t>" (SPEC §1.1).
    format: a key of `FORMATS`.
    encoding: a value of `ENCODINGS`.
  """
  member_variant: str
  format: str = DEFAULT_FORMAT
  encoding: str = DEFAULT_ENCODING

  def __post_init__(self):
    check_format(self.format)
    check_encoding(self.encoding)
    if (not self.member_variant or "+" in self.member_variant or "/" in self.member_variant or
        self.member_variant in ENCODINGS or self.member_variant in FORMATS):
      raise FormatError(f"bad member variant {self.member_variant!r}")

  @property
  def name(self):
    """The audited variant name (SPEC §1.1), e.g. "prune_0.9+full_int8"."""
    parts = []
    if self.member_variant != DENSE:
      parts.append(self.member_variant)
    if self.format != DEFAULT_FORMAT or (self.member_variant == DENSE and
                                         self.encoding != DEFAULT_ENCODING):
      parts.append(self.format)
    if self.encoding != DEFAULT_ENCODING:
      parts.append(self.encoding)
    return "+".join(parts) if parts else DENSE


def check_format(name):
  """Raises `FormatError` unless `name` is a key of `FORMATS`."""
  if name not in FORMATS:
    raise FormatError(f"unknown TFLite format {name!r} (known: {', '.join(FORMATS)})")


def check_encoding(name):
  """Raises `FormatError` unless `name` is in `ENCODINGS`."""
  if name not in ENCODINGS:
    raise FormatError(f"unknown encoding {name!r} (known: {', '.join(ENCODINGS)})")


def _parse_list(text, check, what):
  """Comma-separated names, checked with `check`, duplicates dropped, order kept."""
  names = [n.strip() for n in text.split(",") if n.strip()]
  if not names:
    raise FormatError(f"no {what} given")
  for name in names:
    check(name)
  return list(dict.fromkeys(names))


def parse_formats(text):
  """Parses a comma-separated list of formats ("float32,full_int8"), in the given order.

  Raises:
    FormatError: an empty list or an unknown format.
  """
  return _parse_list(text, check_format, "TFLite format")


def parse_encodings(text):
  """Parses a comma-separated list of encodings ("plain,sparse"), in the given order.

  Raises:
    FormatError: an empty list or an unknown encoding.
  """
  return _parse_list(text, check_encoding, "encoding")


def plain_twin(variant):
  """The plain-encoded `Variant` of the same member variant and format (itself if plain)."""
  return Variant(variant.member_variant, variant.format, DEFAULT_ENCODING)


def parse_variant(name):
  """Parses an audited variant name into a `Variant` (inverse of `Variant.name`).

  "full_int8" -> (dense, full_int8, plain); "prune_0.9" -> (prune_0.9, float32, plain);
  "prune_0.9+dynamic_int8" -> (prune_0.9, dynamic_int8, plain);
  "float32+sparse" -> (dense, float32, sparse); "prune_0.9+sparse" -> (prune_0.9, float32,
  sparse); "prune_0.9+full_int8+sparse" -> (prune_0.9, full_int8, sparse).

  Raises:
    FormatError: a malformed name or unknown parts.
  """
  parts = name.split("+")
  member, fmt, encoding = DENSE, DEFAULT_FORMAT, DEFAULT_ENCODING
  i = 0
  if parts[0] not in FORMATS:
    member = parts[0]
    i = 1
  if i < len(parts) and parts[i] in FORMATS:
    fmt = parts[i]
    i += 1
  if i < len(parts):
    encoding = parts[i]
    i += 1
  if i != len(parts) or not member:
    raise FormatError(f"malformed variant name {name!r}")
  variant = Variant(member, fmt, encoding)
  if variant.name != name:
    raise FormatError(f"non-canonical variant name {name!r} (canonical: {variant.name!r})")
  return variant
