"""Planted faults that make a full-int8 file forget, shared by the tests of why and repair.

`cnn` is an ordinary BN-free CNN (Conv2D -> pool -> SeparableConv2D x N -> GAP ->
Dense) on 8x8x1 raw pixels with its own `Rescaling`; `train` fits it on the digits. `plant`
sets one fault that keeps the float function (ReLU is positively homogeneous) while a plain
full-int8 file of the model breaks many examples:
  * "weight": the second SeparableConv's pointwise input row `channel` (default 5) x100 and
    its depthwise channel /100 — the pointwise op's per-channel weight scale is set by one
    row, the others keep a few levels;
  * "range": the first Conv2D's output channel `channel` (default 6) x100 and the first
    SeparableConv's depthwise channel /100 — the conv's output tensor, quantized per tensor,
    leaves the other channels a few levels.
Layers are found by type, so the helpers fit any model of that shape.
"""

import numpy as np

DEFAULT_CHANNEL = {"weight": 5, "range": 6}
FACTOR = 100.0


def cnn(keras, separable=2, filters=16, rescale=True, seed=0):
  """The CNN, uncompiled (`keras`: the tf_keras module)."""
  keras.utils.set_random_seed(seed)
  L = keras.layers
  layers = [keras.Input((8, 8, 1))] + ([L.Rescaling(1 / 255.0)] if rescale else [])
  layers += [L.Conv2D(filters, 3, activation="relu", padding="same"), L.MaxPooling2D()]
  layers += [
    L.SeparableConv2D(filters, 3, activation="relu", padding="same") for _ in range(separable)
  ]
  return keras.Sequential(layers + [L.GlobalAveragePooling2D(), L.Dense(10)])


def train(keras, model, images, labels, epochs=40):
  """`model` fitted on uint8 `images` (logits, sparse labels); returns it."""
  model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
  model.fit(np.asarray(images, np.float32), labels, epochs=epochs, verbose=0)
  return model


def _of_type(model, name):
  return [layer for layer in model.layers if type(layer).__name__ == name]


def plant(model, fault, channel=None):
  """Plants `fault` ("weight" or "range", module docstring) in `model` in place; returns it."""
  c = DEFAULT_CHANNEL[fault] if channel is None else channel
  separables = _of_type(model, "SeparableConv2D")
  if fault == "weight":
    depthwise, pointwise = separables[1].get_weights()[:2]
    pointwise[0, 0, c, :] *= FACTOR
    depthwise[:, :, c, :] /= FACTOR
    separables[1].set_weights([depthwise, pointwise] + separables[1].get_weights()[2:])
    return model
  conv = _of_type(model, "Conv2D")[0]
  w = conv.get_weights()
  w[0][..., c] *= FACTOR
  if len(w) > 1:
    w[1][c] *= FACTOR
  conv.set_weights(w)
  s = separables[0].get_weights()
  s[0][:, :, c, :] /= FACTOR
  separables[0].set_weights(s)
  return model
