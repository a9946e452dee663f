"""The layout of a model's image input: the one place that says what a model takes.

Every data set yields uint8 images `[N, H, W, C]` (C 1 or 3; `dataset_api.Dataset`), optionally
preprocessed to float32 of the same shape (`tf_forget.data.preprocess`). Models as users have
them take one of three layouts, all accepted:

  * "NHWC" `[N, H, W, C]`, C 1 or 3: Keras' and TFLite's default;
  * "NHW" `[N, H, W]`: grey images without a channel axis — every `.tflite` file of
    TensorFlow's "Post-training integer quantization" tutorial (`keras.Input((28, 28))`, then a
    `Reshape` inside). Fed the grey images with their channel axis dropped;
  * "NCHW" `[N, C, H, W]`, C 1 or 3: channels first, as files converted from PyTorch take them
    (ai-edge-torch, onnx2tf without its transpose). Fed the images transposed, not refused: the
    pixels are the same, only their order differs, which is what a practitioner expects an
    audit to take care of, as their own app does.

A rank-4 shape whose last axis is 1 or 3 is read as NHWC, else one whose second axis is 1 or 3
as NCHW (an image 1 or 3 pixels wide is not one anybody audits); anything else is refused in
one line. The batch axis may be dynamic (None, or -1 in a `.tflite` shape signature) or fixed
(`batch`: a file whose input cannot be resized is run `batch` examples per invoke).

The input's dtype is float32 (the values as the preprocessing gives them) or an integer type with
the tensor's own scale and zero point (uint8, int8, int16: a full-integer file quantizes its input;
`tf_forget.evaluate.interpreter.InputQuantizer` feeds it `clamp(round(x / scale) + zero_point)`).
Outputs follow the same dtype rule (`check_output`).

`InputLayout.to_model` turns data images into the model's layout (images already in it pass
unchanged), `to_images` goes back. Numpy only.
"""

import dataclasses
from typing import Optional, Tuple

import numpy as np

from tf_forget.artifacts import errors

NHWC, NHW, NCHW = "NHWC", "NHW", "NCHW"
CHANNELS = (1, 3)
QUANTIZED_DTYPES = ("uint8", "int8", "int16")
DTYPES = ("float32",) + QUANTIZED_DTYPES
EXPECTED = (
  "[batch, height, width] (grey), [batch, height, width, 1 or 3 channels] or "
  "[batch, 1 or 3 channels, height, width]"
)


class LayoutError(errors.Error):
  """An input or output a model of images cannot have (one line; callers prefix the file)."""


@dataclasses.dataclass(frozen=True)
class InputLayout:
  """How a model takes images.

  Attributes:
    height, width, channels: the image size (channels 1 or 3; 1 for "NHW").
    has_channel_axis: False for "NHW" (grey, no channel axis).
    channels_first: True for "NCHW".
    dtype: "float32", or a quantized dtype of `QUANTIZED_DTYPES`.
    scale, zero_point: the input tensor's quantization (None for float32).
    batch: the fixed batch size of a file whose input cannot be resized, or None (dynamic).
  """

  height: int
  width: int
  channels: int
  has_channel_axis: bool = True
  channels_first: bool = False
  dtype: str = "float32"
  scale: Optional[float] = None
  zero_point: Optional[int] = None
  batch: Optional[int] = None

  @property
  def name(self):
    """ "NHWC", "NHW" or "NCHW"."""
    if not self.has_channel_axis:
      return NHW
    return NCHW if self.channels_first else NHWC

  @property
  def image_shape(self) -> Tuple[int, int, int]:
    """(H, W, C): the images a data set must yield for this model."""
    return (self.height, self.width, self.channels)

  @property
  def model_shape(self) -> Tuple[int, ...]:
    """The model's input shape without the batch axis."""
    if not self.has_channel_axis:
      return (self.height, self.width)
    if self.channels_first:
      return (self.channels, self.height, self.width)
    return self.image_shape

  @property
  def quantized(self):
    return self.dtype in QUANTIZED_DTYPES

  def describe(self):
    """ "[N, 8, 8] (grey, no channel axis) uint8 (scale 0.00392, zero point 0)"."""
    dims = (
      "["
      + ", ".join(
        ["N" if self.batch is None else str(self.batch)] + [str(d) for d in self.model_shape]
      )
      + "]"
    )
    kind = {NHW: " (grey, no channel axis)", NCHW: " (channels first)", NHWC: ""}[self.name]
    quant = f" (scale {self.scale:.3g}, zero point {self.zero_point})" if self.quantized else ""
    return f"{dims}{kind} {self.dtype}{quant}"

  def to_model(self, images):
    """Images `[N, H, W, C]` (any dtype) in the model's layout, `[N, *model_shape]`.

    Images already of `[N, *model_shape]` are returned unchanged, so that a caller may convert
    twice. NHWC: the images themselves; NHW: the channel axis dropped (a view); NCHW:
    transposed (a view).

    Raises:
      LayoutError: images of neither shape.
    """
    shape = tuple(np.shape(images)[1:])
    if shape == self.model_shape:
      return images
    if shape != self.image_shape:
      raise LayoutError(
        f"images of shape {shape} do not fit the model input "
        f"{self.describe()} (images {self.image_shape})"
      )
    images = np.asarray(images)
    if not self.has_channel_axis:
      return images[..., 0]
    if self.channels_first:
      return np.transpose(images, (0, 3, 1, 2))
    return images

  def to_images(self, inputs):
    """The inverse of `to_model`: model inputs `[N, *model_shape]` as images `[N, H, W, C]`."""
    inputs = np.asarray(inputs)
    if tuple(inputs.shape[1:]) != self.model_shape:
      raise LayoutError(
        f"inputs of shape {tuple(inputs.shape[1:])} are not of the model input {self.describe()}"
      )
    if not self.has_channel_axis:
      return inputs[..., None]
    if self.channels_first:
      return np.transpose(inputs, (0, 2, 3, 1))
    return inputs


