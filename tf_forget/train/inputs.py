"""Deterministic, resumable training input pipelines.

The train split is shuffled with the member's seed (reshuffled every pass), augmented with
*stateless* random ops keyed on (member seed, position in the stream), cast to float32 raw pixel
values (models normalise inside) and batched with `drop_remainder`. Everything is a function of
(seed, step): resuming at step s skips the first s batches and sees exactly the batches an
uninterrupted run would have seen.

Order of the stages: the data set's cheap `train_records` (encoded images for tfds
sets, the arrays for in-memory sets) are shuffled, repeated and numbered, the first
`start_step * batch_size` of them are skipped, and only then are records decoded (in parallel,
deterministic order), batched and augmented a batch at a time (`_augment_fn`: the pixels of the
per-image `tf.image` ops, each image with its own seed). A resume therefore reads but never
decodes the skipped batches; the numbering happens before the skip, so a record's augmentation
seed is the same as in an uninterrupted run. Nothing is pinned to a device: `model.fit` places
the batches. tf.data's autotuning is off (`_fixed_options`): it stalls training steps on a busy
machine and changes no batch.

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


def _offsets(seeds, limit, flip):
  """Each image's crop offset (and flip) from its seed, as `tf.image.stateless_random_crop`
  (and `stateless_random_flip_left_right` at seed + 1) draw them for one image.

  Args:
    seeds: int64 `[B, 2]`, one stateless seed per image.
    limit: int32 `[3]`, padded shape - crop size + 1 (the crop's offset range per axis).
    flip: whether to draw the flips too.

  Returns:
    (int32 `[B, 3]` offsets, bool `[B]` flips or None).
  """

  def draw(seed):
    offset = (
      tf.random.stateless_uniform([3], seed=seed, minval=0, maxval=tf.int32.max, dtype=tf.int32)
      % limit
    )
    if not flip:
      return offset, False
    return offset, tf.random.stateless_uniform([], seed=seed + 1) < 0.5

  signature = (tf.TensorSpec([3], tf.int32), tf.TensorSpec([], tf.bool))
  offsets, flips = tf.map_fn(draw, seeds, fn_output_signature=signature)
  return offsets, (flips if flip else None)


def _augment_fn(augmentation, shift_pixels, image_shape):
  """Returns f(indices int64 [B], images uint8 [B, H, W, C]) -> images float32 [B, H, W, C].

  "shift": each image zero-padded by `shift_pixels` and cropped back to (H, W) at an offset
  drawn from its stateless seed (stream index, 0); "crop_flip" also mirrors it left-right on a
  draw at seed + 1. The pixels are those of `tf.image.stateless_random_crop` (and
  `stateless_random_flip_left_right`) applied to each image alone (tests/train/inputs_test.py
  compares them); only the seeds' draws run per image (`_offsets`), the crops are two gathers
  over the batch (per-image augmentation cost ~2x the CPU time of the whole stream).
  """
  h, w, c = image_shape
  p = int(shift_pixels)

  def none(indices, images):
    return tf.cast(images, tf.float32)

  def shift(indices, images, flip=False):
    seeds = tf.stack([tf.cast(indices, tf.int64), tf.zeros_like(indices, tf.int64)], axis=1)
    offsets, flips = _offsets(seeds, tf.constant([2 * p + 1, 2 * p + 1, 1], tf.int32), flip)
    padded = tf.pad(tf.cast(images, tf.float32), [[0, 0], [p, p], [p, p], [0, 0]])
    rows = offsets[:, 0:1] + tf.range(h)[tf.newaxis]
    cols = offsets[:, 1:2] + tf.range(w)[tf.newaxis]
    out = tf.gather(tf.gather(padded, rows, batch_dims=1), cols, axis=2, batch_dims=1)
    if flip:
      out = tf.where(flips[:, tf.newaxis, tf.newaxis, tf.newaxis], tf.reverse(out, [2]), out)
    return out

  if augmentation == "none" or (augmentation == "shift" and shift_pixels == 0):
    return none
  if augmentation == "shift":
    return shift
  if augmentation == "crop_flip":
    return lambda indices, images: shift(indices, images, flip=True)
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

  def decode(i, record):
    image, label = dataset.decode_record(record)
    return i, image, label

  parallel = dict(num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
  ds = ds.map(decode, **parallel).batch(batch_size, drop_remainder=True)
  if corrupt is not None:
    # Robust training: the decoded images are corrupted a batch at a time (one Python call per
    # batch, images that draw the same corruption in one `corruption_registry.apply`: measured ~3x
    # faster than one call per image; the same pixels, every image has its own seed), then
    # augmented.
    ds = ds.map(lambda i, images, labels: (i, corrupt(i, images), labels), **parallel)
  ds = ds.map(lambda i, images, labels: (augment(i + offset, images), labels), **parallel)
  return ds.prefetch(tf.data.AUTOTUNE).with_options(_fixed_options())


def _fixed_options():
  """The training stream's `tf.data.Options`: autotuning off.

  `AUTOTUNE` then takes tf.data's static defaults. The autotuner stalls training steps
  whenever the trainer's threads share one core (measured on 2 cores, digits preset: a member
  pinned to one core trains 580 steps in 20.5 s with autotuning, 12.7 s without; two pool
  workers train the default 15 members in 123 s with it, 108 s without). The batches are the
  same (the maps keep their order), so the weights are too.
  """
  options = tf.data.Options()
  options.autotune.enabled = False
  return options


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
