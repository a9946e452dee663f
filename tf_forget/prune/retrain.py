"""One cycle of iterative prune-retrain: a member pruned further and retrained.

`retrain_member(config, run_dir)` makes `<run>/members/iter_<alg>_c<n>/<k>/` from member k of
its parent (003 Algorithm 1 lines 5-6; docs/spec.md §6.5):

1. load the parent's `model.keras` — the dense member for cycle 1, cycle n − 1 otherwise — which
   must be finished and current (its own parent chain included), and for n > 1 its
   `masks.npz` (what earlier cycles removed stays removed);
2. prune to the protocol's absolute keep ratio of cycle n (`structured.prune`: WT global |θ|,
   FT per-layer filter L1 norms, BN γ/β of removed filters zeroed);
3. retrain with the parent preset's full training schedule (`retrain_steps` = its `steps`
   unless the protocol says otherwise: 003 "we re-use the same learning rate schedule and
   retrain for the same amount of epochs"), optimizer, weight decay, augmentation and batch
   size, plus a linear LR warm-up of `warmup_epochs` epochs (003 appendix B), every masked
   entry re-zeroed after every optimizer step (`structured.HeldMasks`);
4. check every masked entry is zero and write `model.keras`, `masks.npz` (the algorithm masks:
   WT {layer: kernel-shaped bool}, FT {layer: bool per filter}) and `metadata.json` with the
   member schema plus `parent` {variant, k, model_sha256, test_accuracy} and `pruning`
   {method "iterative", algorithm, cycle, keep_ratio, kept / total prunable weights, the
   achieved prune ratio, filters kept per layer (FT), the test accuracy right after pruning,
   the retraining steps and warm-up}.

Retraining is checkpointed every `checkpoint_every` steps of the preset (`train.member`'s
machinery); a killed cycle resumes from its last checkpoint (the pruning is re-done from the
parent, deterministically, then the checkpoint restores the weights and optimizer). Lineage: the
member is current only if its config (member identity, protocol, cycle) and its parent's
`model.keras` sha256 are the recorded ones, so a retrained dense member makes every cycle after
it stale.
"""

import dataclasses
import json
import os
import time

import numpy as np
import tensorflow as tf

from tf_forget.artifacts import errors
from tf_forget.artifacts import fileio
from tf_forget.artifacts import filesystem
from tf_forget.artifacts import hashing
from tf_forget.artifacts import layout
from tf_forget.artifacts import lineage
from tf_forget.artifacts import member_metadata
from tf_forget.artifacts import names
from tf_forget.compat import gpu
from tf_forget.compat import keras2
from tf_forget.data import registry as data_registry
from tf_forget.prune import iterative_schedule
from tf_forget.prune import structured
from tf_forget.train import checkpoints
from tf_forget.train import inputs
from tf_forget.train import member as member_lib
from tf_forget.train import member_config
from tf_forget.train import member_files
from tf_forget.train import pruning
from tf_forget.train import schedule

MASKS_FILE = "masks.npz"
CHECKPOINT_DIR = member_lib.CHECKPOINT_DIR


class RetrainError(errors.Error):
  """A cycle that cannot be made: no finished parent, a mixed-precision parent, bad steps."""


@dataclasses.dataclass(frozen=True)
class RetrainConfig:
  """Everything a prune-retrain cycle depends on besides its parent's weights.

  Attributes:
    member: the member's `train.member_config.MemberConfig` (variant `iter_<alg>_c<n>`, its k, the
      population's preset and options; its `seed` seeds the retraining).
    protocol: the `iterative_schedule.IterativeSchedule`.
  """

  member: member_config.MemberConfig
  protocol: iterative_schedule.IterativeSchedule

  @property
  def variant(self):
    return names.parse_trained(self.member.variant)

  @property
  def keep_ratio(self):
    return self.protocol.keep_ratio(self.variant.cycle)

  def parent(self):
    """The parent's config: a `MemberConfig` (dense) or the previous cycle's `RetrainConfig`."""
    member = dataclasses.replace(self.member, variant=self.variant.parent)
    return member if self.variant.cycle == 1 else dataclasses.replace(self, member=member)

  def retrain_steps(self):
    return int(self.protocol.retrain_steps or self.member.preset.steps)

  def identity(self):
    return {
      "member": self.member.identity(),
      "iterative": self.protocol.to_json(),
      "cycle": int(self.variant.cycle),
      "keep_ratio": float(self.keep_ratio),
      "parent": {"variant": self.variant.parent, "k": int(self.member.k)},
    }

  def inputs(self, parent_sha256):
    """Lineage inputs: the config's hash and the parent's `model.keras` sha256."""
    return {
      "config": hashing.sha256_json(json.loads(json.dumps(self.identity()))),
      "parent": parent_sha256,
    }


