"""One one-shot member: dense member k pruned after training, then fine-tuned.

`prune_member(config, run_dir)` makes `<run>/members/oneshot_<alg>_r<r>/<k>/` from the
finished dense member k of the same run (002 §3, §6.1; docs/spec.md §6.1-6.4):

1. load the parent's `model.keras` (it must be finished and current: `train.member_files.status`, or
   for the user's imported reference `train.imported_parent.member_status`);
2. hold out every `validation_every`-th training record for epoch selection (docs/spec.md §6.4,
   `epoch_selection.holdout`); the training records are the data set's train split, or the user's
   `--train` data (`tf_forget.data.train_view`, fed as the model takes it);
3. for GP / UP, read g, the parent's one gradient artifact (`gradient.ensure`: computed once
   per parent and protocol, then read by every GP and UP member of that parent at every ratio;
   docs/spec.md §6.2 "the same g for GP and UP"); MP and RP compute no gradient;
4. prune one-shot with one global threshold and an exact count (`oneshot.prune`), ε = 2λ of
   the parent preset's l2 coefficient unless the protocol sets it;
5. fine-tune with the parent's loss and weight decay, SGD Nesterov over the protocol's phases,
   the mask re-applied after every optimizer step (`oneshot.FixedMasks`), and keep the weights
   of the epoch with the lowest validation *data* loss (mean cross-entropy, no regularization;
   epoch 0 = right after pruning is a candidate too, ties to the earlier epoch);
6. check every pruned weight is still zero and write `model.keras` + `metadata.json` with the
   member schema (docs/artifacts/members.md), so export, evaluation and the report read it
   like any member, plus `parent` {variant, k, model_sha256, weights_sha256} and `pruning`
   (algorithm, asked and achieved compression, g's artifact, sha256 and protocol, ε, the
   protocol, per-epoch validation losses, the chosen epoch).

The member is current only if its config (member identity + protocol), its parent's
`model.keras` sha256, for GP / UP the sha256 of the g it read and, with the user's `--train`
data, that data's fingerprint (`train_view.fingerprint`) are the ones it recorded: a retrained
(or re-imported) parent, another g or changed train data makes it stale (lineage). A killed
fine-tuning starts again from the parent (fine-tuning is short next to training; its epochs
are not checkpointed).
"""

import dataclasses
import json
import os
import time

import numpy as np
import tensorflow as tf

from tf_forget.artifacts import errors
from tf_forget.artifacts import filesystem
from tf_forget.artifacts import hashing
from tf_forget.artifacts import layout
from tf_forget.artifacts import lineage
from tf_forget.artifacts import member_metadata
from tf_forget.artifacts import names
from tf_forget.compat import gpu
from tf_forget.compat import keras2
from tf_forget.data import registry as data_registry
from tf_forget.data import train_view
from tf_forget.prune import gradient as gradient_lib
from tf_forget.prune import oneshot
from tf_forget.prune import oneshot_schedule
from tf_forget.train import epoch_selection
from tf_forget.train import imported
from tf_forget.train import imported_parent
from tf_forget.train import inputs
from tf_forget.train import member_config
from tf_forget.train import member_files
from tf_forget.train import pruning


class PruneMemberError(errors.Error):
  """A one-shot member that cannot be made: no finished parent, a mixed-precision parent."""


