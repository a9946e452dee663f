"""Converts a member model (tf_keras, Keras 3, SavedModel) to TFLite in a `formats.FORMATS`.

Which converter entry point (TF 2.21, tf_keras 2.21, measured on a Conv/BN/Dense model):
  * `tf.lite.TFLiteConverter.from_keras_model(model)` works on a tf_keras model (with or without
    `TF_USE_LEGACY_KERAS=1`), but takes the batch size and tensor names from the Keras model and
    leaves the call's `training` argument to Keras' default;
  * `from_concrete_functions([f], model)` with `f = tf.function(model(x, training=False))`
    traced at `TensorSpec([None, H, W, C], float32, name="image")` is what we use: inference
    mode explicit, a dynamic batch dimension (`shape_signature` [-1, H, W, C]) so the evaluator
    can resize the input to its batch size, and no dependence on what `tf.keras` is bound to.
    In TF 2.21 both paths save a temporary SavedModel internally (hence the "Assets written
    to /tmp/..." log lines) and take about the same time (~0.6 s for a small CNN); both give
    byte-identical files run to run and across processes; they differ from each other only in
    the signature's tensor names.
  * a member imported from a Keras 3 file or a SavedModel: the same call on the
    model `model_files.load` gives, traced by `model_files.trace` — a Keras 3 model through a
    SavedModel endpoint (`compat.keras3.serving_function`; with a Keras 3 model as the
    `trackable_obj` of a plain `tf.function` its variables stay READ_VARIABLE ops and
    calibration fails), a SavedModel through a `tf.function` of its serving signature.

Determinism: converting the same model twice (in one process or in two) gives identical
bytes for all four formats, including `full_int8` with a fixed representative set
(tests/export/converter_test.py pins this). The converter embeds its own metadata
(`CONVERSION_METADATA`: environment, TF version, options) but no time stamp or path.

Representative data (docs/spec.md §2.5; 000 appendix A): the first N train examples in the data
set's fixed order, fed one at a time exactly as at evaluation (raw pixel values as float32; the
model normalises inside).
"""

import numpy as np
import tensorflow as tf

from tf_forget.artifacts import errors
from tf_forget.artifacts import names
from tf_forget.compat import keras2
from tf_forget.data import input_layout
from tf_forget.export import formats
from tf_forget.export import model_files


class ConversionError(errors.Error):
  """A model the converter cannot convert in the requested format (one-line message)."""


def _one_line(e):
  text = " ".join(str(e).split())
  return text[:300] + ("..." if len(text) > 300 else "")


def model_layout(model):
  """The `input_layout.InputLayout` of a one-input image model (`[N, H, W, C]`,
  grey `[N, H, W]` or channels-first `[N, C, H, W]`).

  A 4-D input whose channel count is neither 1 nor 3 on either end (e.g. `[N, 6, 6, 2]`)
  converts as `[N, H, W, C]`, the default layout: no data set yields such
  images, so the audit refuses it earlier, but the converter itself has no reason to.

  Raises:
    ConversionError: a model with several inputs or a non-image input.
  """
  if len(model.inputs) != 1:
    raise ConversionError(f"model has {len(model.inputs)} inputs; expected one image input")
  shape = tuple(model.inputs[0].shape)
  try:
    return input_layout.from_shape(shape)
  except input_layout.LayoutError as e:
    dims = [None if d is None else int(d) for d in shape]
    if len(dims) == 4 and None not in dims[1:] and min(dims[1:]) >= 1:
      return input_layout.InputLayout(dims[1], dims[2], dims[3])
    raise ConversionError(f"model {e}") from e


def input_signature(model):
  """The `TensorSpec` [None, *input shape] float32 named "image" of a one-input image model
  (`[None, H, W, C]`, or the model's own layout, `model_layout`).

  Raises:
    ConversionError: a model with several inputs or a non-image input.
  """
  return tf.TensorSpec([None, *model_layout(model).model_shape], tf.float32, name="image")


