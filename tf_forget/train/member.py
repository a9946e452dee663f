"""One population member: (data set, model, variant, k) trained by a pure function of its config.

`train_member(config, member_dir)` trains from scratch (or resumes from the member's last
checkpoint), strips the pruning wrappers, checks the achieved sparsity and writes `model.keras`
then `metadata.json` atomically (docs/artifacts/members.md). The metadata records the sha256 of
the `model.keras` bytes (`model_sha256`) and of the member's config (`inputs.config`): a member
is finished only if both match (`status`); otherwise it is trained again, and the caller logs
why. A checkpoint or model that cannot be written (read-only directory, full disk) is an
`errors.WriteError` with one line, raised where it happens. Member k of each variant gets its
own seed, derived stably from (population seed, data set, model, variant, k) (SPEC §1.3); with
TensorFlow's op determinism on, the same config gives the same weights on the same machine and
stack, and a resumed member the same weights as an uninterrupted one. Across machines the CPU
kernels decide (`tf_forget.compat.cpu_kernels`, recorded as `machine` in the metadata).

GPUs (issue #15): `train_member` first turns on memory growth for every visible GPU
(`tf_forget.compat.gpu`, a no-op on CPU) and records them as `gpus`. A preset with
`mixed_precision` builds and trains its model under Keras' `mixed_float16` policy, set for the
model's building only and then restored (other members, later stages see the old policy); the
logits are cast to float32 by a last float32 linear `Activation` (losses and saved outputs stay
float32) and the policy is recorded as
`precision_policy` ("float32" otherwise).
"""

import dataclasses
import hashlib
import json
import os
import platform
import time
from typing import Mapping

import numpy as np
import tensorflow as tf

from tf_forget.artifacts import errors
from tf_forget.artifacts import fileio
from tf_forget.artifacts import hashing
from tf_forget.artifacts import layout
from tf_forget.artifacts import lineage
from tf_forget.artifacts import names
from tf_forget.artifacts import predictions
from tf_forget.compat import cpu_kernels
from tf_forget.compat import gpu
from tf_forget.compat import keras2
from tf_forget.data import registry as data_registry
from tf_forget.models import registry as model_registry
from tf_forget.train import checkpoints
from tf_forget.train import inputs
from tf_forget.train import presets
from tf_forget.train import pruning
from tf_forget.train import schedule

SCHEMA = "tf_forget.member/1"
MODEL_FILE = layout.MODEL_FILE
METADATA_FILE = layout.METADATA_FILE
CHECKPOINT_DIR = layout.CHECKPOINT_DIR


@dataclasses.dataclass(frozen=True)
class MemberConfig:
  """Everything a member's training depends on.

  Attributes:
    dataset: data registry name.
    model: model registry name.
    variant: `dense` or `prune_<t>`.
    k: member index (pairs members across variants, 000 eq. 3).
    preset: the training protocol.
    dataset_options: data builder options.
    model_options: model builder options.
    population_seed: base seed of the population (0 by default).
  """
  dataset: str
  model: str
  variant: str
  k: int
  preset: presets.Preset
  dataset_options: Mapping[str, object] = dataclasses.field(default_factory=dict)
  model_options: Mapping[str, object] = dataclasses.field(default_factory=dict)
  population_seed: int = 0

  @property
  def seed(self):
    """Stable 31-bit seed from (population seed, data set, model, variant, k) (SPEC §1.3)."""
    key = f"{self.population_seed}|{self.dataset}|{self.model}|{self.variant}|{self.k}"
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:4], "big") & 0x7FFFFFFF

  def identity(self):
    """What the member's weights are a function of (JSON-ready; hashed into `inputs.config`).

    The user's data records the content of its splits in its options (issue #35,
    `predictions.CONTENT`); a member trains on the train split only, so its identity holds that
    split's digest (`train_content`) and not the test split's. The `--train` data of one-shot
    pruning enters through `inputs.train_data` (`train_view.fingerprint`) instead.
    """
    out = {"dataset": self.dataset,
           "dataset_options": predictions.without_content(self.dataset_options),
           "model": self.model, "model_options": dict(self.model_options),
           "variant": self.variant, "k": int(self.k), "seed": int(self.seed),
           "population_seed": int(self.population_seed), "preset": self.preset.to_json()}
    train = dict(dict(self.dataset_options).get(predictions.CONTENT) or {}).get("train")
    if train is not None:
      out["train_content"] = train
    return out

  def inputs(self):
    """The lineage `inputs` of the member's metadata: {"config": sha256 of `identity`}."""
    return {"config": hashing.sha256_json(json.loads(json.dumps(self.identity())))}


