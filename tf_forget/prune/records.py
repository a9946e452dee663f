"""The training records one-shot pruning reads: the validation hold-out and decoded batches.

Shared by g's computation (`tf_forget.prune.gradient`, SPEC §6.2) and fine-tuning
(`tf_forget.prune.oneshot_member`, SPEC §6.4), which must agree on which records are held out: every
`validation_every`-th training record selects the fine-tuning epoch; the rest are fine-tuned
on, and g's batches are drawn from them.
"""

import tensorflow as tf


def holdout(dataset, every):
  """Splits the training records: every `every`-th one held out for validation (SPEC §6.4).

  Args:
    dataset: a `tf_forget.data.dataset_api.Dataset`.
    every: hold out records 0, every, 2·every, ... (>= 2).

  Returns:
    (train records, validation records, n_train, n_val): two `tf.data.Dataset`s of
    `train_records` elements, in order, and their sizes.
  """
  records = dataset.train_records("train").enumerate()
  every = tf.constant(int(every), tf.int64)

  def held_out(i, record):  # pylint: disable=unused-argument
    return tf.equal(i % every, 0)

  def kept(i, record):
    return tf.logical_not(held_out(i, record))

  def drop_index(i, record):  # pylint: disable=unused-argument
    return record

  val = records.filter(held_out).map(drop_index)
  train = records.filter(kept).map(drop_index)
  n = dataset.num_examples("train")
  n_val = -(-n // int(every))
  return train, val, n - n_val, n_val


def _record(parts):
  """A `train_records` element from a `map` function's arguments (tuples arrive unpacked)."""
  return parts[0] if len(parts) == 1 else tuple(parts)


def decoded(dataset, records, batch_size):
  """Unaugmented (images float32 `[B, H, W, C]`, labels `[B]`) batches of `records`, in order."""
  def decode(*parts):
    image, label = dataset.decode_record(_record(parts))
    return tf.cast(image, tf.float32), label
  return records.map(decode, num_parallel_calls=tf.data.AUTOTUNE,
                     deterministic=True).batch(batch_size)
