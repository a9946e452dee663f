"""One population member: (data set, model, variant, k) trained by a pure function of its config.

`train_member(config, member_dir)` trains from scratch (or resumes from the member's last
checkpoint), strips the pruning wrappers, checks the achieved sparsity and writes `model.keras`
then `metadata.json` atomically (docs/artifacts/members.md; the member's files are read, checked
and written by `tf_forget.train.member_files`). The metadata records the sha256 of the
`model.keras` bytes (`model_sha256`) and of the member's config (`inputs.config`): a member is
finished only if both match (`member_files.status`); otherwise it is trained again, and the
caller logs why. A checkpoint or model that cannot be written (read-only directory, full disk)
is an `errors.WriteError` with one line, raised where it happens. The config, its seed (docs/spec.md
§1.3) and identity are `tf_forget.train.member_config.MemberConfig`'s; with TensorFlow's op
determinism on, the same config gives the same weights on the same machine and
stack, and a resumed member the same weights as an uninterrupted one. Across machines the CPU
kernels decide (`tf_forget.compat.cpu_kernels`, recorded as `machine` in the metadata). The
members of one configuration that a process trains share one compiled training step
(`tf_forget.train.shared_step`): each member's model is built and seeded as alone, trained on the
process's trainer and given its weights back, the same bytes as alone.

GPUs: `train_member` first turns on memory growth for every visible GPU
(`tf_forget.compat.gpu`, a no-op on CPU) and records them as `gpus`. A preset with
`mixed_precision` builds and trains its model under Keras' `mixed_float16` policy, set for the
model's building only and then restored (other members, later stages see the old policy); the
logits are cast to float32 by a last float32 linear `Activation` (losses and saved outputs stay
float32) and the policy is recorded as `precision_policy` ("float32" otherwise).
"""

import os
import time

import numpy as np
import tensorflow as tf

from tf_forget.artifacts import filesystem
from tf_forget.artifacts import layout
from tf_forget.artifacts import member_metadata
from tf_forget.artifacts import names
from tf_forget.compat import cpu_kernels
from tf_forget.compat import gpu
from tf_forget.compat import keras2
from tf_forget.data import registry as data_registry
from tf_forget.models import model_registry
from tf_forget.train import checkpoints
from tf_forget.train import epoch_selection
from tf_forget.train import inputs
from tf_forget.train import member_config
from tf_forget.train import member_files
from tf_forget.train import presets
from tf_forget.train import pruning
from tf_forget.train import schedule
from tf_forget.train import shared_step

CHECKPOINT_DIR = layout.CHECKPOINT_DIR
# Training steps a call of a member's compiled step runs (Keras' `steps_per_execution`): the
# same kernels on the same values in the same order, so the same weights as one step a call
# (tests/train/shared_step_test.py), with a tenth of the per-step Python (a digits member: 12%
# less time). tfmot's pruning wrappers count their pruning step in the graph, and its callback
# acts at the end of an epoch, which Keras keeps. Ten steps keep a call short for Ctrl-C in the
# audit's own process.
STEPS_PER_EXECUTION = 10


def _float32_logits(model):
  """The model with its logits cast to float32 by a weightless float32 linear `Activation`.

  Under `mixed_float16` every layer computes in float16, the zoo's final `Dense` (the logits)
  too; Keras' recipe is a float32 linear activation after it, so that the loss and the saved
  model's outputs are float32. (Rebuilding the logits `Dense` itself in float32 breaks tfmot's
  pruning wrapper, which would feed it float16 inputs; the cast layer has no weights to prune.)
  """
  keras = keras2.keras()
  if model.output.dtype == tf.float32:
    return model
  outputs = keras.layers.Activation("linear", dtype="float32", name="logits_float32")(model.output)
  return keras.Model(model.inputs, outputs, name=model.name)


def _build(config, dataset):
  """Model (wrapped for pruning if the variant is pruned) and its optimizer.

  With the preset's `mixed_precision`, the model is built and compiled under the
  `mixed_float16` global policy (compile wraps the optimizer in a `LossScaleOptimizer`, which
  is returned), and the previous global policy is restored before returning.
  """
  keras = keras2.keras()
  if member_config.precision_policy(config.preset) == "float32":
    return _build_model(config, dataset)
  previous = keras.mixed_precision.global_policy()
  keras.mixed_precision.set_global_policy(member_config.MIXED_POLICY)
  try:
    model, _, variant = _build_model(config, dataset, mixed=True)
  finally:
    keras.mixed_precision.set_global_policy(previous)
  return model, model.optimizer, variant


