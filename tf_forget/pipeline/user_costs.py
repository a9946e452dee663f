"""What an audit of the user's own model will cost, before any image is read.

`audit --plan --reference=model.keras --candidate=...` prints it (`user_plan.describe`): the
files the audit runs, the inferences each makes over the test images, and a rough estimate of
the time, from

* the number of test images: the data set's file listing (`num_examples`), no image decoded;
* each file's work per image: its multiply-accumulates (MACs), counted from its graph — a
  `.tflite` file's ops (`tf_forget.export.flatbuffer_graph.graph`: every CONV_2D, DEPTHWISE_CONV_2D,
  FULLY_CONNECTED, TRANSPOSE_CONV, BATCH_MATMUL op costs its weight tensor's elements times
  its output positions) or a Keras model's layers (the same count from each layer's kernel
  and output shape); the files tf_forget makes from a Keras reference (`--compress`) share its
  graph;
* seconds per MAC and per image measured on the committed 2-core CPU
  (`tf_forget/pipeline/unit_costs/cpu_2core_avx512.json`: resnet18 at 218x178x3, about 1.41 G MACs
  per image, 0.0166 s in float32 and 0.0044 s in full int8 per image; small_cnn at 8x8x1 bounds the
  per-image overhead at 3.6e-5 s), and the conversion time of a model of its parameter count
  (small_cnn 1.5 s for 160 k parameters, resnet18 7.7 s for 11 M: linear between them).

The estimate is one worker's time; it is a plan, not a promise (a file the LiteRT runtime
runs on other kernels, or a data set on a slow disk, takes longer).
"""

import dataclasses
from typing import Optional, Tuple

import numpy as np

from tf_forget.artifacts import errors
from tf_forget.artifacts import names
from tf_forget.artifacts import tflite_formats
from tf_forget.export import flatbuffer_graph

# Seconds per multiply-accumulate (see the module docstring) of each cost class
# (`tflite_formats.COST_CLASSES`): float formats, integer formats.
SECONDS_PER_MAC = {"float": 0.0166 / 1.41e9, "int8": 0.00436 / 1.41e9}
SECONDS_PER_IMAGE = 3.6e-5  # the per-image overhead of a tiny model (small_cnn, float32)
KERAS_FACTOR = 3.0  # a Keras model's predictions (predictions_keras) against its float32 file
# Conversion: seconds = CONVERT_BASE + CONVERT_PER_PARAMETER x parameters, times the format's
# `convert_factor` (full int8 calibrates: x1.5).
CONVERT_BASE = 1.4
CONVERT_PER_PARAMETER = 5.6e-7
# The layer analyses run at most this many examples per subset (`layer_analysis.STABLE_MAX`)
# through two files; a user's file with every tensor kept, on the built-in kernels.
ANALYSIS_EXAMPLES = 2000
ANALYSIS_FACTOR = 5.0
_MAC_OPS = (
  "CONV_2D",
  "DEPTHWISE_CONV_2D",
  "FULLY_CONNECTED",
  "TRANSPOSE_CONV",
  "BATCH_MATMUL",
  "CONV_3D",
)


@dataclasses.dataclass(frozen=True)
class FileCost:
  """One file the audit runs over the test images.

  Attributes:
    name: the variant (`float32`, `user_int8`, ...).
    macs: multiply-accumulates per image (None: not counted).
    size: its bytes (None: not made yet).
    integer: whether it computes in int8 (a format of cost class "int8",
      `tflite_formats.Format.cost_class`; a quantized file of the user's).
  """

  name: str
  macs: Optional[int]
  size: Optional[int]
  integer: bool


def tflite_macs(data):
  """(MACs per image, whether it computes in integers) of a `.tflite` file, from its graph.

  Raises:
    flatbuffer.TfliteFileError: not a complete TFLite flatbuffer.
  """
  g = flatbuffer_graph.graph(data)
  macs, integer = 0, False
  for op in g.ops:
    if op.name not in _MAC_OPS or len(op.inputs) < 2 or not op.outputs:
      continue
    weight = g.tensors[op.inputs[1]] if op.inputs[1] >= 0 else None
    if weight is None or not weight.shape:
      continue
    out = g.tensors[op.outputs[0]].shape
    positions = int(np.prod(out[1:-1])) if len(out) > 2 else 1
    macs += int(np.prod(weight.shape)) * positions
    integer = integer or weight.dtype in ("int8", "uint8", "int16", "int4")
  return macs, integer


def keras_macs(model):
  """Multiply-accumulates per image of a Keras model (its layers with a kernel), or None when
  its layers cannot be read (a SavedModel's serving signature, say)."""
  layers = getattr(model, "layers", None)
  if layers is None:
    return None
  total = 0
  stack = list(layers)
  while stack:
    layer = stack.pop()
    if getattr(layer, "layers", None):  # a nested model
      stack.extend(layer.layers)
      continue
    kernel = getattr(layer, "depthwise_kernel", None)
    kernel = getattr(layer, "kernel", None) if kernel is None else kernel
    if kernel is None:
      continue
    try:
      out = tuple(layer.output.shape)
    except (AttributeError, ValueError, RuntimeError):
      out = ()
    positions = int(np.prod([d for d in out[1:-1] if d])) if len(out) > 2 else 1
    total += int(np.prod(kernel.shape)) * positions
  return total


def parameters(model):
  """The model's parameter count (0 when it cannot be told)."""
  try:
    return int(model.count_params())
  except (AttributeError, ValueError, RuntimeError):
    return 0


def seconds_per_image(f):
  """The estimated seconds one image takes through `f` (None without its MACs)."""
  if f.macs is None:
    return None
  return SECONDS_PER_IMAGE + f.macs * SECONDS_PER_MAC["int8" if f.integer else "float"]