member_dir = layout.member_dir


def read_metadata(directory):
  """A member's metadata dict; raises `errors.ReadError` if missing or not of `SCHEMA`."""
  path = os.path.join(directory, METADATA_FILE)
  meta = fileio.read_json(path, "member metadata")
  if not isinstance(meta, dict) or meta.get("schema") != SCHEMA:
    raise errors.ReadError(f"{path} is not a {SCHEMA} file")
  return meta


def status(directory, config=None):
  """`lineage.Status` of a member: finished, and its `model.keras` is the one it recorded.

  Finished means: `metadata.json` readable, `model.keras` present with the recorded sha256, and
  (if `config` is given) the same member config (`MemberConfig.inputs`).
  """
  if not fileio.exists(os.path.join(directory, METADATA_FILE)):
    return lineage.MISSING
  model_path = os.path.join(directory, MODEL_FILE)

  def model_matches(meta):
    return lineage.file_reason(model_path, meta.get("model_sha256"), "model.keras", "trained")

  return lineage.status(lambda: read_metadata(directory),
                        config.inputs() if config is not None else {}, "trained",
                        extra=model_matches)


def is_finished(directory, config=None):
  """Whether the member is finished and current (`status`)."""
  return bool(status(directory, config))


def versions():
  tfmot = keras2.tfmot()
  return {"tensorflow": tf.__version__, "tf_keras": keras2.keras().__version__,
          "tfmot": tfmot.__version__, "numpy": np.__version__,
          "python": platform.python_version()}


MIXED_POLICY = "mixed_float16"


def precision_policy(preset):
  """The Keras dtype policy a preset trains under: "mixed_float16" or "float32"."""
  return MIXED_POLICY if getattr(preset, "mixed_precision", False) else "float32"


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
  outputs = keras.layers.Activation("linear", dtype="float32", name="logits_float32")(
      model.output)
  return keras.Model(model.inputs, outputs, name=model.name)


def _build(config, dataset):
  """Model (wrapped for pruning if the variant is pruned) and its optimizer.

  With the preset's `mixed_precision`, the model is built and compiled under the
  `mixed_float16` global policy (compile wraps the optimizer in a `LossScaleOptimizer`, which
  is returned), and the previous global policy is restored before returning.
  """
  keras = keras2.keras()
  if precision_policy(config.preset) == "float32":
    return _build_model(config, dataset)
  previous = keras.mixed_precision.global_policy()
  keras.mixed_precision.set_global_policy(MIXED_POLICY)
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
  model = model_registry.get(config.model, input_shape=dataset.spec.image_shape,
                             num_classes=dataset.spec.num_classes, **model_options)
  if mixed:
    model = _float32_logits(model)
  if variant.pruned:
    model = pruning.wrap(model, variant.sparsity, *preset.pruning_schedule())
  optimizer = schedule.optimizer(preset)
  model.compile(optimizer=optimizer,
                loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                metrics=["accuracy"])
  return model, optimizer, variant