def _dir(run_dir, member):
  return layout.member_dir(run_dir, member.variant, member.k)


def _status_of(run_dir, config):
  """`lineage.Status` of a dense parent (`MemberConfig`) or a cycle (`RetrainConfig`)."""
  if isinstance(config, RetrainConfig):
    return status(run_dir, config)
  return member_files.status(_dir(run_dir, config), config)


def status(run_dir, config):
  """`lineage.Status` of the cycle: finished, from the current parent chain, with this config."""
  directory = _dir(run_dir, config.member)
  if not filesystem.exists(os.path.join(directory, member_files.METADATA_FILE)):
    return lineage.MISSING
  parent = config.parent()
  parent_member = parent.member if isinstance(parent, RetrainConfig) else parent
  parent_state = _status_of(run_dir, parent)
  if not parent_state:
    return lineage.Status(
      False,
      f"its parent {parent_member.variant}/{parent_member.k} is not "
      f"current ({parent_state.reason})",
    )
  parent_sha = member_files.read_metadata(_dir(run_dir, parent_member))["model_sha256"]
  model_path = os.path.join(directory, member_files.MODEL_FILE)
  return lineage.status(
    lambda: member_files.read_metadata(directory),
    config.inputs(parent_sha),
    "retrained",
    extra=lambda meta: lineage.file_reason(
      model_path, meta.get("model_sha256"), "model.keras", "retrained"
    ),
  )


def read_masks(directory):
  """The algorithm masks of a cycle's `masks.npz` ({layer name: bool array})."""
  return {
    k: v.astype(bool)
    for k, v in fileio.read_npz(os.path.join(directory, MASKS_FILE), "pruning masks").items()
  }


