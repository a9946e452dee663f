"""`tf_forget.data.input_layout`: the one home of "what a model input takes".

Golden values: the layouts are read off the shapes TensorFlow's tools produce (the
post-training integer quantization tutorial's `keras.Input((28, 28))` -> [-1, 28, 28], Keras'
default [N, H, W, C], a PyTorch-converted [N, C, H, W]); the transposes are checked against
indexing one pixel by hand, not against the code's own numpy calls.
"""

import numpy as np
import pytest

from tf_forget.artifacts import errors
from tf_forget.data import input_layout


@pytest.mark.parametrize(
  "shape, name, image_shape, model_shape, batch",
  [
    ((None, 28, 28), "NHW", (28, 28, 1), (28, 28), None),  # the tutorial's files
    ([-1, 8, 8, 1], "NHWC", (8, 8, 1), (8, 8, 1), None),
    ((None, 32, 32, 3), "NHWC", (32, 32, 3), (32, 32, 3), None),
    ([-1, 3, 224, 224], "NCHW", (224, 224, 3), (3, 224, 224), None),  # from PyTorch
    ([1, 1, 28, 28], "NCHW", (28, 28, 1), (1, 28, 28), 1),
    ([1, 8, 8], "NHW", (8, 8, 1), (8, 8), 1),  # a fixed batch
    ([4, 8, 8, 3], "NHWC", (8, 8, 3), (8, 8, 3), 4),
    ([-1, 3, 5, 3], "NHWC", (3, 5, 3), (3, 5, 3), None),  # last axis 1 or 3 wins
  ],
)
def test_layouts_of_common_shapes(shape, name, image_shape, model_shape, batch):
  layout = input_layout.from_shape(shape)
  assert (layout.name, layout.image_shape, layout.model_shape, layout.batch) == (
    name,
    image_shape,
    model_shape,
    batch,
  )
  assert layout.has_channel_axis == (name != "NHW")
  assert layout.channels_first == (name == "NCHW")


@pytest.mark.parametrize(
  "shape",
  [
    (None, 64),  # a vector
    (None, 8, 8, 2),  # two channels
    (None, 8, 8, 4),  # RGBA
    (None, 5, 8, 8),  # neither axis 1 or 3 channels
    (None, None, None, 3),  # dynamic height and width
    (None, 8, 8, 1, 1),  # rank 5
    (None, 0, 8),
  ],
)
def test_shapes_that_are_not_images_are_one_line(shape):
  with pytest.raises(input_layout.LayoutError) as e:
    input_layout.from_shape(shape)
  assert isinstance(e.value, errors.Error)
  message = str(e.value)
  assert "\n" not in message and "is not an image" in message
  assert "[batch, height, width] (grey)" in message and "[batch, 1 or 3 channels" in message


def test_dtypes_and_quantization():
  u8 = input_layout.from_shape([-1, 8, 8], "uint8", 1 / 255, 0)
  assert u8.quantized and u8.dtype == "uint8" and u8.zero_point == 0
  assert u8.scale == pytest.approx(1 / 255)
  i8 = input_layout.from_shape([-1, 8, 8, 1], np.int8, 0.5, -128)
  assert (i8.dtype, i8.zero_point) == ("int8", -128)
  f = input_layout.from_shape([-1, 8, 8, 1], np.float32, 0.0, 0)
  assert not f.quantized and f.scale is None and f.zero_point is None
  with pytest.raises(input_layout.LayoutError, match="its input is float16, not float32"):
    input_layout.from_shape([-1, 8, 8, 1], "float16")
  with pytest.raises(input_layout.LayoutError, match="uint8 without a quantization scale"):
    input_layout.from_shape([-1, 8, 8], "uint8", 0.0, 0)


def test_of_io_reads_a_flatbuffer_entry_and_of_details_an_interpreters():
  entry = {"name": "x", "shape": [-1, 8, 8], "dtype": "uint8", "scale": [0.0039], "zero_point": [0]}
  assert input_layout.of_io(entry).describe() == (
    "[N, 8, 8] (grey, no channel axis) uint8 (scale 0.0039, zero point 0)"
  )
  details = {
    "shape": np.array([1, 3, 4, 5]),
    "shape_signature": np.array([-1, 3, 4, 5]),
    "dtype": np.float32,
    "quantization": (0.0, 0),
  }
  layout = input_layout.of_details(details)
  assert layout.describe() == "[N, 3, 4, 5] (channels first) float32"
  assert layout.image_shape == (4, 5, 3) and layout.batch is None
  fixed = dict(details, shape_signature=np.array([1, 3, 4, 5]))
  assert input_layout.of_details(fixed).batch == 1


def test_check_output():
  assert (
    input_layout.check_output({"dtype": "uint8", "scale": [0.08], "zero_point": [180]}) == "uint8"
  )
  with pytest.raises(input_layout.LayoutError, match="its output is int32"):
    input_layout.check_output({"dtype": "int32", "scale": [], "zero_point": []})


def _images(shape, seed=0):
  return np.random.default_rng(seed).integers(0, 256, shape, dtype=np.uint8)


def test_to_model_drops_the_grey_channel_axis():
  images = _images((4, 6, 5, 1))
  layout = input_layout.from_shape([-1, 6, 5])
  fed = layout.to_model(images)
  assert fed.shape == (4, 6, 5)
  assert fed[2, 3, 1] == images[2, 3, 1, 0]
  assert np.array_equal(layout.to_images(fed), images)


def test_to_model_transposes_to_channels_first():
  images = _images((2, 6, 5, 3))
  layout = input_layout.from_shape([-1, 3, 6, 5])
  fed = layout.to_model(images)
  assert fed.shape == (2, 3, 6, 5)
  for n, c, h, w in [(0, 0, 0, 0), (1, 2, 5, 4), (1, 1, 3, 2)]:
    assert fed[n, c, h, w] == images[n, h, w, c]
  assert np.array_equal(layout.to_images(fed), images)


def test_to_model_passes_nhwc_and_model_shaped_inputs_unchanged():
  images = _images((3, 8, 8, 1))
  nhwc = input_layout.from_shape([-1, 8, 8, 1])
  assert nhwc.to_model(images) is images
  grey = input_layout.from_shape([-1, 8, 8])
  once = grey.to_model(images)
  assert grey.to_model(once) is once  # a caller may convert twice


def test_to_model_refuses_other_images_in_one_line():
  layout = input_layout.from_shape([-1, 8, 8])
  with pytest.raises(
    input_layout.LayoutError,
    match=r"images of shape \(8, 8, 3\) do not fit "
    r"the model input \[N, 8, 8\] \(grey, no channel axis\) float32",
  ):
    layout.to_model(_images((2, 8, 8, 3)))
