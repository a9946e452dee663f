"""One-shot pruning of a trained Keras model, and fine-tuning with its masks held fixed.

Pruning after training (002 §3, docs/spec.md §6.1-6.4), the TensorFlow side of
`tf_forget.prune.scores`:

* `kernels(model)` — the prunable kernels (conv and dense, the same set the gradual-pruning path
  prunes: `tf_forget.train.pruning.prunable_kernels`), in layer order, optionally without the
  classifier (002's reference excludes it; docs/spec.md §6.3 `exclude_classifier`).
* `mean_gradient(model, batches, num_batches)` — g, the mean over `num_batches` training batches
  of the gradient of the **data loss** (mean sparse cross-entropy of the logits; the model's
  regularization losses are not added) with respect to those kernels, computed with the model
  in inference mode (`training=False`: BatchNorm uses and does not update its moving
  statistics; dropout off) — docs/spec.md §6.2.
* `prune(model, algorithm, ratio=…)` — scores, one global threshold, exact count
  (`scores.masks`), masks applied to the weights; returns the masks and the `Compression`.
* `FixedMasks` — a Keras callback that multiplies every kernel by its mask after every
  optimizer step (and before the first), so fine-tuning never revives a pruned weight
  (docs/spec.md §6.4: masks fixed after every optimizer step; tfmot's `ConstantSparsity` would
  recompute them).
"""

import numpy as np
import tensorflow as tf

from tf_forget.compat import keras2
from tf_forget.prune import scores
from tf_forget.train import pruning


def kernels(model, exclude_classifier=False):
  """{name: kernel variable} of the prunable kernels, in layer order.

  Args:
    model: a (plain or stripped) Keras model.
    exclude_classifier: leave out the last prunable layer (the classifier; docs/spec.md §6.3).

  Raises:
    scores.PruneError: the model has no prunable kernel (left).
  """
  pairs = pruning.prunable_kernels(model)
  if exclude_classifier:
    pairs = pairs[:-1]
  if not pairs:
    raise scores.PruneError(f"model {model.name!r} has no prunable kernel")
  return dict(pairs)


def mean_gradient(model, batches, num_batches=1, exclude_classifier=False):
  """g: the mean data-loss gradient over `num_batches` batches (docs/spec.md §6.2).

  Args:
    model: a Keras model whose outputs are logits `[B, classes]`.
    batches: iterable of (images, labels): float images `[B, H, W, C]` as the model takes them,
      int labels `[B]`.
    num_batches: how many batches to average (002's reference: 1 batch of 128).
    exclude_classifier: see `kernels`.

  Returns:
    {kernel name: float64 array of the kernel's shape}.

  Raises:
    scores.PruneError: fewer batches than `num_batches`, or a kernel without gradient.
  """
  variables = kernels(model, exclude_classifier)
  total = {name: np.zeros(v.shape, np.float64) for name, v in variables.items()}
  seen = 0
  for images, labels in batches:
    if seen == num_batches:
      break
    with tf.GradientTape() as tape:
      logits = model(tf.convert_to_tensor(images), training=False)
      loss = tf.reduce_mean(
        keras2.keras().losses.sparse_categorical_crossentropy(
          tf.convert_to_tensor(labels), logits, from_logits=True
        )
      )
    grads = tape.gradient(loss, list(variables.values()))
    for name, grad in zip(variables, grads):
      if grad is None:
        raise scores.PruneError(f"kernel {name} gets no gradient from the loss")
      total[name] += grad.numpy().astype(np.float64)
    seen += 1
  if seen < num_batches:
    raise scores.PruneError(f"asked for the gradient over {num_batches} batches, got {seen}")
  return {name: t / seen for name, t in total.items()}


def apply_masks(model, masks, exclude_classifier=False):
  """Multiplies every prunable kernel by its mask ({name: bool array}, True = kept)."""
  for name, variable in kernels(model, exclude_classifier).items():
    variable.assign(variable * tf.constant(masks[name], variable.dtype))


