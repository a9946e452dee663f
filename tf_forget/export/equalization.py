"""Cross-layer equalization of a float Keras model before int8 conversion.

Nagel et al. 2019, "Data-Free Quantization Through Weight Equalization and Bias Correction",
§4.1: for two layers joined through a positively homogeneous function f (ReLU, linear, max /
average pooling: f(x / s) = f(x) / s for s > 0), dividing output channel i of the first layer
(its weights and bias) by s_i and multiplying input channel i of the second by s_i leaves the
model's function unchanged. The choice

    s_i = sqrt(r1_i / r2_i),    r1_i = max |W1[..., out i]|,  r2_i = max |W2[..., in i, ...]|

gives both channels the range sqrt(r1_i r2_i) (their eq. 10), so a channel whose weights (and
hence activations) span far more than its neighbours' no longer sets the per-tensor int8 scale
of the tensor between the layers. Chains of layers are equalized pair by pair, repeated until no
scale moves more than `tolerance` (their §4.1: "iterate until convergence").

Pairs found (`pairs`): a Conv2D / DepthwiseConv2D / SeparableConv2D / Dense whose activation is
ReLU or linear, followed through layers that commute with a positive per-channel scale (max /
average pooling, global pooling, dropout, zero padding, a plain ReLU, Flatten — which repeats
each channel at every position) by a Conv2D / DepthwiseConv2D / SeparableConv2D / Dense, each
output used by one layer only. A SeparableConv2D is also a pair inside itself (depthwise, then
pointwise, nothing between). Anything else (BatchNormalization, ReLU6, additions) ends a chain:
those layers are left as they are.

Numpy on the weights; tf_keras for the model (the clone has the same config and new weights).
"""

import dataclasses
from typing import List, Tuple

import numpy as np

# Layers between a pair's two layers that commute with a positive per-channel scale.
_PASS_THROUGH = (
  "MaxPooling2D",
  "AveragePooling2D",
  "GlobalAveragePooling2D",
  "GlobalMaxPooling2D",
  "Dropout",
  "ZeroPadding2D",
  "Flatten",
)
_WEIGHTED = ("Conv2D", "DepthwiseConv2D", "SeparableConv2D", "Dense")


class EqualizationError(ValueError):
  """A model that cannot be equalized (one line)."""


@dataclasses.dataclass(frozen=True)
class Pair:
  """Two weighted layers whose channels are rescaled together.

  Attributes:
    first, second: layer names (equal for a SeparableConv2D's inner pair).
    inner: the pair inside one SeparableConv2D (depthwise -> pointwise).
    repeat: positions per channel between them (a Flatten: H * W; else 1).
  """

  first: str
  second: str
  inner: bool = False
  repeat: int = 1


def _kind(layer):
  return type(layer).__name__


def _homogeneous_activation(layer):
  act = getattr(layer, "activation", None)
  return act is None or getattr(act, "__name__", "") in ("relu", "linear")


def _passes(layer):
  kind = _kind(layer)
  if kind in _PASS_THROUGH:
    return True
  if kind == "ReLU":
    cfg = layer.get_config()
    return (
      cfg.get("max_value") is None and not cfg.get("negative_slope") and not cfg.get("threshold")
    )
  if kind == "Activation":
    return _homogeneous_activation(layer)
  return False


def _consumers(layer):
  return [node.outbound_layer for node in layer.outbound_nodes]


def pairs(model) -> List[Pair]:
  """The pairs of `model` that equalization rescales, in layer order."""
  found = []
  for layer in model.layers:
    if _kind(layer) == "SeparableConv2D":
      found.append(Pair(layer.name, layer.name, inner=True))
    if _kind(layer) not in _WEIGHTED or not _homogeneous_activation(layer):
      continue
    current, repeat = layer, 1
    while True:
      after = _consumers(current)
      if len(after) != 1:
        break
      nxt = after[0]
      if _kind(nxt) in _WEIGHTED:
        found.append(Pair(layer.name, nxt.name, repeat=repeat))
        break
      if not _passes(nxt):
        break
      if _kind(nxt) == "Flatten":
        shape = nxt.input_shape
        repeat *= int(np.prod(shape[1:-1])) if len(shape) > 2 else 1
      current = nxt
  return found


