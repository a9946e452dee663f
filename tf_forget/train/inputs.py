"""Deterministic, resumable training input pipelines.

The train split is shuffled with the member's seed (reshuffled every pass), augmented with
*stateless* random ops keyed on (member seed, position in the stream), cast to float32 raw pixel
values (models normalise inside) and batched with `drop_remainder`. Everything is a function of
(seed, step): resuming at step s skips the first s batches and sees exactly the batches an
uninterrupted run would have seen.

Order of the stages (issue #15): the data set's cheap `train_records` (encoded images for tfds
sets, the arrays for in-memory sets) are shuffled, repeated and numbered, the first
`start_step * batch_size` of them are skipped, and only then are records decoded and augmented
(in parallel, deterministic order) and batched. A resume therefore reads but never decodes the
skipped batches; the numbering happens before the skip, so a record's augmentation seed is the
same as in an uninterrupted run. Nothing is pinned to a device: `model.fit` places the batches.
"""

import tensorflow as tf

AUGMENTATIONS = ("none", "shift", "crop_flip")


def _augment_fn(augmentation, shift_pixels, image_shape):
  """Returns f(index, image uint8) -> image float32 for the named augmentation."""
  h, w, c = image_shape

  def none(index, image):  # pylint: disable=unused-argument
    return tf.cast(image, tf.float32)

  def shift(index, image, flip=False):
    seed = tf.stack([tf.cast(index, tf.int64), tf.constant(0, tf.int64)])
    seed = tf.cast(seed, tf.int64)
    image = tf.cast(image, tf.float32)
    p = shift_pixels
    padded = tf.pad(image, [[p, p], [p, p], [0, 0]])
    image = tf.image.stateless_random_crop(padded, [h, w, c], seed=seed)
    if flip:
      image = tf.image.stateless_random_flip_left_right(image, seed=seed + 1)
    return image

  if augmentation == "none" or (augmentation == "shift" and shift_pixels == 0):
    return none
  if augmentation == "shift":
    return shift
  if augmentation == "crop_flip":
    return lambda index, image: shift(index, image, flip=True)
  raise ValueError(f"unknown augmentation {augmentation!r} (known: {', '.join(AUGMENTATIONS)})")


def train_stream(dataset, preset, seed, start_step=0, records=None, num_examples=None,
                 batch_size=None):
  """The batched, infinite training stream of a member.

  Args:
    dataset: a `tf_forget.data.base.Dataset`.
    preset: a `presets.Preset` (batch size, augmentation).
    seed: the member's seed.
    start_step: batches to skip (resume).
    records: optional subset of the train split's records (`dataset.train_records("train")`
      filtered, e.g. one-shot fine-tuning without its validation records); default all.
    num_examples: the number of `records` (required with `records`).
    batch_size: optional batch size instead of the preset's.

  Returns:
    A `tf.data.Dataset` of (images float32 `[B, H, W, C]`, labels int64 `[B]`).
  """
  batch_size = int(batch_size or preset.batch_size)
  n = dataset.num_examples("train") if records is None else int(num_examples)
  if n < batch_size:
    raise ValueError(f"train split of {dataset.spec.name!r} has {n} examples, fewer than "
                     f"batch_size={batch_size}")
  augment = _augment_fn(preset.augmentation, preset.shift_pixels, dataset.spec.image_shape)
  ds = dataset.train_records("train") if records is None else records
  if n <= 200_000 and dataset.spec.image_shape[0] * dataset.spec.image_shape[1] <= 64 * 64:
    ds = ds.cache()
  ds = ds.shuffle(min(n, 50_000), seed=seed, reshuffle_each_iteration=True).repeat()
  offset = tf.constant(seed, tf.int64) * 1_000_003
  ds = ds.enumerate()
  if start_step:
    # Whole batches of cheap records: the stream is infinite and batches drop no remainder, so
    # skipping start_step * batch_size records is skipping start_step batches.
    ds = ds.skip(int(start_step) * batch_size)

  def decode_and_augment(i, record):
    image, label = dataset.decode_record(record)
    return augment(i + offset, image), label

  ds = ds.map(decode_and_augment, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
  ds = ds.batch(batch_size, drop_remainder=True)
  return ds.prefetch(tf.data.AUTOTUNE)


def eval_stream(dataset, split, batch_size=256):
  """A split in fixed order as (images float32, labels) batches, for Keras `evaluate`."""
  return dataset.tf_dataset(split).map(
      lambda image, label: (tf.cast(image, tf.float32), label),
      num_parallel_calls=tf.data.AUTOTUNE, deterministic=True).batch(batch_size).prefetch(
          tf.data.AUTOTUNE)
