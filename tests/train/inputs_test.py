"""Training input streams: a pure function of (seed, step); resume skips without decoding."""

import hashlib
import inspect
import re

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

from tf_forget.data import registry
from tf_forget.data import tfds_sets
from tf_forget.train import inputs
from tf_forget.train import presets

# sha256 of the first 3 batches (images float32 bytes, then labels int64 bytes, per batch) of
# the digits stream under the `digits` preset: the committed fixtures
# (tests/e2e/audit_fixtures_test.py) were trained on these batches, so they must never change,
# wherever the stream skips and decodes.
DIGITS_STREAM_SHA256 = {
  (0, 0): "db77f2379e908492b0fc25d691bb185f321cc43d739c8084d753c0ccfc9fa2fe",
  (0, 300): "a07309876896dd397905dc061ad0faada4161d83d50023801d9e663158c17c4d",
  (1, 0): "e36c8ffecbde1b27931f8a815846c8de2f129f6c60a016ba1d86b55f7b6416b1",
  (1, 300): "4b802c2d585fa056ee7061492f31ff31f50ab0d9c35c03d88333b18b8e608a2d",
}


def _batches(dataset, preset, seed, start_step, count):
  tf.random.set_seed(seed)  # as member training does (keras.utils.set_random_seed)
  stream = inputs.train_stream(dataset, preset, seed, start_step=start_step)
  return [(x.numpy(), y.numpy()) for x, y in stream.take(count)]


@pytest.mark.parametrize("seed, start", sorted(DIGITS_STREAM_SHA256))
def test_digits_stream_is_unchanged(seed, start):
  got = hashlib.sha256()
  for images, labels in _batches(registry.get("digits"), presets.get("digits"), seed, start, 3):
    assert images.dtype == np.float32 and labels.dtype == np.int64
    got.update(images.tobytes())
    got.update(labels.tobytes())
  assert got.hexdigest() == DIGITS_STREAM_SHA256[(seed, start)]


def _one_image(augmentation, pixels, index, image):
  """The augmentation of one image by the per-image `tf.image` ops (the definition)."""
  h, w, c = image.shape
  seed = tf.constant([index, 0], tf.int64)
  padded = tf.pad(tf.cast(image, tf.float32), [[pixels, pixels], [pixels, pixels], [0, 0]])
  out = tf.image.stateless_random_crop(padded, [h, w, c], seed=seed)
  if augmentation == "crop_flip":
    out = tf.image.stateless_random_flip_left_right(out, seed=seed + 1)
  return out.numpy()


@pytest.mark.parametrize(
  "augmentation, pixels, shape",
  [("shift", 1, (8, 8, 1)), ("shift", 3, (6, 5, 3)), ("crop_flip", 2, (7, 9, 3))],
)
def test_batch_augmentation_is_the_per_image_crop_and_flip(augmentation, pixels, shape):
  rng = np.random.default_rng(0)
  images = rng.integers(0, 256, (300, *shape), dtype=np.uint8)
  indices = rng.integers(-(2**40), 2**40, 300)
  got = inputs._augment_fn(augmentation, pixels, shape)(tf.constant(indices), images).numpy()
  assert got.dtype == np.float32 and got.shape == images.shape
  for i in range(len(images)):
    np.testing.assert_array_equal(got[i], _one_image(augmentation, pixels, indices[i], images[i]))


def test_resume_sees_the_uninterrupted_batches_digits():
  data, preset = registry.get("digits"), presets.get("tiny")
  full = _batches(data, preset, 7, 0, 90)  # crosses epochs (1,297 / 32 batches per pass)
  resumed = _batches(data, preset, 7, 50, 40)
  for (xa, ya), (xb, yb) in zip(full[50:], resumed):
    np.testing.assert_array_equal(xa, xb)
    np.testing.assert_array_equal(ya, yb)


def test_resume_reads_but_does_not_decode_skipped_batches():
  preset = presets.get("tiny", batch_size=4, augmentation="crop_flip", shift_pixels=2)
  with tfds.testing.mock_data(num_examples=24):
    data = registry.get("mnist")
    decoded = []
    decode = data.decode_record

    def counting_decode(record):
      image, label = decode(record)
      tick = tf.numpy_function(lambda: decoded.append(1) or np.int64(0), [], tf.int64)
      with tf.control_dependencies([tick]):
        return tf.identity(image), label

    data.decode_record = counting_decode
    full = _batches(data, preset, 3, 0, 60)  # 10 passes over the 24 mock examples
    assert len(decoded) >= 60 * 4
    decoded.clear()
    skipped = 55
    resumed = _batches(data, preset, 3, skipped, 5)
    # Only the trained batches (plus what the parallel map and prefetch read ahead) are
    # decoded, never the 55 * 4 = 220 skipped examples.
    assert 5 * 4 <= len(decoded) < skipped * 4 / 2
    for (xa, ya), (xb, yb) in zip(full[skipped:], resumed):
      np.testing.assert_array_equal(xa, xb)
      np.testing.assert_array_equal(ya, yb)


def test_input_pipelines_decode_in_parallel_prefetch_and_pin_no_device():
  for module in (inputs, tfds_sets):
    source = inspect.getsource(module)
    assert "tf.device(" not in source, module.__name__
    assert re.search(r"prefetch\((?!\s*tf\.data\.AUTOTUNE)", source) is None, module.__name__
    assert "num_parallel_calls=tf.data.AUTOTUNE" in source, module.__name__
  stream = inputs.train_stream(registry.get("digits"), presets.get("tiny"), 0)
  assert stream.element_spec[0].shape.as_list() == [32, 8, 8, 1]