def convert_seconds(params, fmt):
  """The estimated seconds of one conversion of a model with `params` parameters to the format
  `fmt` (a name of `tflite_formats.FORMATS`)."""
  base = CONVERT_BASE + CONVERT_PER_PARAMETER * params
  return base * tflite_formats.get(fmt).convert_factor


@dataclasses.dataclass(frozen=True)
class Estimate:
  """The cost of an audit of the user's files (see `estimate`)."""

  images: int
  files: Tuple[FileCost, ...]
  inferences: int
  keras_inferences: int
  conversions: int
  analyses: int
  seconds: Optional[float]


def estimate(
  files,
  images,
  references,
  keras_macs_per_image=None,
  params=0,
  conversions=(),
  analyses=0,
  corrupted_splits=0,
):
  """The audit's inferences and time per worker.

  Args:
    files: `FileCost` of every file run over the test images, per reference (K copies each).
    images: test images N.
    references: K.
    keras_macs_per_image: MACs of a Keras reference (its predictions are stored too), None for
      a `.tflite` reference.
    params: the Keras reference's parameters (conversion time).
    conversions: formats tf_forget converts per reference (float32 included).
    analyses: layer analyses per reference (full int8 and each user file).
    corrupted_splits: corrupted splits each file also runs on.

  Returns:
    `Estimate` (`seconds` None when a file's MACs could not be counted).
  """
  per_file = images * (1 + corrupted_splits)
  inferences = len(files) * references * per_file
  keras = references * images if keras_macs_per_image is not None else 0
  times = [seconds_per_image(f) for f in files]
  if any(t is None for t in times):
    return Estimate(
      images,
      tuple(files),
      inferences,
      keras,
      len(conversions) * references,
      analyses * references,
      None,
    )
  seconds = references * per_file * sum(times)
  if keras:
    keras_file = FileCost("keras", keras_macs_per_image, None, False)
    seconds += keras * KERAS_FACTOR * seconds_per_image(keras_file)
  seconds += references * sum(convert_seconds(params, fmt) for fmt in conversions)
  slowest = max(times) if times else 0.0
  seconds += analyses * references * min(images, ANALYSIS_EXAMPLES) * 2 * ANALYSIS_FACTOR * slowest
  return Estimate(
    images,
    tuple(files),
    inferences,
    keras,
    len(conversions) * references,
    analyses * references,
    seconds,
  )


def _count(n):
  return f"{n:,}"


def _macs(n):
  if n is None:
    return "MACs not counted"
  for unit, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
    if n >= size:
      return f"{n / size:.3g} {unit} MACs"
  return f"{n} MACs"


def _seconds(s):
  if s is None:
    return "n/a"
  for unit, size in (("h", 3600), ("min", 60)):
    if s >= size:
      return f"{s / size:.1f} {unit}"
  return f"{s:.1f} s" if s >= 1 else f"{s:.2f} s"


def lines(e, references):
  """The plan's cost lines (indented), from an `Estimate`."""
  k = f" x {references} references" if references > 1 else ""
  out = [
    f"  cost: {len(e.files)} files{k} x {_count(e.images)} test images = "
    f"{_count(e.inferences)} inferences"
    + (f" (+ {_count(e.keras_inferences)} of the Keras model)" if e.keras_inferences else "")
    + (f"; {e.conversions} conversion{'' if e.conversions == 1 else 's'}" if e.conversions else "")
    + (f"; {e.analyses} layer analys{'i' if e.analyses == 1 else 'e'}s" if e.analyses else "")
  ]
  for f in e.files:
    per = seconds_per_image(f)
    size = "" if f.size is None else f", {f.size / 1024:.1f} KiB"
    out.append(
      f"    {f.name:<20} {_macs(f.macs)} per image{size}"
      + ("" if per is None else f", about {_seconds(per * e.images)} for the images")
    )
  out.append(
    f"  estimate: about {_seconds(e.seconds)} of one worker's time (from each file's "
    "MACs per image and the number of images, at the speeds of "
    "tf_forget/pipeline/unit_costs/cpu_2core_avx512.json; no image was read)"
  )
  return out


def user_estimate(user, dataset, quantizations, corrupted, keras_model=None, candidate_bytes=()):
  """The `Estimate` of an audit of the user's files.

  Args:
    user: the `tree.UserModels` (its references and candidates).
    dataset: the audited data set (its eval split's number of images; none is read).
    quantizations: the formats tf_forget makes from a Keras reference (`--compress`).
    corrupted: the corrupted split names.
    keras_model: the first Keras reference (None for `.tflite` references).
    candidate_bytes: ((name, bytes of the first reference's file), ...) of the user's files;
      with `.tflite` references the first reference's bytes as ("float32", bytes) too.

  Raises:
    errors.Error: a file that cannot be read as a flatbuffer.
  """
  spec = dataset.spec
  images = int(dataset.num_examples(spec.eval_split))
  references = len(user.references)
  files, conversions, kmacs, params = [], (), None, 0
  if keras_model is not None:
    kmacs, params = keras_macs(keras_model), parameters(keras_model)
    conversions = (names.DEFAULT_FORMAT,) + tuple(quantizations)
    files = [FileCost(fmt, kmacs, None, tflite_formats.get(fmt).integer) for fmt in conversions]
  for name, data in candidate_bytes:
    try:
      macs, integer = tflite_macs(data)
    except errors.Error:
      macs, integer = None, False
    files.append(FileCost(name, macs, len(data), integer))
  analyses = (names.REPAIRED_FORMAT in quantizations) + len(user.candidates)
  return estimate(
    files,
    images,
    references,
    kmacs if keras_model is not None else None,
    params,
    conversions,
    analyses,
    len(corrupted),
  )
