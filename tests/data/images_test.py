"""images: an image already at the model's size and channels is returned as it is, because the
conversion's ops are the identity on it."""

import numpy as np
import pytest
import tensorflow as tf

from tf_forget.data import images

SHAPES = [(8, 8, 1), (28, 28, 1), (17, 5, 1), (1, 1, 3), (32, 32, 3), (64, 48, 3)]


def _random(shape, seed):
  x = np.random.default_rng(seed).integers(0, 256, shape, dtype=np.uint8)
  x.flat[0], x.flat[-1] = 0, 255  # both ends of the range
  return x


@pytest.mark.parametrize("shape", SHAPES)
def test_the_conversion_is_the_identity_at_the_image_s_own_size_and_channels(shape):
  # Bilinear resizing to the same size with half-pixel centres samples every pixel at its
  # centre (weight 1), and rounding and clipping integers in [0, 255] keep them.
  for seed in range(5):
    x = _random(shape, seed)
    np.testing.assert_array_equal(images.converted(x, shape[:2], shape[2]).numpy(), x)


@pytest.mark.parametrize("shape", SHAPES)
def test_a_known_shape_and_an_unknown_one_give_the_same_pixels(shape):
  x = _random(shape, 7)
  unknown = tf.function(
    lambda t: images.convert_image(t, shape[:2], shape[2]),
    input_signature=[tf.TensorSpec([None, None, None], tf.uint8)],
  )
  eager = images.convert_image(tf.constant(x), shape[:2], shape[2])
  np.testing.assert_array_equal(eager.numpy(), unknown(x).numpy())
  np.testing.assert_array_equal(eager.numpy(), x)


def test_another_size_or_channel_count_is_converted():
  x = _random((4, 4, 1), 3)
  out = images.convert_image(tf.constant(x), (8, 8), 1)
  assert out.shape == (8, 8, 1) and out.dtype == tf.uint8
  np.testing.assert_array_equal(out.numpy(), images.converted(x, (8, 8), 1).numpy())
  rgb = images.convert_image(tf.constant(x), (4, 4), 3).numpy()
  np.testing.assert_array_equal(rgb, np.repeat(x, 3, axis=-1))  # grey repeated to RGB