def trainable_count(model):
  """Trainable parameters of `model` (kernels, biases, BatchNorm γ/β; not moving statistics)."""
  return int(sum(np.prod(v.shape) for v in model.trainable_weights))


def compression_of(
  model, ratio=None, fraction=None, ratio_over="prunable", exclude_classifier=False
):
  """The exact `scores.Compression` of a model, with r over prunable kernels or all parameters.

  With `ratio_over="all"` (002's reference, docs/spec.md §6.3) the kept count is round(N / r) of all
  N trainable parameters and every removed one must be a prunable kernel weight; the returned
  compression then counts over all parameters (`total` = N).

  Raises:
    scores.PruneError: a compression that cannot be met by pruning the prunable kernels.
  """
  prunable = sum(int(np.prod(v.shape)) for v in kernels(model, exclude_classifier).values())
  if ratio_over == "prunable":
    return scores.compression(prunable, ratio=ratio, fraction=fraction)
  if ratio_over != "all":
    raise scores.PruneError(f"ratio_over must be 'prunable' or 'all', got {ratio_over!r}")
  comp = scores.compression(trainable_count(model), ratio=ratio, fraction=fraction)
  if comp.pruned > prunable:
    raise scores.PruneError(
      f"ratio {comp.ratio:g} over all {comp.total} parameters removes {comp.pruned}, more than "
      f"the {prunable} prunable kernel weights: it cannot be met"
    )
  return comp


def prune(
  model,
  algorithm,
  ratio=None,
  fraction=None,
  batches=None,
  num_batches=1,
  eps=0.0,
  seed=0,
  up_formula="code",
  exclude_classifier=False,
  ratio_over="prunable",
  grads=None,
):
  """Prunes `model` in place, one-shot, with one global threshold and an exact count.

  Args:
    model: the trained parent (a copy: it is changed in place).
    algorithm: "mp", "gp", "up" or "rp" (`names.ONESHOT_ALGORITHMS`).
    ratio, fraction: the compression (`scores.compression`), over the prunable kernels.
    batches, num_batches: training batches for g (GP, UP).
    eps: the parent's weight decay ε (UP).
    seed: RP's seed.
    up_formula: see `scores.unified`.
    exclude_classifier: see `kernels`.
    ratio_over: "prunable" or "all" (`compression_of`).
    grads: g given, {kernel name: array} over (at least) the pruned kernels, e.g. the parent's
      one g artifact that every GP and UP member reads (`gradient.ensure`; docs/spec.md §6.2);
      then `batches` is not used.

  Returns:
    (masks {name: bool array}, `scores.Compression`).

  Raises:
    scores.PruneError: a bad algorithm, compression or gradient input (one line).
  """
  variables = kernels(model, exclude_classifier)
  weights = {name: v.numpy() for name, v in variables.items()}
  comp = compression_of(model, ratio, fraction, ratio_over, exclude_classifier)
  if algorithm not in ("gp", "up"):
    grads = None
  elif grads is not None:
    grads = {name: grads[name] for name in weights if name in grads}
  elif batches is None:
    raise scores.PruneError(f"{algorithm.upper()} needs training batches for its gradient")
  else:
    grads = mean_gradient(model, batches, num_batches, exclude_classifier)
  masks = scores.masks(
    algorithm, weights, comp.pruned, grads=grads, eps=eps, seed=seed, up_formula=up_formula
  )
  apply_masks(model, masks, exclude_classifier)
  return masks, comp


class FixedMasks(keras2.keras().callbacks.Callback):
  """Holds pruned weights at zero: kernel ← kernel · mask before training and after every batch.

  A batch's callback runs after its optimizer step, so every step starts from masked weights
  (train with `steps_per_execution=1`, the default).
  """

  def __init__(self, masks, exclude_classifier=False):
    super().__init__()
    self.masks = masks
    self.exclude_classifier = exclude_classifier

  def _apply(self):
    apply_masks(self.model, self.masks, self.exclude_classifier)

  def on_train_begin(self, logs=None):
    self._apply()

  def on_train_batch_end(self, batch, logs=None):
    self._apply()
