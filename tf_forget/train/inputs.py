"""Deterministic, resumable training input pipelines.

The train split is shuffled with the member's seed (reshuffled every pass), augmented with
*stateless* random ops keyed on (member seed, position in the stream), cast to float32 raw pixel
values (models normalise inside) and batched with `drop_remainder`. Everything is a function of
(seed, step): resuming at step s skips the first s batches and sees exactly the batches an
uninterrupted run would have seen.

Order of the stages: the data set's cheap `train_records` (encoded images for tfds
sets, the arrays for in-memory sets) are shuffled, repeated and numbered, the first
`start_step * batch_size` of them are skipped, and only then are records decoded and augmented
(in parallel, deterministic order) and batched. A resume therefore reads but never decodes the
skipped batches; the numbering happens before the skip, so a record's augmentation seed is the
same as in an uninterrupted run. Nothing is pinned to a device: `model.fit` places the batches.

Robust training (003 §6, appendix E.1; docs/spec.md §6.8): with a preset's `train_corruptions`, each
decoded uint8 image is first corrupted with one of them drawn uniformly ("none": left clean) at
`train_corruption_severity`, then augmented. The draw and the corruption's randomness are a pure
function of (member seed, stream position) (`tf_forget.corruptions.robust_training.draw`), so
resumes see the same corrupted batches. Throughput: benchmarks/robust_stream_bench.py. The
corruptions are the pure-numpy image functions of `tf_forget.corruptions` (the one package of the
eval side's suite the train stage imports; it imports no TensorFlow), run through
`tf.numpy_function` once per batch of decoded images in the parallel, deterministic map. Since that
map calls Python, an iterator of a robust stream must not outlive the interpreter (drop it before
exit; `model.fit`'s iterator ends with `fit`): at interpreter shutdown its prefetching threads can
block on the GIL and hang the exit.
"""

import tensorflow as tf

from tf_forget.corruptions import robust_training

AUGMENTATIONS = ("none", "shift", "crop_flip")


def _augment_fn(augmentation, shift_pixels, image_shape):
  """Returns f(index, image uint8) -> image float32 for the named augmentation."""
  h, w, c = image_shape

  def none(index, image):
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


def _corrupt_fn(corruptions, severity, seed):
  """Returns f(positions int64 [n], images uint8 [n, H, W, C]) -> each with its drawn corruption.

  None without `corruptions` (the plain stream's graph is unchanged).

  Raises:
    robust_training.CorruptionError: an unknown / repeated name or a bad severity.
  """
  corruptions = tuple(corruptions or ())
  if not corruptions:
    return None
  robust_training.check(corruptions, severity)
  severity, seed = int(severity), int(seed)

  def corrupt_numpy(positions, images):
    return robust_training.corrupt_batch(images, positions, corruptions, severity, seed)

  def corrupt(positions, images):
    out = tf.numpy_function(corrupt_numpy, [positions, images], tf.uint8, stateful=False)
    out.set_shape(images.shape)
    return out

  return corrupt


def train_stream(
  dataset, preset, seed, start_step=0, records=None, num_examples=None, batch_size=None
):
  """The batched, infinite training stream of a member.

  Args:
    dataset: a `tf_forget.data.dataset_api.Dataset`.
    preset: a `presets.Preset` (batch size, augmentation, robust training's
      `train_corruptions` and `train_corruption_severity`, docs/spec.md §6.8).
    seed: the member's seed.
    start_step: batches to skip (resume).
    records: optional subset of the train split's records (`dataset.train_records("train")`
      filtered, e.g. one-shot fine-tuning without its validation records); default all.
    num_examples: the number of `records` (required with `records`).
    batch_size: optional batch size instead of the preset's.

  Returns:
    A `tf.data.Dataset` of (images float32 `[B, H, W, C]`, labels int64 `[B]`).

  Raises:
    ValueError: fewer examples than a batch; an unknown augmentation or train corruption.
  """
  batch_size = int(batch_size or preset.batch_size)
  n = dataset.num_examples("train") if records is None else int(num_examples)
  if n < batch_size:
    raise ValueError(
      f"train split of {dataset.spec.name!r} has {n} examples, fewer than batch_size={batch_size}"
    )
  augment = _augment_fn(preset.augmentation, preset.shift_pixels, dataset.spec.image_shape)
  corrupt = _corrupt_fn(preset.train_corruptions, preset.train_corruption_severity, seed)
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

  def decode(i, record):
    image, label = dataset.decode_record(record)
    return i, image, label

  parallel = dict(num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
  if corrupt is None:
    ds = ds.map(decode_and_augment, **parallel)
  else:
    # Robust training: the decoded images are corrupted a batch at a time (one Python call per
    # batch, images that draw the same corruption in one `corruption_registry.apply`: measured ~3x
    # faster than one call per image; the same pixels, every image has its own seed), then
    # augmented.
    ds = ds.map(decode, **parallel).batch(batch_size)
    ds = ds.map(lambda i, images, labels: (i, corrupt(i, images), labels), **parallel)
    ds = ds.unbatch().map(lambda i, image, label: (augment(i + offset, image), label), **parallel)
  ds = ds.batch(batch_size, drop_remainder=True)
  return ds.prefetch(tf.data.AUTOTUNE)


def eval_stream(dataset, split, batch_size=256):
  """A split in fixed order as (images float32, labels) batches, for Keras `evaluate`."""
  return (
    dataset.tf_dataset(split)
    .map(
      lambda image, label: (tf.cast(image, tf.float32), label),
      num_parallel_calls=tf.data.AUTOTUNE,
      deterministic=True,
    )
    .batch(batch_size)
    .prefetch(tf.data.AUTOTUNE)
  )
