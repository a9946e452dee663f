"""A preset's optimizer: SGD with momentum (Nesterov or not) and its learning-rate schedule.

    optimizer = schedule.optimizer(preset)   # what `tf_forget.train.member` compiles with

The schedule is the presets' step decay — `learning_rate` until the first of
`preset.lr_boundary_steps()`, then multiplied by `lr_decay` at each boundary
(`PiecewiseConstantDecay`) — optionally preceded by a linear warm-up: 003 appendix B.1 "added a
warmup period in the beginning where we linearly scale up the learning rate from 0 to the
nominal learning rate" (Table 3: 5 epochs; docs/spec.md §6.5). The warm-up is torchprune's
`WarmupLR` (`torchprune/util/lr_scheduler.py`, stepped once per batch): the LR of optimizer step s
(0-based, Keras' `optimizer.iterations` before the update) is

    lr(s) = piecewise(s) · min(s / warmup_steps, 1),

so **step 0 has LR 0** (its update is a no-op, as the reference's first batch), step s < W has
`lr · s / W`, and step W has the nominal LR. Keras' `PiecewiseConstantDecay` keeps the old value
at a boundary step b itself and uses the decayed one from b + 1 on.

Without warm-up (`warmup_steps == 0`) `learning_rate` returns exactly the
`PiecewiseConstantDecay` the trainer built before warm-up existed, so members of existing
presets train bit for bit as before (tests/train/schedule_test.py).
"""

import tensorflow as tf

from tf_forget.compat import keras2

keras = keras2.keras()


@keras.utils.register_keras_serializable(package="tf_forget")
class WarmupPiecewiseConstant(keras.optimizers.schedules.LearningRateSchedule):
  """Linear warm-up from 0 over `warmup_steps`, times a piecewise-constant schedule.

  `lr(step) = PiecewiseConstantDecay(boundaries, values)(step) · min(step / warmup_steps, 1)`.
  Serializable (`get_config`, registered as "tf_forget>WarmupPiecewiseConstant"), so a model
  saved with its optimizer loads again.
  """

  def __init__(self, boundaries, values, warmup_steps, name=None):
    """The schedule's parts.

    Args:
      boundaries: increasing int steps (as `PiecewiseConstantDecay`).
      values: len(boundaries) + 1 learning rates.
      warmup_steps: int >= 1, the step at which the nominal LR is reached.
      name: optional op name scope.

    Raises:
      ValueError: `warmup_steps` < 1 or `values` not one longer than `boundaries`.
    """
    super().__init__()
    if int(warmup_steps) < 1:
      raise ValueError(f"warmup_steps must be >= 1, got {warmup_steps!r}")
    if len(values) != len(boundaries) + 1:
      raise ValueError(
        f"need len(boundaries) + 1 values, got {len(boundaries)} boundaries and "
        f"{len(values)} values"
      )
    self.boundaries = [int(b) for b in boundaries]
    self.values = [float(v) for v in values]
    self.warmup_steps = int(warmup_steps)
    self.name = name
    self._piecewise = (
      keras.optimizers.schedules.PiecewiseConstantDecay(self.boundaries, self.values)
      if self.boundaries
      else None
    )

  def __call__(self, step):
    with tf.name_scope(self.name or "WarmupPiecewiseConstant"):
      if self._piecewise is None:  # no decay (PiecewiseConstantDecay needs a boundary)
        lr = tf.constant(self.values[0], tf.float32)
      else:
        lr = tf.convert_to_tensor(self._piecewise(step))
      ramp = tf.cast(step, lr.dtype) / tf.cast(self.warmup_steps, lr.dtype)
      return lr * tf.minimum(ramp, tf.ones([], lr.dtype))

  def get_config(self):
    return {
      "boundaries": list(self.boundaries),
      "values": list(self.values),
      "warmup_steps": self.warmup_steps,
      "name": self.name,
    }


def learning_rate(preset, steps=None):
  """The Keras 2 learning-rate schedule of `preset`.

  Args:
    preset: a `presets.Preset` (uses `learning_rate`, `lr_boundaries`, `lr_decay`,
      `warmup_steps`).
    steps: the total steps the boundary fractions refer to (default `preset.steps`).

  Returns:
    A `keras.optimizers.schedules.PiecewiseConstantDecay` when `preset.warmup_steps == 0`
    (the schedule of the presets before warm-up existed), else a `WarmupPiecewiseConstant`.
    Without boundaries and warm-up, the constant `preset.learning_rate` (a float):
    `PiecewiseConstantDecay([], [lr])` raises IndexError at its first call (tf_keras 2.x), so
    `lenet5_002` could not train before.
  """
  if steps is None:
    boundaries = preset.lr_boundary_steps()
  else:
    boundaries = [int(round(b * steps)) for b in preset.lr_boundaries]
  values = [preset.learning_rate * preset.lr_decay**i for i in range(len(boundaries) + 1)]
  if not preset.warmup_steps:
    if not boundaries:
      return float(preset.learning_rate)
    return keras.optimizers.schedules.PiecewiseConstantDecay(boundaries, values)
  return WarmupPiecewiseConstant(boundaries, values, preset.warmup_steps)


def optimizer(preset, steps=None):
  """`keras.optimizers.SGD` with `preset`'s schedule, momentum and Nesterov flag.

  Args:
    preset: a `presets.Preset`.
    steps: see `learning_rate`.

  Returns:
    A fresh `keras.optimizers.SGD`.
  """
  return keras.optimizers.SGD(
    learning_rate=learning_rate(preset, steps), momentum=preset.momentum, nesterov=preset.nesterov
  )