@dataclasses.dataclass(frozen=True)
class OneshotConfig:
  """Everything a one-shot member depends on besides its parent's weights (and g).

  Attributes:
    member: the member's `train.member_config.MemberConfig` (variant `oneshot_<alg>_r<r>`, its k,
      the population's preset and options; its `seed` seeds RP and fine-tuning; g's batches
      are the parent's, `gradient.seed`).
    protocol: the `protocol.OneshotSchedule`.
  """

  member: member_config.MemberConfig
  protocol: oneshot_schedule.OneshotSchedule

  @property
  def variant(self):
    return names.parse_trained(self.member.variant)

  @property
  def parent(self):
    """The parent's `MemberConfig` (dense, same k)."""
    return dataclasses.replace(self.member, variant=self.variant.parent)

  @property
  def needs_gradient(self):
    """Whether the member reads g (GP, UP; docs/spec.md §6.1)."""
    return gradient_lib.needs(self.variant.algorithm)

  def identity(self):
    return {
      "member": self.member.identity(),
      "oneshot": self.protocol.to_json(),
      "parent": {"variant": self.variant.parent, "k": int(self.member.k)},
    }

  def inputs(self, parent_sha256, gradient_sha256=None, train_data=None):
    """Lineage inputs: the config's hash, the parent's `model.keras` sha256, for GP / UP the
    sha256 of the g artifact read (docs/spec.md §6.2) and, with the user's `--train`
    data, its `train_view.fingerprint`."""
    out = {
      "config": hashing.sha256_json(json.loads(json.dumps(self.identity()))),
      "parent": parent_sha256,
    }
    if self.needs_gradient:
      out["gradient"] = gradient_sha256
    if train_data is not None:
      out["train_data"] = train_data
    return out


def parent_dir(run_dir, config):
  return layout.member_dir(run_dir, config.variant.parent, config.member.k)


def _gradient_sha256(run_dir, config, parent_sha):
  """(sha256 of the parent's current g, None) or (None, why g is not current)."""
  state = gradient_lib.status(run_dir, config.parent, config.protocol, parent_sha)
  if not state:
    return None, (
      f"its gradient g of {config.variant.parent}/{config.member.k} is not current ({state.reason})"
    )
  return hashing.file_sha256(gradient_lib.path(run_dir, config.parent, config.protocol)), None


def status(run_dir, config):
  """`lineage.Status` of the member: finished, from the current parent (and g), this config."""
  directory = layout.member_dir(run_dir, config.member.variant, config.member.k)
  if not filesystem.exists(os.path.join(directory, member_files.METADATA_FILE)):
    return lineage.MISSING
  parent_state = imported_parent.member_status(run_dir, config.parent)
  if not parent_state:
    return lineage.Status(
      False,
      f"its parent {config.variant.parent}/{config.member.k} is not "
      f"current ({parent_state.reason})",
    )
  parent_sha = member_files.read_metadata(parent_dir(run_dir, config))["model_sha256"]
  g_sha = None
  if config.needs_gradient:
    g_sha, reason = _gradient_sha256(run_dir, config, parent_sha)
    if reason:
      return lineage.Status(False, reason)
  model_path = os.path.join(directory, member_files.MODEL_FILE)
  train_data = train_view.fingerprint_of(config.member.dataset, config.member.dataset_options)
  return lineage.status(
    lambda: member_files.read_metadata(directory),
    config.inputs(parent_sha, g_sha, train_data),
    "pruned",
    extra=lambda meta: lineage.file_reason(
      model_path, meta.get("model_sha256"), "model.keras", "pruned"
    ),
  )


def _optimizer(protocol, steps_per_epoch, momentum):
  keras = keras2.keras()
  boundaries, values, step = [], [], 0
  for epochs, lr in protocol.phases:
    values.append(float(lr))
    step += epochs * steps_per_epoch
    boundaries.append(step)
  schedule = (
    keras.optimizers.schedules.PiecewiseConstantDecay(boundaries[:-1], values)
    if len(values) > 1
    else values[0]
  )
  return keras.optimizers.SGD(learning_rate=schedule, momentum=momentum, nesterov=True)


def _check_masks(model, masks, exclude_classifier):
  """Raises RuntimeError if a pruned weight is not zero."""
  for name, variable in oneshot.kernels(model, exclude_classifier).items():
    revived = int(np.count_nonzero(variable.numpy()[~masks[name]]))
    if revived:
      raise RuntimeError(f"fine-tuning revived {revived} pruned weights of {name}")


def _finished_parent(run_dir, config):
  """The parent's metadata; PruneMemberError if it is not finished, current and float32."""
  first = (
    "import the reference first"
    if config.parent.model == imported.MODEL
    else "train the dense population first"
  )
  return member_files.finished_parent(
    parent_dir(run_dir, config),
    imported_parent.member_status(run_dir, config.parent),
    f"{config.member.variant}/{config.member.k}",
    f"{config.variant.parent}/{config.member.k}",
    PruneMemberError,
    first,
    "one-shot pruning",
  )


