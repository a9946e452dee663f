"""The user's images (`user_sets`) made the model's input: decoded, converted, resized.

Images: decoded with `tf.io.decode_image` (PNG, JPEG, GIF (first frame), BMP) or tfds' own image
feature; an alpha channel is dropped; grey is repeated to RGB, RGB becomes grey with
`tf.image.rgb_to_grayscale` (0.2989 R + 0.5870 G + 0.1140 B) when `channels` says so; then
resized to `image_size` (the model's input size) with `tf.image.resize(method="bilinear")` on
float32 (no antialiasing, as Keras' `image_dataset_from_directory`), rounded (`tf.round`) and
clipped to uint8 [0, 255]. `image_size` and `channels` default to the first example's (the data
sets' choice; `parse_image_size` and `parse_channels` check the options).
"""

import numpy as np
import tensorflow as tf

from tf_forget.data import dataset_api


def parse_image_size(size):
  """(H, W) from an int or a pair, or None."""
  if size is None:
    return None
  try:
    h, w = (int(size), int(size)) if np.ndim(size) == 0 else (int(v) for v in size)
  except (TypeError, ValueError) as e:
    raise dataset_api.DataError(
      f"image_size must be an int or (height, width), got {size!r}"
    ) from e
  if h <= 0 or w <= 0:
    raise dataset_api.DataError(f"image_size must be positive, got {size!r}")
  return (h, w)


def parse_channels(channels):
  """1 or 3 from the `channels` option, or None."""
  if channels is None:
    return None
  if channels not in (1, 3) or isinstance(channels, bool):
    raise dataset_api.DataError(f"channels must be 1 (grey) or 3 (RGB), got {channels!r}")
  return int(channels)


def convert_image(image, image_size, channels):
  """uint8 `[h, w, c]` (c = 1..4) -> uint8 `[H, W, channels]` as the module docstring says.

  An image whose shape is known to be `[H, W, channels]` already is returned as it is: the
  conversion is the identity on it (bilinear resizing to the same size samples every pixel at
  its centre with weight 1), and skipping its ops makes an eagerly decoded image ~4x cheaper.
  """
  image = tf.convert_to_tensor(image)
  if image.dtype == tf.uint8 and tuple(image.shape) == (*tuple(image_size), channels):
    return image
  return converted(image, image_size, channels)


def converted(image, image_size, channels):
  """`convert_image` always through its ops (cast, channels, resize, round, clip)."""
  pixels = tf.cast(image, tf.float32)

  def from_grey():  # c = 1 or 2 (grey, grey + alpha)
    grey = pixels[..., :1]
    return grey if channels == 1 else tf.tile(grey, [1, 1, 3])

  def from_colour():  # c = 3 or 4 (RGB, RGBA)
    rgb = tf.ensure_shape(pixels[..., :3], [None, None, 3])
    return tf.image.rgb_to_grayscale(rgb) if channels == 1 else rgb

  if image.shape[-1] is not None:
    out = from_colour() if image.shape[-1] >= 3 else from_grey()
  else:
    out = tf.cond(tf.shape(image)[-1] < 3, from_grey, from_colour)
  out = tf.ensure_shape(out, [None, None, channels])
  resized = tf.image.resize(out, image_size, method="bilinear")
  return tf.cast(tf.clip_by_value(tf.round(resized), 0, 255), tf.uint8)


def decode_image_bytes(contents):
  """uint8 `[h, w, c]` of encoded PNG / JPEG / GIF (first frame) / BMP bytes."""
  return tf.io.decode_image(contents, channels=0, dtype=tf.uint8, expand_animations=False)