def _build_model(config, dataset, mixed=False):
  keras = keras2.keras()
  preset = config.preset
  variant = names.parse_trained(config.variant)
  model_options = dict(preset.model_options)
  model_options.update(config.model_options)
  model_options.setdefault("weight_decay", preset.weight_decay)
  model = model_registry.get(
    config.model,
    input_shape=dataset.spec.image_shape,
    num_classes=dataset.spec.num_classes,
    **model_options,
  )
  if mixed:
    model = _float32_logits(model)
  if variant.pruned:
    model = pruning.wrap(model, variant.sparsity, *preset.pruning_schedule())
  optimizer = schedule.optimizer(preset)
  model.compile(
    optimizer=optimizer,
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    metrics=["accuracy"],
    steps_per_execution=STEPS_PER_EXECUTION,
  )
  return model, optimizer, variant


def train_member(config, directory, log=None, stop_after_chunks=None, share_step=True):
  """Trains (or resumes, or skips) one member and writes its artifacts.

  Args:
    config: a `member_config.MemberConfig`.
    directory: the member's directory (`member_files.member_dir(run, variant, k)`).
    log: optional callable taking a progress string.
    stop_after_chunks: test hook: stop (as if killed) after this many checkpoint chunks.
    share_step: train on this process's `shared_step.Trainer` of the member's configuration
      (float32 members; the same bytes, without tracing the training step again); False: on
      the member's own model.

  Returns:
    The member's metadata dict, or None if stopped early by `stop_after_chunks`.

  Raises:
    RuntimeError: if training diverged or the achieved sparsity misses the target.
    errors.WriteError: a checkpoint, the model or the metadata cannot be written.
  """
  # Before anything touches a GPU: memory growth can only be set before initialization.
  gpu.configure()
  if member_files.is_finished(directory, config):
    return member_files.read_metadata(directory)
  # Not current (or not there): the old metadata goes first, so that a kill while retraining
  # never leaves metadata that describes another model.keras.
  filesystem.remove(os.path.join(directory, member_files.METADATA_FILE))
  preset = config.preset
  if preset.steps % preset.checkpoint_every:
    raise presets.PresetError(
      f"steps={preset.steps} is not a multiple of checkpoint_every={preset.checkpoint_every}"
    )
  dataset = data_registry.get(config.dataset, **dict(config.dataset_options))
  trainer = None
  if share_step and member_config.precision_policy(config.preset) == "float32":

    def build_trainer():
      _seed(config.seed)  # Keras' random layers then hold generators, as the member's own do
      return _build(config, dataset)[:2]

    trainer = shared_step.trainer(config, build_trainer)
  _seed(config.seed)
  model, optimizer, variant = _build(config, dataset)
  # The random layers' generators, drawn here as `checkpoints.resume_or_start` draws them.
  checkpoints.rng_states(model)
  train_model, train_optimizer = model, optimizer
  if trainer is not None and trainer.adopt(model, optimizer):
    train_model, train_optimizer = trainer.model, trainer.optimizer

  ckpt_dir = os.path.join(directory, CHECKPOINT_DIR)
  trained = _train_chunks(
    config, dataset, train_model, train_optimizer, variant, ckpt_dir, log, stop_after_chunks
  )
  if trained is None:
    return None
  resumed_from_step, elapsed, selector = trained
  selection = selector.restore_best(train_model) if selector else None
  if train_model is not model:
    trainer.give_back(model)
  final, report = _finalize(config, model, variant)
  train_acc, test_acc = _accuracies(final, dataset)
  model_sha256 = member_files.save_model(final, os.path.join(directory, member_files.MODEL_FILE))
  metadata = _metadata(
    config,
    dataset,
    variant,
    steps=int(train_optimizer.iterations.numpy()),
    resumed_from_step=resumed_from_step,
    report=report,
    train_acc=train_acc,
    test_acc=test_acc,
    elapsed=elapsed,
    model_sha256=model_sha256,
  )
  if selection:
    metadata["epoch_selection"] = selection
  member_metadata.write(os.path.join(directory, member_files.METADATA_FILE), metadata)
  filesystem.rmtree(ckpt_dir)
  return member_files.read_metadata(directory)


def _seed(seed):
  """Seeds every random draw of training and turns on TensorFlow's op determinism."""
  keras = keras2.keras()
  # Dropout etc. draw from per-layer tf.random.Generators (tf_keras' "stateful" RNG), whose
  # states are checkpointed with the model (`checkpoints.rng_states`): a resumed member sees the
  # same dropout masks as an uninterrupted one.
  keras.backend.experimental.enable_tf_random_generator()
  keras.utils.set_random_seed(seed)
  tf.config.experimental.enable_op_determinism()


