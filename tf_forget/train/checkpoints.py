"""Checkpoint helpers of resumable training (`train.member`, `prune.retrain`).

A member is trained in chunks of `checkpoint_every` steps, each ending with a checkpoint of the
model, the optimizer and the random layers' generators (`rng_states`), so that a killed run
resumes bit-identically (`Checkpointer`, `resume_or_start`); the wall time spent so far is
kept next to the checkpoint (`read_wall`, `write_wall`).
"""

import os

import tensorflow as tf

from tf_forget.artifacts import errors
from tf_forget.artifacts import fileio
from tf_forget.artifacts import filesystem
from tf_forget.compat import keras2


def rng_states(model):
  """{name: tf.random.Generator} of the model's random layers (Dropout, ...), for checkpoints.

  tf_keras does not track these generators as checkpoint dependencies of the layers.
  """
  states = {}
  for layer in model.layers:
    inner = getattr(layer, "layer", layer)
    rng = getattr(inner, "_random_generator", None)
    if rng is not None:
      rng._maybe_init()
      if getattr(rng, "_generator", None) is not None:
        states[f"rng_{inner.name}"] = rng._generator
  return states


class Checkpointer(keras2.keras().callbacks.Callback):
  """Saves a checkpoint at the end of every chunk ("epoch") of `checkpoint_every` steps."""

  def __init__(self, manager, on_chunk=None):
    super().__init__()
    self._manager = manager
    self._on_chunk = on_chunk

  def on_epoch_end(self, epoch, logs=None):
    try:
      self._manager.save(checkpoint_number=epoch + 1)
    except (OSError, tf.errors.OpError) as e:  # read-only directory, full disk: one line
      raise errors.write_error(self._manager.directory, e) from e
    if self._on_chunk:
      self._on_chunk(epoch + 1, logs or {})


def read_wall(ckpt_dir):
  path = os.path.join(ckpt_dir, "wall_time.json")
  try:
    return float(fileio.read_json(path)["seconds"]) if filesystem.exists(path) else 0.0
  except (errors.ReadError, KeyError, TypeError):
    return 0.0  # a torn wall-time record only loses the time statistic


def write_wall(ckpt_dir, seconds):
  fileio.write_json(os.path.join(ckpt_dir, "wall_time.json"), {"seconds": seconds})


def resume_or_start(model, optimizer, ckpt_dir):
  """(checkpoint manager, first chunk to train): restores the last checkpoint, if any."""
  checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer, **rng_states(model))
  manager = tf.train.CheckpointManager(checkpoint, ckpt_dir, max_to_keep=1)
  start_chunk = 0
  if manager.latest_checkpoint:
    checkpoint.restore(manager.latest_checkpoint).expect_partial()
    start_chunk = int(manager.latest_checkpoint.rsplit("-", 1)[1])
  return manager, start_chunk
