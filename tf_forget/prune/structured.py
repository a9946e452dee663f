"""Masks of 003's prune-retrain cycles: WT (weights) and FT (whole filters), held during retraining.

003 Table 1 and §3.1, docs/spec.md §6.5. Both are cumulative (Algorithm 1, line 5: prune r% of the
*remaining* parameters): a weight or filter pruned in an earlier cycle stays pruned, and each
cycle reaches an **absolute** keep ratio κ of the original network with an exact count (kept =
⌊κ·n + ½⌋, κ read as the decimal it is written as).

* WT, weight thresholding (Han et al. 2015; Renda et al. 2020): one global threshold on |θ| over
  every prunable kernel (conv and dense, `oneshot.kernels`; optionally without the classifier).
  Already-pruned weights score −1, so they are the first to go; ties go to the weight that comes
  first in layer order (`scores.global_masks`).
* FT, filter thresholding (Li et al. 2016; Renda et al. 2020): in every prunable layer except the
  classifier (whose outputs are the logits), the filters (conv output channels, dense units)
  with the smallest L1 norm ‖W_{:j}‖₁ of their kernel slice are removed, the same fraction κ in
  every layer ("a uniform prune ratio across layers", 003 §3.1; at least one filter is kept).
  A removed filter is zeroed whole: its kernel slice `kernel[..., j]`, its bias `bias[j]`, and —
  docs/spec.md §6.5 — the γ[j] and β[j] of the BatchNormalization layer that reads the layer's
  output directly, so the channel's output is exactly 0 after BN and ReLU (a BN whose input is a
  sum, as in pre-activation residual blocks, is not "behind" one filter and is left alone; the
  filter then just stops contributing to the sum). The consumers' weights that read a removed
  channel are not zeroed (they multiply a constant 0): the prune ratio counts the zeros in the
  kernels, so FT's ratio here is a lower bound of torchprune's, which also removes those input
  channels.

`variable_masks` turns either kind into {variable name: bool array} (True = kept) over kernels,
biases and BN γ/β; `HeldMasks` re-applies them after every optimizer step. Masks are saved with
each member (`masks.npz`, keyed by variable name) so the next cycle continues from them.
"""

import fractions

import numpy as np
import tensorflow as tf

from tf_forget.artifacts import names
from tf_forget.compat import keras2
from tf_forget.prune import oneshot
from tf_forget.prune import scores
from tf_forget.train import pruning


def kept_count(n, keep_ratio):
  """⌊κ·n + ½⌋ with κ the rational its decimal spelling names (0.85 → 17/20)."""
  keep = fractions.Fraction(repr(float(keep_ratio)))
  return int(keep * n + fractions.Fraction(1, 2))


def _check_keep(keep_ratio):
  if not 0.0 < float(keep_ratio) < 1.0:
    raise scores.PruneError(f"keep ratio must be in (0, 1), got {keep_ratio!r}")


def weight_masks(model, keep_ratio, previous=None, exclude_classifier=False):
  """WT masks {layer name: bool kernel-shaped array}: keep ⌊κ·n + ½⌋ of the n prunable weights.

  Args:
    model: a Keras model (plain, not wrapped).
    keep_ratio: absolute keep ratio κ in (0, 1) of the prunable kernels.
    previous: the previous cycle's masks (same keys), or None for the first cycle.
    exclude_classifier: leave the classifier's kernel out (then not pruned at all).

  Returns:
    {layer name: bool array}, True = kept.

  Raises:
    scores.PruneError: κ out of range, or one that keeps more than the previous cycle.
  """
  _check_keep(keep_ratio)
  variables = oneshot.kernels(model, exclude_classifier)
  total = sum(int(np.prod(v.shape)) for v in variables.values())
  kept = max(1, kept_count(total, keep_ratio))
  score = {}
  for name, v in variables.items():
    s = np.abs(v.numpy().astype(np.float64))
    if previous is not None:
      s[~previous[name]] = -1.0
    score[name] = s
  if previous is not None:
    before = int(sum(m.sum() for m in previous.values()))
    if kept > before:
      raise scores.PruneError(
        f"keep ratio {keep_ratio:g} keeps {kept} weights, more than the "
        f"{before} the previous cycle kept"
      )
  return scores.global_masks(score, total - kept)


def filter_layers(model):
  """The layers whose filters FT prunes: every prunable conv / dense layer but the last.

  Depthwise and separable convs are left out (their output channels are tied to their inputs).
  """
  keras = keras2.keras()
  plain = (keras.layers.Conv1D, keras.layers.Conv2D, keras.layers.Conv3D, keras.layers.Dense)
  layers = [getattr(l, "layer", l) for l in model.layers]
  layers = [l for l in layers if pruning.is_prunable(l)]
  excluded = (
    keras.layers.DepthwiseConv2D,
    keras.layers.SeparableConv2D,
    keras.layers.Conv2DTranspose,
  )
  return [l for l in layers[:-1] if isinstance(l, plain) and not isinstance(l, excluded)]


def filter_norms(layer):
  """L1 norm of each filter's kernel slice, float64 `[filters]` (003 Table 1: ‖W_{:j}‖₁)."""
  kernel = layer.kernel.numpy().astype(np.float64)
  return np.abs(kernel.reshape(-1, kernel.shape[-1])).sum(axis=0)