def train_member(config, directory, log=None, stop_after_chunks=None):
  """Trains (or resumes, or skips) one member and writes its artifacts.

  Args:
    config: a `MemberConfig`.
    directory: the member's directory (`member_dir(run, variant, k)`).
    log: optional callable taking a progress string.
    stop_after_chunks: test hook: stop (as if killed) after this many checkpoint chunks.

  Returns:
    The member's metadata dict, or None if stopped early by `stop_after_chunks`.

  Raises:
    RuntimeError: if training diverged or the achieved sparsity misses the target.
    errors.WriteError: a checkpoint, the model or the metadata cannot be written.
  """
  # Before anything touches a GPU: memory growth can only be set before initialization.
  gpu.configure()
  if is_finished(directory, config):
    return read_metadata(directory)
  # Not current (or not there): the old metadata goes first, so that a kill while retraining
  # never leaves metadata that describes another model.keras.
  fileio.remove(os.path.join(directory, METADATA_FILE))
  preset = config.preset
  if preset.steps % preset.checkpoint_every:
    raise presets.PresetError(f"steps={preset.steps} is not a multiple of "
                              f"checkpoint_every={preset.checkpoint_every}")
  dataset = data_registry.get(config.dataset, **dict(config.dataset_options))
  _seed(config.seed)
  model, optimizer, variant = _build(config, dataset)

  ckpt_dir = os.path.join(directory, CHECKPOINT_DIR)
  trained = _train_chunks(config, dataset, model, optimizer, variant, ckpt_dir, log,
                          stop_after_chunks)
  if trained is None:
    return None
  resumed_from_step, elapsed = trained
  final, report = _finalize(config, model, variant)
  train_acc, test_acc = _accuracies(final, dataset)
  model_sha256 = save_model(final, os.path.join(directory, MODEL_FILE))
  metadata = _metadata(config, dataset, variant, steps=int(optimizer.iterations.numpy()),
                       resumed_from_step=resumed_from_step, report=report,
                       train_acc=train_acc, test_acc=test_acc, elapsed=elapsed,
                       model_sha256=model_sha256)
  fileio.write_json(os.path.join(directory, METADATA_FILE), metadata)
  fileio.rmtree(ckpt_dir)
  return read_metadata(directory)


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

  Returns:
    (the step this run started from, a callable giving the wall time of every run so far), or
    None if stopped early by `stop_after_chunks`.
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
      log(f"    step {chunk * preset.checkpoint_every}/{preset.steps} "
          f"loss {logs.get('loss', float('nan')):.4f} acc {logs.get('accuracy', float('nan')):.3f}")

  stream = inputs.train_stream(dataset, preset, config.seed,
                               start_step=start_chunk * preset.checkpoint_every)
  end_chunk = chunks if stop_after_chunks is None else min(chunks, start_chunk + stop_after_chunks)
  cbs = [checkpoints.Checkpointer(manager, on_chunk)]
  if variant.pruned:
    cbs = pruning.callbacks() + cbs
  if start_chunk < end_chunk:
    model.fit(stream, epochs=end_chunk, initial_epoch=start_chunk,
              steps_per_epoch=preset.checkpoint_every, callbacks=cbs, verbose=0)
  if end_chunk < chunks:
    return None
  return start_chunk * preset.checkpoint_every, elapsed


def _finalize(config, model, variant):
  """(plain model, sparsity report) of the trained model, checked finite and on target.

  Raises:
    RuntimeError: if training diverged or the achieved sparsity misses the target.
  """
  preset = config.preset
  if not all(np.isfinite(w).all() for w in model.get_weights()):
    raise RuntimeError(f"member {config.variant}/{config.k}: training diverged (non-finite "
                       f"weights); lower the preset's learning_rate ({preset.learning_rate})")
  final = pruning.finalize(model) if variant.pruned else model
  report = pruning.sparsity_report(final, variant.sparsity)
  if variant.pruned and not report["meets_target"]:
    raise RuntimeError(f"member {config.variant}/{config.k}: achieved sparsity "
                       f"{report['prunable']:.4f} misses target {variant.sparsity}")
  return final, report


def _accuracies(final, dataset):
  """(train accuracy, test accuracy) of the plain model, compiled without an optimizer."""
  keras = keras2.keras()
  final.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                metrics=["accuracy"])
  train_acc = final.evaluate(inputs.eval_stream(dataset, "train"), verbose=0)[1]
  test_acc = final.evaluate(inputs.eval_stream(dataset, dataset.spec.eval_split), verbose=0)[1]
  return train_acc, test_acc


