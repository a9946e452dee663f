"""The names of a run and their grammar (docs/spec.md §1.1): trained variants, audited variants,
splits.

The one home of every variant, format, encoding, repair and split name: their constants, parsers
and builders; the formats' names are those of the format table (`tflite_formats.FORMATS`, where
each format's other facts live). The grammar itself (what each name means, with examples) is
described in docs/artifacts/names.md. Standard library only.
"""

import dataclasses
import re
from typing import cast, Optional

from tf_forget.artifacts import errors
from tf_forget.artifacts import tflite_formats

DENSE = "dense"
GRADUAL = "gradual"
ONESHOT = "oneshot"
ITERATIVE = "iterative"
DEFAULT_FORMAT = "float32"
DEFAULT_ENCODING = "plain"
SPARSE = "sparse"
FORMAT_NAMES = tflite_formats.names()  # the table's formats, in its order
ENCODINGS = ("plain", "sparse")
# Where a shipped file runs (`tf_forget.evaluate.targets`): LiteRT with XNNPACK on a CPU; an
# integer-only accelerator or microcontroller; the LiteRT GPU delegate.
TARGETS = ("cpu", "integer_only", "gpu")
TARGET_TITLES = {
  "cpu": "CPU (LiteRT with XNNPACK)",
  "integer_only": "integer-only accelerators and microcontrollers (int8 ops, int8/uint8 "
  "I/O: Edge TPU, NPUs, TFLite Micro)",
  "gpu": "GPU (the LiteRT GPU delegate)",
}
SIZE_MEASURES = ("bytes", "gzip")
# Columns of the report's tables that hold names (class 7 is "7", never 7.0): a CSV reader
# keeps them as text.
NAME_COLUMNS = (
  "class_name",
  "worst_class",
  "worst_subgroup",
  "subgroup",
)  # what the ship rule weighs: the file, or its download
_PRUNE = re.compile(r"^prune_(0?\.\d+)$")
ONESHOT_ALGORITHMS = ("mp", "gp", "up", "rp")  # 002 §3 (docs/spec.md §6.1); their one home
_ONESHOT = re.compile(r"^oneshot_(?P<alg>[a-z]+)_(?P<kind>[rt])(?P<value>\d+(\.\d+)?|\.\d+)$")
ITERATIVE_ALGORITHMS = ("wt", "ft")  # 003 WT / FT (docs/spec.md §6.5); their one home
_ITERATIVE = re.compile(r"^iter_(?P<alg>[a-z]+)_c(?P<cycle>\d+)$")
_USER_FORMAT = re.compile(r"^user_[a-z0-9][a-z0-9_]{0,39}$")  # a file the user brings
USER_FORMAT_PREFIX = "user_"
REPAIRED_FORMAT = "full_int8"  # the format a repair starts from
NO_BYTE_REPAIRS = ("cle", "int16x8")  # every op stays int8-sized
AUTO_REPAIR = "auto"  # the file `tf_forget.evaluate.repair_search` chose
_REPAIR = re.compile(r"^(?:float(?P<layers>[1-9]\d?)|(?P<kind>cle|int16x8|auto))$")
_REPAIR_FORMAT = re.compile(r"^full_int8~(?P<repair>[a-z0-9]+)$")
REPAIR_NAMES = "float<N> (N in 1-99), cle, int16x8, auto"
_CORRUPTED = re.compile(r"^(?P<corruption>[^@/+]+)@(?P<severity>\d+)$")


class VariantError(errors.Error):
  """A trained-variant name outside the grammar (`parse_trained`)."""


class FormatError(errors.Error):
  """An unknown format, encoding or malformed audited variant name."""


class SplitNameError(errors.Error):
  """A split name that is neither a plain split nor `<corruption>@<severity>`."""