def prune_member(config, run_dir, log=None):
  """Makes (or reuses) one one-shot member.

  GP and UP read their parent's one g artifact (`gradient.ensure`, docs/spec.md §6.2),
  computing it first if it is not current; a g redone with the bytes the member recorded
  (a garbage file rewritten) leaves the member current.

  Args:
    config: a `OneshotConfig`.
    run_dir: the run directory holding the parent.
    log: optional callable taking a progress string (and `redo gradient` lines).

  Returns:
    The member's metadata dict.

  Raises:
    PruneMemberError: the parent is not finished or trained under mixed precision.
    scores.PruneError: a compression that cannot be met.
    errors.WriteError: the member (or g) cannot be written.
  """
  gpu.configure()
  directory = layout.member_dir(run_dir, config.member.variant, config.member.k)
  if status(run_dir, config):
    return member_files.read_metadata(directory)
  parent_meta = _finished_parent(run_dir, config)
  grad = None
  if config.needs_gradient:
    grad = gradient_lib.ensure(run_dir, config.parent, config.protocol, log)
    if status(run_dir, config):
      return member_files.read_metadata(directory)
  filesystem.remove(os.path.join(directory, member_files.METADATA_FILE))
  return _make(config, run_dir, parent_meta, grad, log)


def _finetune(model, config, dataset, train_recs, n_train, masks, best, log):
  """Fine-tunes `model` with its masks held fixed, `best` selecting the epoch
  (docs/spec.md §6.4)."""
  keras = keras2.keras()
  member, proto = config.member, config.protocol
  steps_per_epoch = n_train // proto.batch_size
  if steps_per_epoch < 1:
    raise PruneMemberError(
      f"{n_train} fine-tuning examples are fewer than the batch size {proto.batch_size}"
    )
  model.compile(
    optimizer=_optimizer(proto, steps_per_epoch, proto.momentum),
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    metrics=["accuracy"],
  )
  stream = inputs.train_stream(
    dataset,
    member.preset,
    member.seed,
    records=train_recs,
    num_examples=n_train,
    batch_size=proto.batch_size,
  )

  class _Log(keras.callbacks.Callback):
    def on_epoch_end(self, epoch, logs=None):
      if log:
        log(
          f"    epoch {epoch + 1}/{proto.epochs} loss {(logs or {}).get('loss', 0):.4f} "
          f"val data loss {best.losses[-1]:.4f}"
        )

  model.fit(
    stream,
    epochs=proto.epochs,
    steps_per_epoch=steps_per_epoch,
    verbose=0,
    callbacks=[oneshot.FixedMasks(masks, proto.exclude_classifier), best, _Log()],
  )
  model.set_weights(best.best_weights)
  if not all(np.isfinite(w).all() for w in model.get_weights()):
    raise RuntimeError(f"member {member.variant}/{member.k}: fine-tuning diverged")
  _check_masks(model, masks, proto.exclude_classifier)
  return int(model.optimizer.iterations.numpy())


def _pruning_record(config, comp, pruned_count, eps, grad, pruned_test_acc, split, best, dataset):
  """The member metadata's `pruning` dict (docs/artifacts/members.md)."""
  variant, proto = config.variant, config.protocol
  n_train, n_val = split
  data = {"data": dataset.describe()} if isinstance(dataset, train_view.TrainView) else {}
  return {
    "method": names.ONESHOT,
    "algorithm": variant.algorithm,
    "asked": {"ratio": variant.ratio, "fraction": variant.fraction},
    "compression": comp.to_json(),
    "ratio_over": proto.ratio_over,
    "exclude_classifier": proto.exclude_classifier,
    "pruned_weights": pruned_count,
    "eps": eps if variant.algorithm == "up" else None,
    "up_formula": proto.up_formula if variant.algorithm == "up" else None,
    "gradient": grad.record() if grad is not None else None,
    "rp_seed": int(config.member.seed) if variant.algorithm == "rp" else None,
    "pruned_test_accuracy": pruned_test_acc,
    "finetune": {
      "protocol": proto.to_json(),
      "train_examples": int(n_train),
      "validation_examples": int(n_val),
      "validation": f"every {proto.validation_every}th train record "
      "(held out of fine-tuning, seen by the parent)",
      "validation_data_loss": [round(x, 6) for x in best.losses],
      "best_epoch": int(best.best_epoch),
      **data,
    },
  }