def _metadata(config, dataset, variant, steps, resumed_from_step, report, train_acc, test_acc,
              elapsed, model_sha256):
  """The trained member's `metadata.json` dict (docs/artifacts/members.md).

  `elapsed` is called for the wall time of every run so far (`_train_chunks`).
  """
  preset = config.preset
  return {
      "schema": SCHEMA, "dataset": config.dataset,
      "dataset_options": dict(dataset.spec.options), "model": config.model,
      "model_options": dict(config.model_options), "variant": variant.name,
      "k": int(config.k), "seed": int(config.seed),
      "population_seed": int(config.population_seed), "preset": preset.to_json(),
      "precision_policy": precision_policy(preset), "gpus": gpu.describe(),
      "steps": steps, "resumed_from_step": int(resumed_from_step), "sparsity": report,
      "train_accuracy": float(train_acc), "test_accuracy": float(test_acc),
      "eval_split": dataset.spec.eval_split, "wall_time_s": round(elapsed(), 3),
      "versions": versions(),
      # What decides CPU float results (tf_forget/compat/cpu_kernels.py): the same config gives
      # the same weights when these match; stages after training do not depend on them.
      "machine": cpu_kernels.describe(),
      # Lineage (issue #14): the bytes of model.keras and what they are a function of.
      "model_sha256": model_sha256, "inputs": config.inputs(),
  }


def derived_metadata(config, dataset, **fields):
  """The member-schema metadata of a member made from another one (pruned after training).

  The keys every member shares — schema, data set and options, model and options, variant, k,
  seed, preset, precision policy (float32), GPUs, eval split, versions, machine — from
  `config` (a `MemberConfig`) and `dataset`, plus `fields` (steps, sparsity, accuracies,
  parent, pruning, model_sha256, inputs, ...).
  """
  return {
      "schema": SCHEMA, "dataset": config.dataset,
      "dataset_options": dict(dataset.spec.options), "model": config.model,
      "model_options": dict(config.model_options), "variant": config.variant,
      "k": int(config.k), "seed": int(config.seed),
      "population_seed": int(config.population_seed), "preset": config.preset.to_json(),
      "precision_policy": "float32", "gpus": gpu.describe(),
      "eval_split": dataset.spec.eval_split, "versions": versions(),
      "machine": cpu_kernels.describe(), **fields}


def finished_parent(directory, state, member_label, parent_label, error, first, needs):
  """The metadata of the parent a member is made from (pruned after training).

  Args:
    directory: the parent's member directory.
    state: the parent's `lineage.Status` (its own kind's: `status` of a trained member, or of
      the pruned member it is).
    member_label, parent_label: "<variant>/<k>" of the member being made and of its parent.
    error: the `errors.Error` subclass to raise.
    first: what to make first when the parent is not finished (the end of the message).
    needs: what needs a float32 parent ("one-shot pruning", "prune-retrain").

  Returns:
    The parent's metadata dict.

  Raises:
    error: the parent is not finished and current, or was not trained in float32.
  """
  if not state:
    raise error(f"{member_label}: parent {parent_label} is not finished ({state.reason}); "
                f"{first}")
  meta = read_metadata(directory)
  if meta.get("precision_policy", "float32") != "float32":
    raise error(f"parent {parent_label} was trained under {meta['precision_policy']}: {needs} "
                "needs float32")
  return meta


def save_model(model, path):
  """Saves a tf_keras model atomically (Keras needs the `.keras` suffix on the temp name).

  Returns:
    The sha256 of the written file.

  Raises:
    errors.WriteError: the file cannot be written (one line); no temporary file is left.
  """
  tmp = path[:-len(".keras")] + ".tmp.keras"
  try:
    try:
      model.save(tmp)  # Keras writes local and URL (gs://) paths through TF's file systems
      sha = hashing.file_sha256(tmp, memo=False)
    except (OSError, tf.errors.OpError) as e:
      raise errors.write_error(path, e) from e
    fileio.rename(tmp, path)
  except errors.WriteError:
    try:
      fileio.remove(tmp)
    except errors.WriteError:
      pass
    raise
  hashing.remember(path, sha)
  return sha


def trusts_model_code(meta):
  """Whether a member's metadata says it was imported, or pruned from a member imported, with
  `--trust_model_code` (`tf_forget.train.imported`): its model.keras may hold a `Lambda`."""
  for ref in (meta.get("reference"), (meta.get("parent") or {}).get("reference")):
    if isinstance(ref, dict) and ref.get("trust_model_code") is True:
      return True
  return False


def load_model(directory):
  """Loads a finished member's plain tf_keras model (Keras' safe mode off only for a member of
  a reference the user trusted, `trusts_model_code`)."""
  try:
    trusted = trusts_model_code(read_metadata(directory))
  except errors.ReadError:
    trusted = False
  return keras2.keras().models.load_model(os.path.join(directory, MODEL_FILE), compile=False,
                                          safe_mode=not trusted)
