"""Keeping the epoch with the lowest validation loss (002 §6.1; docs/spec.md §6.4).

002 keeps, for its parents and after fine-tuning a pruned network, the epoch whose loss on
held-out data is lowest. The validation records are every `every`-th record of the train split
(`holdout`), never the test split; the loss is the mean cross-entropy of the logits with no
regularization term (`data_loss`), the model in inference mode.

Two callbacks: `BestEpoch` keeps the best weights in memory (one-shot fine-tuning, short and
restarted whole after a kill); `ResumableBestEpoch` keeps them on disk beside the training
checkpoint, so a parent's selection survives a kill and resumes exactly.
"""

import os

import numpy as np
import tensorflow as tf

from tf_forget.artifacts import errors
from tf_forget.artifacts import fileio
from tf_forget.artifacts import filesystem
from tf_forget.compat import keras2

BEST_RECORD = "best_epoch.json"


def holdout(dataset, every):
  """Splits the training records: every `every`-th one held out for validation.

  Args:
    dataset: a `tf_forget.data.dataset_api.Dataset`.
    every: hold out records 0, every, 2·every, ... (>= 2).

  Returns:
    (train records, validation records, n_train, n_val): two `tf.data.Dataset`s of
    `train_records` elements, in order, and their sizes.
  """
  records = dataset.train_records("train").enumerate()
  every = tf.constant(int(every), tf.int64)

  def held_out(i, record):
    return tf.equal(i % every, 0)

  def kept(i, record):
    return tf.logical_not(held_out(i, record))

  def drop_index(i, record):
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

  return records.map(decode, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True).batch(
    batch_size
  )


def batches(dataset, records, batch_size=256):
  """`decoded` batches as numpy (images float32, labels), held in memory for repeated scoring."""
  return [
    (x.astype(np.float32), y) for x, y in decoded(dataset, records, batch_size).as_numpy_iterator()
  ]


def data_loss(model, val_batches):
  """Mean sparse cross-entropy of the logits over `val_batches`, inference mode.

  L = (1/n) Σ_i −log softmax(f(x_i))_{y_i}, no regularization term.
  """
  keras = keras2.keras()
  total, count = 0.0, 0
  for images, labels in val_batches:
    logits = model(images, training=False)
    losses = keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True)
    total += float(tf.reduce_sum(tf.cast(losses, tf.float64)))
    count += int(losses.shape[0])
  return total / max(count, 1)


class BestEpoch(keras2.keras().callbacks.Callback):
  """Keeps the weights of the epoch with the lowest validation data loss (epoch 0 = start).

  Ties go to the earlier epoch.
  """

  def __init__(self, val_batches):
    super().__init__()
    self.val_batches = val_batches
    self.losses, self.best_epoch, self.best_weights = [], 0, None

  def _score(self, epoch):
    loss = data_loss(self.model, self.val_batches)
    self.losses.append(loss)
    if self.best_weights is None or loss < min(self.losses[:-1]):
      self.best_epoch, self.best_weights = epoch, self.model.get_weights()

  def on_train_begin(self, logs=None):
    self._score(0)

  def on_epoch_end(self, epoch, logs=None):
    self._score(epoch + 1)


class ResumableBestEpoch(keras2.keras().callbacks.Callback):
  """Scores every finished chunk ("epoch") and keeps the best one's weights in `directory`.

  Runs after the training checkpoint of the chunk. The best weights are written to a file named
  by their epoch, then the record (`best_epoch.json`: the losses of epochs 1..n, the best epoch)
  names it, then the previous best file goes: a kill at any point leaves a record naming a file
  that exists. `catch_up` scores a checkpointed chunk that a kill left unscored, so a resumed run
  chooses exactly as an uninterrupted one. Epochs count from 1; ties go to the earlier epoch.
  """

  def __init__(self, val_batches, directory, describe=None):
    super().__init__()
    self.val_batches = val_batches
    self.directory = directory
    self.describe = dict(describe or {})
    record = self._read()
    self.losses = list(record.get("losses", []))
    self.best_epoch = int(record.get("best_epoch", 0))

  def _read(self):
    path = os.path.join(self.directory, BEST_RECORD)
    if not filesystem.exists(path):
      return {}
    try:
      return fileio.read_json(path, "epoch selection")
    except errors.ReadError:
      return {}

  def _weights(self, epoch):
    return os.path.join(self.directory, f"best_epoch_{epoch}.h5")

  def score(self, model, epoch):
    """Scores `model` as the weights after `epoch` (1-based) and keeps them if best so far."""
    loss = data_loss(model, self.val_batches)
    self.losses = self.losses[: epoch - 1] + [loss]
    previous = self.best_epoch
    if not previous or previous >= epoch or loss < min(self.losses[:-1]):
      filesystem.makedirs(self.directory)
      tmp = self._weights(epoch)[:-3] + ".tmp.h5"
      model.save_weights(tmp)
      os.replace(tmp, self._weights(epoch))
      self.best_epoch = epoch
    fileio.write_json(
      os.path.join(self.directory, BEST_RECORD),
      {"losses": self.losses, "best_epoch": self.best_epoch},
    )
    if previous and previous != self.best_epoch:
      filesystem.remove(self._weights(previous))

  def catch_up(self, model, start_chunk):
    """Scores the restored checkpoint when the record stops short of it."""
    if start_chunk and len(self.losses) < start_chunk:
      self.score(model, start_chunk)

  def on_epoch_end(self, epoch, logs=None):
    self.score(self.model, epoch + 1)

  def restore_best(self, model):
    """Loads the best epoch's weights into `model`; returns the record for the metadata."""
    model.load_weights(self._weights(self.best_epoch))
    return dict(
      self.describe,
      validation_data_loss=[round(x, 6) for x in self.losses],
      best_epoch=int(self.best_epoch),
    )
