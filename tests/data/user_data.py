"""The user's own data as files: image folders and TFRecord files, in tmp dirs.

Shared by the user-data tests (`user_folders_test.py`, `user_records_test.py`,
`user_refusals_test.py`). Expected images are computed here from the pixels written: grey ->
RGB by repetition, RGB -> grey with tf.image.rgb_to_grayscale's documented weights (0.2989,
0.5870, 0.1140), then `tf.image.resize(method="bilinear")`, rounded half to even (np.round) and
clipped to uint8.
"""

import os

import numpy as np
import pytest
import tensorflow as tf

from tf_forget.data import dataset_api

GREY_WEIGHTS = np.array([0.2989, 0.5870, 0.1140], np.float32)  # tf.image.rgb_to_grayscale


def expected(pixels, size, channels):
  """What the data set must yield for `pixels` (the module docstring's recipe)."""
  image = np.asarray(pixels, np.float32)
  image = image[..., :3] if image.shape[-1] >= 3 else image[..., :1]  # alpha dropped
  if channels == 3 and image.shape[-1] == 1:
    image = np.repeat(image, 3, axis=-1)
  elif channels == 1 and image.shape[-1] == 3:
    image = (image @ GREY_WEIGHTS)[..., np.newaxis]
  resized = tf.image.resize(image, size, method="bilinear").numpy()
  return np.clip(np.round(resized), 0, 255).astype(np.uint8)


def write_png(path, pixels):
  os.makedirs(os.path.dirname(path), exist_ok=True)
  tf.io.write_file(str(path), tf.io.encode_png(np.asarray(pixels, np.uint8)))


def write_jpeg(path, pixels):
  """Writes a JPEG and returns the pixels it decodes to (JPEG is lossy)."""
  os.makedirs(os.path.dirname(path), exist_ok=True)
  data = tf.io.encode_jpeg(np.asarray(pixels, np.uint8))
  tf.io.write_file(str(path), data)
  return tf.io.decode_jpeg(data).numpy()


def pixels(seed, h, w, c):
  """Random uint8 pixels `[h, w, c]` of `seed`."""
  return np.random.default_rng(seed).integers(0, 256, (h, w, c), dtype=np.uint8)


def folder(root, spec):
  """Writes {relative path: (h, w, c)} as PNGs; returns {relative path: pixels}."""
  written = {}
  for i, (rel, shape) in enumerate(sorted(spec.items())):
    written[rel] = pixels(i, *shape)
    write_png(os.path.join(root, rel), written[rel])
  return written


def one_line(fn):
  """The message of the `DataError` that `fn()` raises, checked to be one line."""
  with pytest.raises(dataset_api.DataError) as info:
    fn()
  assert "\n" not in str(info.value)
  return str(info.value)


def _example(image, label, **ints):
  feature = {
    "img": tf.train.Feature(bytes_list=tf.train.BytesList(value=[image])),
    "y": tf.train.Feature(int64_list=tf.train.Int64List(value=[label])),
  }
  for key, value in ints.items():
    feature[key] = tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))
  return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def tfrecords(tmp_path, records_per_file=((5, 1), (3, 0, 4)), channels=3):
  """Two files (written b then a; read a then b); uid = 100 + 10 * record order.

  Returns:
    (the records' pixels, their labels), in reading order.
  """
  images, labels = [], []
  for name, file_labels in zip(("a", "b"), records_per_file):
    with tf.io.TFRecordWriter(str(tmp_path / f"{name}.tfrecord")) as writer:
      for label in file_labels:
        image = pixels(len(images), 5, 4, channels)
        writer.write(
          _example(tf.io.encode_png(image).numpy(), label % 2, uid=100 + 10 * len(images))
        )
        images.append(image)
        labels.append(label % 2)
  return images, labels