def _out_view(kind, weights, inner):
  """(array whose last axis is the first layer's output channels, bias or None); views."""
  if inner:  # the SeparableConv2D's depthwise output channels
    dw = weights[0]
    return dw.reshape(dw.shape[:2] + (-1,)), None
  if kind == "SeparableConv2D":
    return weights[1], weights[2] if len(weights) > 2 else None
  if kind == "DepthwiseConv2D":
    dw = weights[0]
    return dw.reshape(dw.shape[:2] + (-1,)), weights[1] if len(weights) > 1 else None
  return weights[0], weights[1] if len(weights) > 1 else None


def _in_view(kind, weights, inner):
  """An array whose axis -2 (Dense: 0) is the second layer's input channels; a view."""
  if inner:
    return weights[1]  # pointwise [1, 1, C * mult, out]
  return weights[0]  # Conv2D / Dense kernel, depthwise kernel [kh, kw, C, mult]


def _in_axis(kind, inner):
  return 0 if kind == "Dense" and not inner else -2


def _ranges_in(array, axis, channels, repeat):
  moved = np.moveaxis(np.abs(array), axis, 0)
  per_row = moved.reshape(moved.shape[0], -1).max(axis=1)
  return per_row.reshape(-1, channels).max(axis=0) if repeat > 1 else per_row


def _scale_in(array, axis, scale, repeat):
  factors = np.tile(scale, repeat) if repeat > 1 else scale
  shape = [1] * array.ndim
  shape[axis] = -1
  array *= factors.reshape(shape)


def _step(pair, weights, kinds):
  """Equalizes one pair in place; returns its scales."""
  a_kind, b_kind = kinds[pair.first], kinds[pair.second]
  out, bias = _out_view(a_kind, weights[pair.first], pair.inner)
  inp = _in_view(b_kind, weights[pair.second], pair.inner)
  axis = _in_axis(b_kind, pair.inner)
  channels = out.shape[-1]
  r1 = np.abs(out).reshape(-1, channels).max(axis=0)
  r2 = _ranges_in(inp, axis, channels, pair.repeat)
  if r2.shape != r1.shape:
    raise EqualizationError(
      f"{pair.first} has {channels} output channels but {pair.second} takes {r2.shape[0]}"
    )
  ok = (r1 > 0) & (r2 > 0)
  scale = np.where(ok, np.sqrt(np.where(ok, r1, 1.0) / np.where(ok, r2, 1.0)), 1.0)
  out /= scale
  if bias is not None:
    bias /= scale
  _scale_in(inp, axis, scale, pair.repeat)
  return scale


def equalize(model, iterations=50, tolerance=1e-4) -> Tuple[object, dict]:
  """The equalized copy of a tf_keras `model` and what was done.

  Args:
    model: a built tf_keras Sequential or functional model.
    iterations: at most this many sweeps over the pairs.
    tolerance: stop when no scale of a sweep differs from 1 by more than this (relative).

  Raises:
    EqualizationError: not a tf_keras model.

  Returns:
    (model, record): a clone with the same config and rescaled weights (the original is
    untouched); record {"pairs": [{"first", "second", "inner", "channels", "max_scale",
    "min_scale"}] with the product of each pair's scales over the sweeps, "sweeps"}.
  """
  import tf_keras as keras

  if not isinstance(model, keras.Model):  # Keras 3 layers have no `outbound_nodes`
    raise EqualizationError(
      f"cross-layer equalization needs a tf_keras model, not a {type(model).__module__}."
      f"{type(model).__name__} (a Keras 3 or SavedModel reference): repair it with int16x8 "
      "or float<N>"
    )
  found = pairs(model)
  kinds = {layer.name: _kind(layer) for layer in model.layers}
  weights = {
    layer.name: [np.array(w, np.float64) for w in layer.get_weights()] for layer in model.layers
  }
  total = {p: None for p in found}
  sweeps = 0
  for sweeps in range(1, iterations + 1):
    moved = 0.0
    for pair in found:
      scale = _step(pair, weights, kinds)
      total[pair] = scale if total[pair] is None else total[pair] * scale
      moved = max(moved, float(np.max(np.abs(scale - 1.0))) if scale.size else 0.0)
    if moved < tolerance:
      break
  clone = keras.models.clone_model(model)
  for layer, original in zip(clone.layers, model.layers):
    layer.set_weights(
      [w.astype(v.dtype) for w, v in zip(weights[original.name], original.get_weights())]
    )
  record = {
    "sweeps": sweeps if found else 0,
    "pairs": [
      {
        "first": p.first,
        "second": p.second,
        "inner": p.inner,
        "channels": int(s.size),
        "max_scale": float(s.max()),
        "min_scale": float(s.min()),
      }
      for p, s in total.items()
      if s is not None
    ],
  }
  return clone, record