def model_inputs(model, images):
  """Images `[N, H, W, C]` in the model's input layout (`model_layout`); images of another
  shape are returned as they are, for the caller's shape check to name."""
  layout = model_layout(model)
  try:
    return layout.to_model(images)
  except input_layout.LayoutError:
    return images


def representative_dataset(images):
  """A representative-data generator over uint8 or float model inputs (`model_inputs`).

  Yields one example at a time as float32 `[1, ...]`, the values the evaluator feeds.
  """
  images = np.asarray(images)

  def generator():
    for i in range(images.shape[0]):
      yield [images[i : i + 1].astype(np.float32)]

  return generator


def convert(model, fmt, representative_images=None, encoding=names.DEFAULT_ENCODING):
  """Converts a member's model (tf_keras, Keras 3 or a SavedModel's signature,
  `model_files`) to TFLite bytes.

  The "sparse" encoding adds `tf.lite.Optimize.EXPERIMENTAL_SPARSITY` to the
  format's optimizations: the converter then stores constant weights that are sparse enough
  in TFLite's compressed sparse format (`Tensor.sparsity`) and the runtime densifies them
  (or, for some kernels, runs them sparse). Everything else is the format's.

  Args:
    model: a model of `model_files.load` taking float32 `[batch, H, W, C]` raw pixels,
      returning logits.
    fmt: a key of `formats.FORMATS`, or a repair that costs no bytes (`formats.options`).
    representative_images: uint8 `[N, H, W, C]` (fed in the model's input layout,
      `model_inputs`), required by formats that need calibration (`full_int8`; docs/spec.md §2.5),
      ignored by the others.
    encoding: a value of `names.ENCODINGS`.

  Returns:
    The `.tflite` flatbuffer as bytes.

  Raises:
    names.FormatError: unknown format or encoding.
    ConversionError: missing representative data or a converter failure.
  """
  options = formats.options(fmt)
  names.check_encoding(encoding)
  spec = input_signature(model)
  concrete, trackable = model_files.trace(model, spec)  # tf_keras, Keras 3, SavedModel
  converter = tf.lite.TFLiteConverter.from_concrete_functions([concrete], trackable)
  optimizations = [tf.lite.Optimize.DEFAULT] if options["optimize"] else []
  if encoding == names.SPARSE:
    optimizations.append(tf.lite.Optimize.EXPERIMENTAL_SPARSITY)
  if optimizations:
    converter.optimizations = optimizations
  if options["supported_types"]:
    converter.target_spec.supported_types = [tf.as_dtype(t) for t in options["supported_types"]]
  if options["int8_only"]:
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
  if options["int16x8"]:
    converter.target_spec.supported_ops = [
      tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8
    ]
  if options["io_type"]:
    converter.inference_input_type = tf.as_dtype(options["io_type"])
    converter.inference_output_type = tf.as_dtype(options["io_type"])
  if options["representative"]:
    if representative_images is None or len(representative_images) == 0:
      raise ConversionError(f"format {fmt!r} needs representative images (docs/spec.md §2.5)")
    expected = tuple(spec.shape[1:])
    representative_images = model_inputs(model, representative_images)
    if tuple(np.shape(representative_images)[1:]) != expected:
      raise ConversionError(
        f"representative images have shape "
        f"{tuple(np.shape(representative_images)[1:])}, model input "
        f"{expected}"
      )
    converter.representative_dataset = representative_dataset(representative_images)
  try:
    return converter.convert()
  except Exception as e:
    what = fmt if encoding == names.DEFAULT_ENCODING else f"{fmt} ({encoding} encoding)"
    raise ConversionError(f"TFLite conversion to {what} failed: {_one_line(e)}") from e


def versions():
  """Versions recorded with every export."""
  try:
    from importlib import metadata

    litert = metadata.version("ai-edge-litert")
  except Exception:
    litert = None
  return {
    "tensorflow": tf.__version__,
    "tf_keras": keras2.keras().__version__,
    "ai_edge_litert": litert,
    "numpy": np.__version__,
  }