def filter_masks(model, keep_ratio, previous=None):
  """FT masks {layer name: bool `[filters]`}: in each layer keep ⌊κ·f + ½⌋ (≥ 1) of its f filters.

  Lowest L1 norm first; filters removed in earlier cycles first of all; ties to the lower index.

  Raises:
    scores.PruneError: κ out of range, or a model without a layer FT can prune.
  """
  _check_keep(keep_ratio)
  layers = filter_layers(model)
  if not layers:
    raise scores.PruneError(
      f"model {model.name!r} has no conv / dense layer before its "
      "classifier: filter thresholding has nothing to prune"
    )
  out = {}
  for layer in layers:
    norms = filter_norms(layer)
    if previous is not None:
      norms[~previous[layer.name]] = -1.0
    f = norms.shape[0]
    kept = max(1, kept_count(f, keep_ratio))
    if previous is not None:
      kept = min(kept, int(previous[layer.name].sum()))
    order = np.argsort(norms, kind="stable")
    mask = np.ones(f, bool)
    mask[order[: f - kept]] = False
    out[layer.name] = mask
  return out


def batch_norm_after(model, layer):
  """The BatchNormalization layer that reads `layer`'s output and nothing else, or None."""
  keras = keras2.keras()
  found = None
  for node in getattr(layer, "_outbound_nodes", []):
    consumer = node.outbound_layer
    inbound = node.inbound_layers
    inbound = inbound if isinstance(inbound, (list, tuple)) else [inbound]
    if isinstance(consumer, keras.layers.BatchNormalization) and list(inbound) == [layer]:
      found = consumer
  return found


def variable_masks(model, algorithm, masks, exclude_classifier=False):
  """{variable name: bool array of the variable's shape} of WT or FT masks (True = kept).

  WT: the kernels' masks. FT: per removed filter j of a layer, `kernel[..., j]`, `bias[j]` and
  the γ[j], β[j] of `batch_norm_after(layer)`.
  """
  if algorithm == "wt":
    return {v.name: masks[name] for name, v in oneshot.kernels(model, exclude_classifier).items()}
  out = {}
  for layer in filter_layers(model):
    keep = masks[layer.name]
    out[layer.kernel.name] = np.broadcast_to(keep, layer.kernel.shape).copy()
    if getattr(layer, "bias", None) is not None:
      out[layer.bias.name] = keep.copy()
    bn = batch_norm_after(model, layer)
    if bn is not None:
      for v in (bn.gamma, bn.beta):
        if v is not None:
          out[v.name] = keep.copy()
  return out


def apply(model, var_masks):
  """Multiplies every masked variable of `model` by its mask.

  Raises:
    KeyError: a mask names a variable the model does not have.
  """
  by_name = {v.name: v for v in model.weights}
  for name, mask in var_masks.items():
    v = by_name[name]
    v.assign(v * tf.constant(mask, v.dtype))


def check_zero(model, var_masks):
  """Raises RuntimeError if a masked-out entry of a variable is not zero."""
  by_name = {v.name: v for v in model.weights}
  for name, mask in var_masks.items():
    revived = int(np.count_nonzero(by_name[name].numpy()[~mask]))
    if revived:
      raise RuntimeError(f"retraining revived {revived} pruned entries of {name}")


class HeldMasks(keras2.keras().callbacks.Callback):
  """Holds masked entries at zero: applied before training and after every batch's step."""

  def __init__(self, var_masks):
    super().__init__()
    self.var_masks = var_masks

  def on_train_begin(self, logs=None):
    apply(self.model, self.var_masks)

  def on_train_batch_end(self, batch, logs=None):
    apply(self.model, self.var_masks)


def prune(model, algorithm, keep_ratio, previous=None, exclude_classifier=False):
  """One cycle's pruning, in place: (algorithm masks, variable masks).

  Args:
    model: the previous cycle's (or the dense parent's) model; changed in place.
    algorithm: "wt" or "ft".
    keep_ratio: the cycle's absolute keep ratio.
    previous: the previous cycle's algorithm masks (from its `masks.npz`), or None.
    exclude_classifier: WT only (FT never prunes the classifier).

  Raises:
    scores.PruneError: an unknown algorithm or a bad keep ratio.
  """
  if algorithm == "wt":
    masks = weight_masks(model, keep_ratio, previous, exclude_classifier)
  elif algorithm == "ft":
    masks = filter_masks(model, keep_ratio, previous)
  else:
    raise scores.PruneError(
      f"unknown iterative pruning algorithm {algorithm!r} (known: "
      f"{', '.join(names.ITERATIVE_ALGORITHMS)})"
    )
  var_masks = variable_masks(model, algorithm, masks, exclude_classifier)
  apply(model, var_masks)
  return masks, var_masks


def kernel_sparsity(model, exclude_classifier=False):
  """(zeros, total) over the prunable kernels (WT's and FT's prune ratio = zeros / total)."""
  variables = oneshot.kernels(model, exclude_classifier)
  zeros = sum(int(np.count_nonzero(v.numpy() == 0)) for v in variables.values())
  total = sum(int(np.prod(v.shape)) for v in variables.values())
  return zeros, total