def _make(config, run_dir, parent_meta, grad, log):
  """Prunes the parent, fine-tunes, checks and writes the member; returns its metadata."""
  keras = keras2.keras()
  t0 = time.time()
  member, proto, variant = config.member, config.protocol, config.variant
  directory = layout.member_dir(run_dir, member.variant, member.k)
  dataset = train_view.of(data_registry.get(member.dataset, **dict(member.dataset_options)))
  keras.backend.experimental.enable_tf_random_generator()
  keras.utils.set_random_seed(member.seed)
  tf.config.experimental.enable_op_determinism()

  model = member_files.load_model(parent_dir(run_dir, config))
  parent_weights = hashing.arrays_sha256((w.name, w.numpy()) for w in model.weights)
  train_recs, val_recs, n_train, n_val = epoch_selection.holdout(dataset, proto.validation_every)
  val_batches = epoch_selection.batches(dataset, val_recs)
  eps = proto.epsilon(member.preset.weight_decay)
  masks, comp = oneshot.prune(
    model,
    variant.algorithm,
    ratio=variant.ratio,
    fraction=variant.fraction,
    eps=eps,
    seed=member.seed,
    up_formula=proto.up_formula,
    exclude_classifier=proto.exclude_classifier,
    ratio_over=proto.ratio_over,
    grads=grad.grads if grad is not None else None,
  )
  test_stream = inputs.eval_stream(dataset, dataset.spec.eval_split)
  model.compile(
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"]
  )
  pruned_test_acc = float(model.evaluate(test_stream, verbose=0)[1])
  best = epoch_selection.BestEpoch(val_batches)
  steps = _finetune(model, config, dataset, train_recs, n_train, masks, best, log)
  pruned_count = int(sum(int((~m).sum()) for m in masks.values()))
  if pruned_count != comp.pruned:
    raise RuntimeError(f"pruned {pruned_count} weights, the compression asks {comp.pruned}")
  # One global threshold: layers differ, so the per-layer check of gradual pruning does not
  # apply; the exact global count (checked above) and the zeros (`_check_masks`) do.
  report = dict(
    pruning.sparsity_report(model, 0.0),
    target=comp.achieved_fraction,
    target_over=proto.ratio_over,
    meets_target=True,
    global_threshold=True,
  )
  model.compile(
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"]
  )  # saved without the fine-tuning optimizer, as members are
  train_acc = float(model.evaluate(inputs.eval_stream(dataset, "train"), verbose=0)[1])
  test_acc = float(model.evaluate(test_stream, verbose=0)[1])
  filesystem.makedirs(directory)
  model_sha256 = member_files.save_model(model, os.path.join(directory, member_files.MODEL_FILE))
  metadata = member_files.derived_metadata(
    member,
    dataset,
    steps=steps,
    resumed_from_step=0,
    sparsity=report,
    train_accuracy=train_acc,
    test_accuracy=test_acc,
    wall_time_s=round(time.time() - t0, 3),
    parent={
      "variant": variant.parent,
      "k": int(member.k),
      "model_sha256": parent_meta["model_sha256"],
      "weights_sha256": parent_weights,
      "test_accuracy": parent_meta.get("test_accuracy"),
      **({"reference": parent_meta["reference"]} if "reference" in parent_meta else {}),
    },
    pruning=_pruning_record(
      config, comp, pruned_count, eps, grad, pruned_test_acc, (n_train, n_val), best, dataset
    ),
    model_sha256=model_sha256,
    inputs=config.inputs(
      parent_meta["model_sha256"], grad.sha256 if grad else None, train_view.fingerprint(dataset)
    ),
  )
  member_metadata.write(os.path.join(directory, member_files.METADATA_FILE), metadata)
  return member_files.read_metadata(directory)