def _warmup_steps(protocol, n_train, batch_size):
  return int(round(float(protocol.warmup_epochs) * max(1, n_train // batch_size)))


def _chunk(preset, steps):
  """Checkpoint chunk: the preset's `checkpoint_every` when it divides `steps`, else `steps`."""
  every = int(preset.checkpoint_every)
  return every if every and steps % every == 0 else steps


def _evaluate(model, stream):
  keras = keras2.keras()
  model.compile(
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"]
  )
  return float(model.evaluate(stream, verbose=0)[1])


def _prepare(config, run_dir):
  """(parent dir, parent metadata): checks the parent is finished, current and float32."""
  parent = config.parent()
  parent_member = parent.member if isinstance(parent, RetrainConfig) else parent
  p_dir = _dir(run_dir, parent_member)
  meta = member_files.finished_parent(
    p_dir,
    _status_of(run_dir, parent),
    f"{config.member.variant}/{config.member.k}",
    f"{parent_member.variant}/{parent_member.k}",
    RetrainError,
    "make the earlier cycles first",
    "prune-retrain",
  )
  return p_dir, meta


def retrain_member(config, run_dir, log=None, stop_after_chunks=None):
  """Makes (or reuses, or resumes) one prune-retrain cycle.

  Args:
    config: a `RetrainConfig`.
    run_dir: the run directory holding the parent.
    log: optional callable taking a progress string.
    stop_after_chunks: test hook: stop (as if killed) after this many checkpoint chunks.

  Returns:
    The member's metadata dict, or None if stopped early by `stop_after_chunks`.

  Raises:
    RetrainError: the parent is not finished or not float32.
    scores.PruneError: a keep ratio that cannot be met.
    errors.WriteError: the member cannot be written.
  """
  gpu.configure()
  directory = _dir(run_dir, config.member)
  if status(run_dir, config):
    return member_files.read_metadata(directory)
  p_dir, parent_meta = _prepare(config, run_dir)
  filesystem.remove(os.path.join(directory, member_files.METADATA_FILE))
  keras = keras2.keras()
  member = config.member
  dataset = data_registry.get(member.dataset, **dict(member.dataset_options))
  keras.backend.experimental.enable_tf_random_generator()
  keras.utils.set_random_seed(member.seed)
  tf.config.experimental.enable_op_determinism()

  model, masks, var_masks = _prune_parent(config, p_dir)
  test_stream = inputs.eval_stream(dataset, dataset.spec.eval_split)
  pruned_test_acc = _evaluate(model, test_stream)
  n_train = dataset.num_examples("train")
  optimizer, steps, warmup = _compile_for_retraining(config, model, n_train)
  ckpt_dir = os.path.join(directory, CHECKPOINT_DIR)
  retrained = _retrain_chunks(
    config, dataset, model, optimizer, var_masks, steps, ckpt_dir, log, stop_after_chunks
  )
  if retrained is None:
    return None
  resumed_from_step, elapsed = retrained
  zeros, total = _check_retrained(member, model, var_masks)
  done_steps = int(optimizer.iterations.numpy())
  train_acc = _evaluate(model, inputs.eval_stream(dataset, "train"))
  test_acc = _evaluate(model, test_stream)  # compiled without the optimizer: saved as members are
  retrain = {
    "protocol": config.protocol.to_json(),
    "steps": steps,
    "warmup_steps": warmup,
    "train_examples": int(n_train),
  }
  _write_member(
    config,
    directory,
    dataset,
    model,
    masks,
    parent_meta,
    elapsed,
    steps=done_steps,
    resumed_from_step=int(resumed_from_step),
    train_accuracy=train_acc,
    test_accuracy=test_acc,
    pruning_record=_pruning_record(config, masks, zeros, total, pruned_test_acc, retrain),
  )
  filesystem.rmtree(ckpt_dir)
  return member_files.read_metadata(directory)


def _prune_parent(config, p_dir):
  """(model, algorithm masks, variable masks): the parent pruned to the cycle's keep ratio."""
  variant = config.variant
  model = member_files.load_model(p_dir)
  previous = read_masks(p_dir) if variant.cycle > 1 else None
  masks, var_masks = structured.prune(
    model, variant.algorithm, config.keep_ratio, previous, config.protocol.exclude_classifier
  )
  return model, masks, var_masks


def _compile_for_retraining(config, model, n_train):
  """(optimizer, retraining steps, warm-up steps): the model compiled with the parent's schedule.

  Raises:
    RetrainError: a warm-up that does not fit in the retraining steps.
  """
  keras = keras2.keras()
  proto, preset = config.protocol, config.member.preset
  steps = config.retrain_steps()
  warmup = _warmup_steps(proto, n_train, preset.batch_size)
  if warmup >= steps:
    raise RetrainError(
      f"warm-up of {proto.warmup_epochs} epochs ({warmup} steps) does not fit "
      f"in {steps} retraining steps"
    )
  optimizer = schedule.optimizer(dataclasses.replace(preset, warmup_steps=warmup), steps=steps)
  model.compile(
    optimizer=optimizer,
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    metrics=["accuracy"],
  )
  return optimizer, steps, warmup


def _retrain_chunks(
  config, dataset, model, optimizer, var_masks, steps, ckpt_dir, log, stop_after_chunks
):
  """Retrains the chunks not yet checkpointed, masked entries re-zeroed after every step.

  Returns:
    (the step this run started from, a callable giving the wall time of every run so far), or
    None if stopped early by `stop_after_chunks`.
  """
  member = config.member
  preset = member.preset
  chunk = _chunk(preset, steps)
  manager, start_chunk = checkpoints.resume_or_start(model, optimizer, ckpt_dir)
  chunks = steps // chunk
  wall_before = checkpoints.read_wall(ckpt_dir)
  t0 = time.time()

  def elapsed():
    return wall_before + time.time() - t0

  def on_chunk(done, logs):
    checkpoints.write_wall(ckpt_dir, elapsed())
    if log:
      log(
        f"    step {done * chunk}/{steps} loss {logs.get('loss', float('nan')):.4f} "
        f"acc {logs.get('accuracy', float('nan')):.3f}"
      )

  stream = inputs.train_stream(dataset, preset, member.seed, start_step=start_chunk * chunk)
  end_chunk = chunks if stop_after_chunks is None else min(chunks, start_chunk + stop_after_chunks)
  if start_chunk < end_chunk:
    model.fit(
      stream,
      epochs=end_chunk,
      initial_epoch=start_chunk,
      steps_per_epoch=chunk,
      verbose=0,
      callbacks=[structured.HeldMasks(var_masks), checkpoints.Checkpointer(manager, on_chunk)],
    )
  if end_chunk < chunks:
    return None
  return start_chunk * chunk, elapsed


def _check_retrained(member, model, var_masks):
  """(zero, total) prunable kernel weights of the retrained model, checked finite and masked.

  Raises:
    RuntimeError: if retraining diverged.
  """
  structured.apply(model, var_masks)  # a restored checkpoint was saved after a masked step
  if not all(np.isfinite(w).all() for w in model.get_weights()):
    raise RuntimeError(f"member {member.variant}/{member.k}: retraining diverged")
  structured.check_zero(model, var_masks)
  return structured.kernel_sparsity(model)


def _pruning_record(config, masks, zeros, total, pruned_test_acc, retrain):
  """The `pruning` entry of the cycle's metadata."""
  variant, proto = config.variant, config.protocol
  kept_weights = total - zeros
  filters = (
    {name: [int(m.sum()), int(m.size)] for name, m in masks.items()}
    if variant.algorithm == "ft"
    else None
  )
  return {
    "method": names.ITERATIVE,
    "algorithm": variant.algorithm,
    "cycle": variant.cycle,
    "keep_ratio": float(config.keep_ratio),
    "kept_weights": int(kept_weights),
    "prunable_weights": int(total),
    "prune_ratio": zeros / total,
    "filters_kept": filters,
    "exclude_classifier": bool(proto.exclude_classifier and variant.algorithm == "wt"),
    "pruned_test_accuracy": pruned_test_acc,
    "retrain": retrain,
  }


def _write_member(
  config,
  directory,
  dataset,
  model,
  masks,
  parent_meta,
  elapsed,
  steps,
  resumed_from_step,
  train_accuracy,
  test_accuracy,
  pruning_record,
):
  """Writes the cycle's `model.keras`, `masks.npz` and, last, `metadata.json`."""
  member, variant = config.member, config.variant
  filesystem.makedirs(directory)
  model_sha256 = member_files.save_model(model, os.path.join(directory, member_files.MODEL_FILE))
  fileio.write_npz(os.path.join(directory, MASKS_FILE), **masks)
  report = dict(
    pruning.sparsity_report(model, 0.0),
    target=1.0 - config.keep_ratio,
    target_over="prunable",
    meets_target=True,
    global_threshold=variant.algorithm == "wt",
  )
  metadata = member_files.derived_metadata(
    member,
    dataset,
    steps=steps,
    resumed_from_step=resumed_from_step,
    sparsity=report,
    train_accuracy=train_accuracy,
    test_accuracy=test_accuracy,
    wall_time_s=round(elapsed(), 3),
    parent={
      "variant": variant.parent,
      "k": int(member.k),
      "model_sha256": parent_meta["model_sha256"],
      "test_accuracy": parent_meta.get("test_accuracy"),
    },
    pruning=pruning_record,
    model_sha256=model_sha256,
    inputs=config.inputs(parent_meta["model_sha256"]),
  )
  member_metadata.write(os.path.join(directory, member_files.METADATA_FILE), metadata)