def _dim(d):
  """An int, or None for a dynamic axis (None, -1)."""
  if d is None:
    return None
  d = int(d)
  return None if d < 0 else d


def _check_dtype(dtype, scale, zero_point, what):
  dtype = np.dtype(dtype).name if not isinstance(dtype, str) else dtype
  if dtype not in DTYPES:
    raise LayoutError(f"{what} is {dtype}, not {', '.join(DTYPES[:-1])} or {DTYPES[-1]}")
  if dtype in QUANTIZED_DTYPES and not (scale and scale > 0):
    raise LayoutError(
      f"{what} is {dtype} without a quantization scale: its values cannot be read as numbers"
    )
  return dtype


def from_shape(shape, dtype="float32", scale=None, zero_point=None):
  """The `InputLayout` of an input of `shape` (batch axis first; None / -1 dynamic).

  Args:
    shape: the input's shape, e.g. (None, 28, 28), [-1, 8, 8, 1], (1, 3, 224, 224).
    dtype: its dtype (a name or numpy dtype).
    scale, zero_point: its quantization (quantized dtypes only).

  Raises:
    LayoutError: not one of the three layouts (module docstring), a dynamic height, width or
      channel axis, an unsupported dtype, or a quantized input without a scale (one line).
  """
  dims = [_dim(d) for d in shape]
  shape_text = "[" + ", ".join("-1" if d is None else str(d) for d in dims) + "]"
  if len(dims) not in (3, 4) or None in dims[1:] or min(dims[1:], default=0) < 1:
    raise LayoutError(f"input shape {shape_text} is not an image: expected {EXPECTED}")
  batch = dims[0]
  dtype = _check_dtype(dtype, scale, zero_point, "its input")
  quant = dict(
    dtype=dtype,
    batch=batch,
    scale=float(scale) if dtype in QUANTIZED_DTYPES else None,
    zero_point=int(zero_point or 0) if dtype in QUANTIZED_DTYPES else None,
  )
  if len(dims) == 3:
    return InputLayout(dims[1], dims[2], 1, has_channel_axis=False, **quant)
  if dims[3] in CHANNELS:
    return InputLayout(dims[1], dims[2], dims[3], **quant)
  if dims[1] in CHANNELS:
    return InputLayout(dims[2], dims[3], dims[1], channels_first=True, **quant)
  raise LayoutError(f"input shape {shape_text} is not an image: expected {EXPECTED}")


def _first(values):
  values = list(values) if values is not None else []
  return values[0] if values else None


def of_io(entry):
  """The `InputLayout` of a `.tflite` input from `tf_forget.export.flatbuffer_graph.io_details`
  ({"shape": its shape signature, "dtype", "scale": [...], "zero_point": [...]})."""
  return from_shape(
    entry["shape"], entry["dtype"], _first(entry.get("scale")), _first(entry.get("zero_point"))
  )


def of_details(details):
  """The `InputLayout` of a LiteRT interpreter's input details (its `shape_signature`, dtype
  and quantization)."""
  shape = details.get("shape_signature")
  if shape is None or not len(shape):
    shape = details["shape"]
  scale, zero = details.get("quantization") or (0.0, 0)
  return from_shape(list(shape), details["dtype"], scale, zero)


def check_output(entry, what="its output"):
  """The dtype of a `.tflite` class-score output (`io_details` entry), checked like an input's:
  float32, or uint8 / int8 / int16 with a scale (dequantized before any metric).

  Raises:
    LayoutError: another dtype (an int32 argmax, a float16 output) or no scale (one line).
  """
  return _check_dtype(
    entry["dtype"], _first(entry.get("scale")), _first(entry.get("zero_point")), what
  )