# --- trained variants -------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class TrainedVariant:
  """A trained variant.

  Attributes:
    name: canonical name (`dense`, `prune_0.9`, `oneshot_up_r10`, `iter_wt_c3`).
    sparsity: target fraction t of zeros among prunable weights (0 for dense; 1 − 1/r for a
      ratio, as a float — the exact count is `tf_forget.prune.scores.compression`'s; NaN for
      an iterative cycle, whose keep ratio is its protocol's).
    method: "dense", "gradual" (`prune_<t>`), "oneshot" or "iterative".
    algorithm: one-shot ("mp", "gp", "up", "rp") or iterative ("wt", "ft") algorithm.
    ratio: one-shot compression ratio r as given (None when given as a fraction or not one-shot).
    fraction: one-shot fraction t as given (None when given as a ratio or not one-shot).
    cycle: prune-retrain cycle n >= 1 of an iterative variant, None otherwise.
  """

  name: str
  sparsity: float
  method: str = "dense"
  algorithm: Optional[str] = None
  ratio: Optional[float] = None
  fraction: Optional[float] = None
  cycle: Optional[int] = None

  @property
  def pruned(self):
    return self.method != DENSE

  @property
  def oneshot(self):
    return self.method == ONESHOT

  @property
  def iterative(self):
    return self.method == ITERATIVE

  @property
  def parent(self):
    """The variant whose member k this one is made from: `dense` for one-shot and for cycle 1
    of iterative prune-retrain, `iter_<alg>_c<n-1>` for a later cycle; None for a trained one."""
    cycle = cast(int, self.cycle)  # set on every iterative variant (`parse_trained`)
    if self.iterative and cycle > 1:
      return iterative_name(self.algorithm, cycle - 1)
    return DENSE if self.oneshot or self.iterative else None


def prune_name(t):
  """The canonical name of pruning to fraction `t` (`prune_0.9`, `prune_0.95`)."""
  return f"prune_{float(t):g}"


def oneshot_name(algorithm, ratio=None, fraction=None):
  """`oneshot_<alg>_r<r>` (ratio) or `oneshot_<alg>_t<t>` (fraction); checked by parsing.

  Raises:
    VariantError: an unknown algorithm, not exactly one of ratio / fraction, r <= 1, t not in
      (0, 1).
  """
  if (ratio is None) == (fraction is None):
    raise VariantError("give a one-shot compression as a ratio or a fraction, not both")
  name = (
    f"oneshot_{algorithm}_r{float(ratio):g}"
    if ratio is not None
    else f"oneshot_{algorithm}_t{float(fraction):g}"
  )
  return parse_trained(name).name


def iterative_name(algorithm, cycle):
  """`iter_<alg>_c<n>`, checked by parsing (`VariantError`)."""
  return parse_trained(f"iter_{algorithm}_c{int(cycle)}").name


def _parse_iterative(name, match):
  alg, cycle = match.group("alg"), int(match.group("cycle"))
  if alg not in ITERATIVE_ALGORITHMS:
    raise VariantError(
      f"unknown iterative pruning algorithm {alg!r} in {name!r} (known: "
      f"{', '.join(ITERATIVE_ALGORITHMS)})"
    )
  if cycle < 1:
    raise VariantError(f"cycle of {name!r} must be >= 1")
  return TrainedVariant(f"iter_{alg}_c{cycle}", float("nan"), ITERATIVE, alg, cycle=cycle)


def _parse_oneshot(name, match):
  alg, kind, value = match.group("alg"), match.group("kind"), float(match.group("value"))
  if alg not in ONESHOT_ALGORITHMS:
    raise VariantError(
      f"unknown one-shot algorithm {alg!r} in {name!r} (known: {', '.join(ONESHOT_ALGORITHMS)})"
    )
  if kind == "r":
    if not value > 1.0:
      raise VariantError(f"compression ratio of {name!r} must be > 1, got {value:g}")
    return TrainedVariant(f"oneshot_{alg}_r{value:g}", 1.0 - 1.0 / value, ONESHOT, alg, ratio=value)
  if not 0.0 < value < 1.0:
    raise VariantError(f"fraction of {name!r} must be in (0, 1), got {value:g}")
  return TrainedVariant(f"oneshot_{alg}_t{value:g}", value, ONESHOT, alg, fraction=value)


def parse_trained(name):
  """Parses a trained-variant name into a `TrainedVariant` with a canonical name.

  Raises:
    VariantError: anything outside the grammar, t outside (0, 1), r <= 1, an unknown algorithm.
  """
  if name == DENSE:
    return TrainedVariant(DENSE, 0.0)
  oneshot = _ONESHOT.match(str(name))
  if oneshot:
    return _parse_oneshot(name, oneshot)
  iterative = _ITERATIVE.match(str(name))
  if iterative:
    return _parse_iterative(name, iterative)
  match = _PRUNE.match(str(name))
  if not match:
    raise VariantError(
      f"unknown variant {name!r}: expected 'dense', 'prune_<t>' with "
      "0 < t < 1 (e.g. 'prune_0.9') or 'oneshot_<mp|gp|up|rp>_r<ratio>' "
      "(e.g. 'oneshot_up_r10') or 'iter_<wt|ft>_c<cycle>' (e.g. 'iter_wt_c3')"
    )
  t = float(match.group(1))
  if not 0.0 < t < 1.0:
    raise VariantError(f"sparsity of {name!r} must be in (0, 1), got {t}")
  return TrainedVariant(prune_name(t), t, GRADUAL)