def _train_chunks(config, dataset, model, optimizer, variant, ckpt_dir, log, stop_after_chunks):
  """Trains the chunks of `checkpoint_every` steps not yet checkpointed, saving each one.

  With the preset's `validation_every`, a dense member trains on the records not held out and
  every chunk is scored on the held-out ones (`epoch_selection.ResumableBestEpoch`).

  Returns:
    (the step this run started from, a callable giving the wall time of every run so far, the
    epoch selector or None), or None if stopped early by `stop_after_chunks`.
  """
  preset = config.preset
  manager, start_chunk = checkpoints.resume_or_start(model, optimizer, ckpt_dir)
  chunks = preset.steps // preset.checkpoint_every
  wall_before = checkpoints.read_wall(ckpt_dir)
  t0 = time.time()

  def elapsed():
    return wall_before + time.time() - t0

  def on_chunk(chunk, logs):
    checkpoints.write_wall(ckpt_dir, elapsed())
    if log:
      log(
        f"    step {chunk * preset.checkpoint_every}/{preset.steps} "
        f"loss {logs.get('loss', float('nan')):.4f} acc {logs.get('accuracy', float('nan')):.3f}"
      )

  records, n_records, selector = None, None, None
  if preset.validation_every and not variant.pruned:
    records, val, n_records, n_val = epoch_selection.holdout(dataset, preset.validation_every)
    selector = epoch_selection.ResumableBestEpoch(
      epoch_selection.batches(dataset, val),
      ckpt_dir,
      {
        "validation": f"every {preset.validation_every}th train record (never trained on)",
        "train_examples": int(n_records),
        "validation_examples": int(n_val),
      },
    )
    selector.catch_up(model, start_chunk)
  stream = inputs.train_stream(
    dataset,
    preset,
    config.seed,
    start_step=start_chunk * preset.checkpoint_every,
    records=records,
    num_examples=n_records,
  )
  end_chunk = chunks if stop_after_chunks is None else min(chunks, start_chunk + stop_after_chunks)
  cbs = [checkpoints.Checkpointer(manager, on_chunk)] + ([selector] if selector else [])
  if variant.pruned:
    cbs = pruning.callbacks() + cbs
  if start_chunk < end_chunk:
    model.fit(
      stream,
      epochs=end_chunk,
      initial_epoch=start_chunk,
      steps_per_epoch=preset.checkpoint_every,
      callbacks=cbs,
      verbose=0,
    )
  if end_chunk < chunks:
    return None
  return start_chunk * preset.checkpoint_every, elapsed, selector


def _finalize(config, model, variant):
  """(plain model, sparsity report) of the trained model, checked finite and on target.

  Raises:
    RuntimeError: if training diverged or the achieved sparsity misses the target.
  """
  preset = config.preset
  if not all(np.isfinite(w).all() for w in model.get_weights()):
    raise RuntimeError(
      f"member {config.variant}/{config.k}: training diverged (non-finite "
      f"weights); lower the preset's learning_rate ({preset.learning_rate})"
    )
  final = pruning.finalize(model) if variant.pruned else model
  report = pruning.sparsity_report(final, variant.sparsity)
  if variant.pruned and not report["meets_target"]:
    raise RuntimeError(
      f"member {config.variant}/{config.k}: achieved sparsity "
      f"{report['prunable']:.4f} misses target {variant.sparsity}"
    )
  return final, report


def _accuracies(final, dataset):
  """(train accuracy, test accuracy) of the plain model, compiled without an optimizer."""
  keras = keras2.keras()
  final.compile(
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"]
  )
  train_acc = final.evaluate(inputs.eval_stream(dataset, "train"), verbose=0)[1]
  test_acc = final.evaluate(inputs.eval_stream(dataset, dataset.spec.eval_split), verbose=0)[1]
  return train_acc, test_acc


def _metadata(
  config,
  dataset,
  variant,
  steps,
  resumed_from_step,
  report,
  train_acc,
  test_acc,
  elapsed,
  model_sha256,
):
  """The trained member's `metadata.json` dict (docs/artifacts/members.md).

  `elapsed` is called for the wall time of every run so far (`_train_chunks`).
  """
  preset = config.preset
  return {
    "schema": member_metadata.SCHEMA,
    "dataset": config.dataset,
    "dataset_options": dict(dataset.spec.options),
    "model": config.model,
    "model_options": dict(config.model_options),
    "variant": variant.name,
    "k": int(config.k),
    "seed": int(config.seed),
    "population_seed": int(config.population_seed),
    "preset": preset.to_json(),
    "precision_policy": member_config.precision_policy(preset),
    "gpus": gpu.describe(),
    "steps": steps,
    "resumed_from_step": int(resumed_from_step),
    "sparsity": report,
    "train_accuracy": float(train_acc),
    "test_accuracy": float(test_acc),
    "eval_split": dataset.spec.eval_split,
    "wall_time_s": round(elapsed(), 3),
    "versions": member_files.versions(),
    # What decides CPU float results (tf_forget/compat/cpu_kernels.py): the same config gives
    # the same weights when these match; stages after training do not depend on them.
    "machine": cpu_kernels.describe(),
    # Lineage: the bytes of model.keras and what they are a function of.
    "model_sha256": model_sha256,
    "inputs": config.inputs(),
  }
