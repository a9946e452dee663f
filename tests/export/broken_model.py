"""A tiny Keras model whose full int8 file breaks examples because of ONE layer.

The model is trained on structured 8x8 images, then one layer is broken for int8 only: hidden
unit 0 is made dead (kernel column 0, bias -1: it is 0 for every input), and the "bad" Dense
layer gets a huge weight from that dead unit into `OUTLIER_CHANNELS` of its 32 output channels.
The float model computes exactly the same function, but each of those channels' per-channel
int8 weight scale is set by the outlier, so its other weights round to 0 in a full int8 file.
"""

import re

import numpy as np

from tf_forget.compat import keras2

NUM_CLASSES = 10
OUTLIER_CHANNELS = 16


def make_images(n, seed):
  """`n` 8x8x1 uint8 images: class c (= i % 10) adds a bright 3x3 block at its own place."""
  rng = np.random.default_rng(seed)
  labels = np.arange(n) % NUM_CLASSES
  images = rng.integers(0, 100, size=(n, 8, 8, 1))
  for c in range(NUM_CLASSES):
    row, col = divmod(c, 4)
    images[labels == c, 2 * row : 2 * row + 3, 2 * col : 2 * col + 3] += 120
  return images.clip(0, 255).astype(np.uint8), labels


def tiny_model():
  """Rescaling -> Conv(8, "conv") -> Flatten -> Dense(32, "hidden") -> Dense(32, "bad") ->
  Dense(10, "logits")."""
  keras = keras2.keras()
  keras.utils.set_random_seed(0)
  inp = keras.Input((8, 8, 1), name="image")
  x = keras.layers.Rescaling(1.0 / 255.0)(inp)
  x = keras.layers.Conv2D(8, 3, padding="same", activation="relu", name="conv")(x)
  x = keras.layers.Flatten()(x)
  x = keras.layers.Dense(32, activation="relu", name="hidden")(x)
  x = keras.layers.Dense(32, activation="relu", name="bad")(x)
  return keras.Model(inp, keras.layers.Dense(NUM_CLASSES, name="logits")(x))


def trained_model(images, labels, epochs=3):
  """`tiny_model` trained on (images, labels), with hidden unit 0 made dead."""
  keras = keras2.keras()
  model = tiny_model()
  model.compile(
    optimizer=keras.optimizers.Adam(0.01),
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
  )
  model.fit(images.astype(np.float32), labels, epochs=epochs, batch_size=32, verbose=0)
  kernel, bias = model.get_layer("hidden").get_weights()
  kernel[:, 0], bias[0] = 0.0, -1.0  # unit 0 is dead: ReLU(-1 + 0 * x) = 0 for every input
  model.get_layer("hidden").set_weights([kernel, bias])
  return model


def add_outlier(model):
  """Gives the "bad" layer a huge weight from the dead unit (same float function)."""
  kernel, bias = model.get_layer("bad").get_weights()
  kernel[0, :OUTLIER_CHANNELS] = 1000 * np.abs(kernel).max()  # weight from the dead unit
  model.get_layer("bad").set_weights([kernel, bias])
  return model


def is_bad(name):
  """Whether a tensor name is the bad layer's ("model/bad/...", or "model_3/bad/..." when
  other Keras models were built first in the process)."""
  return re.match(r"model(_\d+)?/bad/", str(name)) is not None