def population_variants(sparsities):
  """`dense` plus one pruned variant per sparsity, in the given order."""
  return [parse_trained(DENSE)] + [parse_trained(prune_name(t)) for t in sparsities]


def oneshot_variants(algorithms, ratios=(), fractions=()):
  """One-shot variants, algorithm-major: every algorithm x (ratios, then fractions)."""
  return [parse_trained(oneshot_name(a, ratio=r)) for a in algorithms for r in ratios] + [
    parse_trained(oneshot_name(a, fraction=t)) for a in algorithms for t in fractions
  ]


def iterative_variants(algorithms, cycles):
  """Iterative variants, algorithm-major: every algorithm x cycles 1..`cycles`."""
  return [parse_trained(iterative_name(a, n)) for a in algorithms for n in range(1, cycles + 1)]


# --- audited (TFLite) variants ----------------------------------------------------------------
def check_format(name):
  """Raises `FormatError` unless `name` is a TFLite format."""
  if name not in FORMAT_NAMES:
    raise FormatError(f"unknown TFLite format {name!r} (known: {', '.join(FORMAT_NAMES)})")


def is_user_format(name):
  """Whether `name` is the format of a file the user brings (`user_<NAME>`)."""
  return bool(_USER_FORMAT.match(str(name)))


def user_format(candidate):
  """The format of the user's candidate `candidate` ("int8" -> "user_int8").

  Raises:
    FormatError: a name that is not 1-40 lower-case letters, digits or "_" (starting with a
      letter or digit): it becomes part of file names and of the report's variant names.
  """
  name = USER_FORMAT_PREFIX + str(candidate)
  if not _USER_FORMAT.match(name):
    raise FormatError(
      f"bad candidate name {candidate!r}: use 1-40 lower-case letters, digits "
      "and _ (e.g. int8, qat_int8)"
    )
  return name


def repair_format(repair):
  """The format of the repaired file `repair`: "float3" -> "full_int8~float3",
  "cle", "int16x8", "auto" likewise (`REPAIR_NAMES`).

  Raises:
    FormatError: not a repair name.
  """
  if not repair_ok(repair):
    raise FormatError(f"unknown repair {repair!r} (known: {REPAIR_NAMES})")
  return f"{REPAIRED_FORMAT}~{repair}"


def repair_ok(repair):
  """Whether `repair` is a repair name (`REPAIR_NAMES`)."""
  return isinstance(repair, str) and bool(_REPAIR.match(repair))


def sorted_repairs(repairs):
  """Distinct repair names in their canonical order: `float<N>` by N first, then the others by
  name ("float2", "auto", "float1" -> ("float1", "float2", "auto"))."""
  return tuple(
    sorted(
      set(repairs),
      key=lambda r: (
        0 if repair_layers(repair_format(r)) else 1,
        repair_layers(repair_format(r)) or 0,
        r,
      ),
    )
  )


def _repair_match(name):
  match = _REPAIR_FORMAT.match(str(name))
  return _REPAIR.match(match.group("repair")) if match else None


def repair_layers(name):
  """N of a repaired format `full_int8~float<N>`, None for any other format."""
  match = _repair_match(name)
  return int(match.group("layers")) if match and match.group("layers") else None


def repair_kind(name):
  """The kind "float" (`full_int8~float<N>`), "cle", "int16x8" (`NO_BYTE_REPAIRS`) or "auto" of a
  repaired format, None for any other format."""
  match = _repair_match(name)
  if not match:
    return None
  return "float" if match.group("layers") else match.group("kind")


def _is_format(name):
  return name in FORMAT_NAMES or is_user_format(name) or repair_kind(name) is not None


def check_encoding(name):
  """Raises `FormatError` unless `name` is in `ENCODINGS`."""
  if name not in ENCODINGS:
    raise FormatError(f"unknown encoding {name!r} (known: {', '.join(ENCODINGS)})")


