"""Gradual magnitude pruning with tfmot (Zhu & Gupta 2017; 000 §2.4, appendix A-B;
docs/spec.md §2.2, §2.6).

`wrap` puts tfmot's `PruneLowMagnitude` wrapper around every layer with a prunable kernel (conv
and dense, docs/spec.md §1.4) with a `PolynomialDecay(initial_sparsity=0, final_sparsity=t,
begin_step, end_step, frequency)` schedule (power 3, Zhu & Gupta's cubic ramp).

What tfmot 0.8.1's wrapper does (read from its source, pinned by tests/train/pruning_test.py),
as docs/spec.md §2.6 asks:
  * Each *training* forward pass of a wrapped layer, in order: increments the layer's
    `pruning_step` (so step s is the s-th training batch, 1-based); if s is in
    [begin, end] and (s - begin) % frequency == 0, recomputes the mask from the *current*
    weights (keep the round(n·(1 - sparsity(s))) largest |w|, at least 1); then assigns
    `w ← w · mask` to the variable; then runs the layer.
  * The optimiser then updates all weights, masked ones included: removed weights "continue
    to receive gradient updates" (000 appendix B) — for one step, because the next forward pass
    zeroes them again. At a later mask update the magnitude ranking is computed on those
    freshly updated values, so a masked weight whose single-step update is large enough CAN
    re-enter the mask (tests demonstrate it). After `end_step` the mask is frozen.
  * `strip_pruning` returns the inner layers without applying the mask, and the variables hold
    the last optimiser update: `finalize` therefore applies the masks once more before
    stripping, and `sparsity_report` checks the result meets t.

Performance: tfmot's `prune_low_magnitude(model)` wraps *every* layer — ReLU, Add,
BatchNorm, pooling — and each wrapper adds a step increment, an assertion and a conditional to
every training step. Wrapping only the layers that have prunable weights (through tfmot's own
`PruningPolicy` hook) prunes exactly the same weights with the same masks at the same steps;
benchmarks/pruning_step_bench.py measures what it saves.
"""

import numpy as np

from tf_forget.compat import keras2


def _prunable_types():
  keras = keras2.keras()
  layers = keras.layers
  return (
    layers.Conv1D,
    layers.Conv2D,
    layers.Conv3D,
    layers.DepthwiseConv2D,
    layers.SeparableConv2D,
    layers.Conv2DTranspose,
    layers.Dense,
  )


def is_prunable(layer):
  """Whether `layer` has a kernel that the audit prunes (conv and dense kernels,
  docs/spec.md §1.4)."""
  return isinstance(layer, _prunable_types())


def _kernel_names(layer):
  if isinstance(layer, keras2.keras().layers.DepthwiseConv2D):
    return ("depthwise_kernel",)
  if isinstance(layer, keras2.keras().layers.SeparableConv2D):
    return ("depthwise_kernel", "pointwise_kernel")
  return ("kernel",)


def prunable_kernels(model):
  """(layer name, kernel variable) for every prunable kernel of a plain or stripped model."""
  out = []
  for layer in model.layers:
    inner = getattr(layer, "layer", layer)
    if is_prunable(inner):
      for name in _kernel_names(inner):
        out.append(
          (
            inner.name if len(_kernel_names(inner)) == 1 else f"{inner.name}/{name}",
            getattr(inner, name),
          )
        )
  return out


def _registry_supports(layer):
  """Whether tfmot's `PruneRegistry` knows `layer` (what `prune_low_magnitude` wraps)."""
  from tensorflow_model_optimization.python.core.sparsity.keras import prune_registry

  return prune_registry.PruneRegistry.supports(layer)


def _policy(wrap_all_layers):
  """A tfmot `PruningPolicy`: only layers with prunable kernels, or every supported layer."""
  tfmot = keras2.tfmot()

  class Policy(tfmot.sparsity.keras.PruningPolicy):
    """Wraps conv / dense layers only (or, as tfmot's default, every supported layer)."""

    def allow_pruning(self, layer):
      return _registry_supports(layer) if wrap_all_layers else is_prunable(layer)

    def ensure_model_supports_pruning(self, model):
      if not isinstance(model, keras2.keras().Model) or not model._is_graph_network:
        raise ValueError("pruning needs a functional or Sequential tf_keras model")

  return Policy()