@dataclasses.dataclass(frozen=True)
class Variant:
  """A TFLite variant: which member population, which format, which encoding.

  Attributes:
    member_variant: the trained population, a `parse_trained` name (docs/spec.md §1.1).
    format: one of `FORMAT_NAMES`, `user_<NAME>` for a file the user brings, or
      `full_int8~<repair>` for a repaired file (`repair_format`).
    encoding: one of `ENCODINGS`.
  """

  member_variant: str
  format: str = DEFAULT_FORMAT
  encoding: str = DEFAULT_ENCODING

  def __post_init__(self):
    if not _is_format(self.format):
      check_format(self.format)
    check_encoding(self.encoding)
    if (
      not self.member_variant
      or "+" in self.member_variant
      or "/" in self.member_variant
      or self.member_variant in ENCODINGS
      or _is_format(self.member_variant)
    ):
      raise FormatError(f"bad member variant {self.member_variant!r}")

  @property
  def name(self):
    """The audited variant name (docs/spec.md §1.1), e.g. "prune_0.9+full_int8"."""
    parts = []
    if self.member_variant != DENSE:
      parts.append(self.member_variant)
    if self.format != DEFAULT_FORMAT or (
      self.member_variant == DENSE and self.encoding != DEFAULT_ENCODING
    ):
      parts.append(self.format)
    if self.encoding != DEFAULT_ENCODING:
      parts.append(self.encoding)
    return "+".join(parts) if parts else DENSE

  @property
  def file_stem(self):
    """File name (without extension) inside `tflite/<member variant>/<k>/`."""
    if self.encoding == DEFAULT_ENCODING:
      return self.format
    return f"{self.format}+{self.encoding}"


def _parse_list(text, check, what):
  """Comma-separated names, checked with `check`, duplicates dropped, order kept."""
  names = [n.strip() for n in text.split(",") if n.strip()]
  if not names:
    raise FormatError(f"no {what} given")
  for name in names:
    check(name)
  return list(dict.fromkeys(names))


def parse_formats(text):
  """Parses a comma-separated list of formats ("float32,full_int8"), in the given order."""
  return _parse_list(text, check_format, "TFLite format")


def parse_encodings(text):
  """Parses a comma-separated list of encodings ("plain,sparse"), in the given order."""
  return _parse_list(text, check_encoding, "encoding")


def plain_twin(variant):
  """The plain-encoded `Variant` of the same member variant and format (itself if plain)."""
  return Variant(variant.member_variant, variant.format, DEFAULT_ENCODING)


def parse_variant(name):
  """Parses an audited variant name into a `Variant` (inverse of `Variant.name`; examples in
  docs/artifacts/names.md): "prune_0.9+full_int8" -> (prune_0.9, full_int8, plain).

  Raises:
    FormatError: a malformed name or unknown parts.
  """
  parts = str(name).split("+")
  member, fmt, encoding = DENSE, DEFAULT_FORMAT, DEFAULT_ENCODING
  i = 0
  if not _is_format(parts[0]):
    member = parts[0]
    i = 1
  if i < len(parts) and _is_format(parts[i]):
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


def family(variant):
  """The trained variant an audited variant is made from, its *family* (the report groups,
  colours and folds by it): "prune_0.9+full_int8" -> "prune_0.9", "float16" -> "dense".

  A member variant of the trained grammar gets its canonical name (`parse_trained`); a name
  outside the audited grammar ("dense (independent)") is its own family.
  """
  try:
    member = parse_variant(variant).member_variant
  except FormatError:
    return str(variant)
  try:
    return parse_trained(member).name
  except VariantError:
    return member


# --- splits -----------------------------------------------------------------------------------
# The split of the deployment's images, evaluated beside the labelled test split
# (`tf_forget.data.deployment_view`; `predictions/<variant>/<k>/deployment.npz`).
DEPLOYMENT_SPLIT = "deployment"


def split_name(corruption, severity):
  """`glass_blur@3` (grammar only; `corruption_registry.split_name` also checks the name)."""
  name = f"{corruption}@{int(severity)}"
  if not _CORRUPTED.match(name):
    raise SplitNameError(f"bad corruption name {corruption!r}")
  return name


def parse_split(name):
  """(corruption, severity) of a corrupted split name, None for a plain split (`test`).

  Raises:
    SplitNameError: a name with "@" that is not `<corruption>@<severity>`, or an empty name or
      one with a "/".
  """
  name = str(name)
  if not name or "/" in name:
    raise SplitNameError(f"bad split name {name!r}")
  if "@" not in name:
    return None
  m = _CORRUPTED.match(name)
  if not m:
    raise SplitNameError(f"corrupted split names are <corruption>@<severity>, got {name!r}")
  return m.group("corruption"), int(m.group("severity"))