def schedule(target_sparsity, begin_step, end_step, frequency):
  """tfmot's `PolynomialDecay` from 0 to `target_sparsity` (Zhu & Gupta's cubic schedule)."""
  tfmot = keras2.tfmot()
  return tfmot.sparsity.keras.PolynomialDecay(
    initial_sparsity=0.0,
    final_sparsity=float(target_sparsity),
    begin_step=int(begin_step),
    end_step=int(end_step),
    frequency=int(frequency),
    power=3,
  )


def wrap(model, target_sparsity, begin_step, end_step, frequency, wrap_all_layers=False):
  """Wraps `model` for gradual magnitude pruning to `target_sparsity`.

  Args:
    model: a functional tf_keras model.
    target_sparsity: final fraction t of zeros in every prunable kernel.
    begin_step, end_step, frequency: the schedule, in training steps (docs/spec.md §2.2).
    wrap_all_layers: wrap every layer tfmot's registry supports, as `prune_low_magnitude(model)`
      does by default (the benchmark's baseline; the masks are the same either way). Layers
      the registry does not know (e.g. `Rescaling`) are left plain either way.

  Returns:
    The wrapped model (train it with the callbacks from `callbacks()`).
  """
  tfmot = keras2.tfmot()
  policy = _policy(wrap_all_layers)
  return tfmot.sparsity.keras.prune_low_magnitude(
    model,
    pruning_schedule=schedule(target_sparsity, begin_step, end_step, frequency),
    pruning_policy=policy,
  )


def callbacks():
  """The Keras callbacks pruning needs (tfmot's `UpdatePruningStep`)."""
  return [keras2.tfmot().sparsity.keras.UpdatePruningStep()]


def wrappers(model):
  """The tfmot pruning wrappers in `model`."""
  tfmot = keras2.tfmot()
  cls = (
    tfmot.sparsity.keras.PruneLowMagnitude
    if hasattr(tfmot.sparsity.keras, "PruneLowMagnitude")
    else None
  )
  if cls is None:
    from tensorflow_model_optimization.python.core.sparsity.keras import pruning_wrapper

    cls = pruning_wrapper.PruneLowMagnitude
  return [layer for layer in model.layers if isinstance(layer, cls)]


def finalize(model):
  """Applies the final masks to the weights and strips the pruning wrappers.

  Returns:
    The plain model whose prunable kernels hold exact zeros where the masks are 0.
  """
  for layer in wrappers(model):
    layer.pruning_obj.weight_mask_op()
  return keras2.tfmot().sparsity.keras.strip_pruning(model)


def sparsity_report(model, target):
  """Achieved sparsity of a plain (stripped) model (docs/spec.md §1.4).

  Args:
    model: a plain tf_keras model.
    target: the target fraction t (0 for dense).

  Returns:
    Dict with `target`, `prunable` (zeros / prunable kernel weights), `all_params` (zeros / all
    weights incl. biases and BatchNorm), `per_layer` {name: fraction}, `prunable_weights`,
    `all_weights`, and `meets_target`: every layer's fraction is within 1/n of t (tfmot keeps
    round(n·(1 - t)) weights of n).
  """
  per_layer, zeros, total, ok = {}, 0, 0, True
  for name, kernel in prunable_kernels(model):
    w = np.asarray(kernel.numpy())
    z = int(np.count_nonzero(w == 0))
    per_layer[name] = z / w.size
    zeros += z
    total += w.size
    if target > 0 and per_layer[name] < target - 1.0 / w.size - 1e-9:
      ok = False
  all_w = [np.asarray(v.numpy()) for v in model.weights]
  all_zeros = sum(int(np.count_nonzero(w == 0)) for w in all_w)
  all_total = sum(w.size for w in all_w)
  return {
    "target": float(target),
    "prunable": zeros / max(total, 1),
    "all_params": all_zeros / max(all_total, 1),
    "per_layer": per_layer,
    "prunable_weights": int(total),
    "all_weights": int(all_total),
    "meets_target": bool(ok),
  }
