"""Test fixtures: a synthetic separable data set and a tiny population run on disk.

The data set ("synthetic", 8x8x1 uint8, 4 classes) puts class c's bright 2x8 stripe at rows
2c..2c+1 plus uniform noise, so a tiny CNN separates it in a few seconds of training. Members
are written in the layout of docs/artifacts/members.md (model.keras + metadata.json).
"""

import functools
import json
import os

import numpy as np

from tf_forget.artifacts import member_metadata
from tf_forget.artifacts import names
from tf_forget.compat import keras2
from tf_forget.data import dataset_api

NUM_CLASSES = 4
IMAGE_SHAPE = (8, 8, 1)


def make_examples(n, seed, start_id=0):
  """`n` synthetic examples: labels cycle 0..3, images stripe + noise (uint8)."""
  rng = np.random.default_rng(seed)
  labels = np.arange(n, dtype=np.int64) % NUM_CLASSES
  images = rng.integers(0, 120, size=(n, *IMAGE_SHAPE)).astype(np.int64)
  for c in range(NUM_CLASSES):
    images[labels == c, 2 * c : 2 * c + 2, :, :] += 120
  return dataset_api.Examples(
    images=images.clip(0, 255).astype(np.uint8),
    labels=labels,
    ids=np.arange(start_id, start_id + n, dtype=np.int64),
  )


class SyntheticDataset(dataset_api.Dataset):
  """An in-memory registry-style data set (train 400, test 150 examples)."""

  def __init__(self, image_shape=IMAGE_SHAPE):
    super().__init__(
      dataset_api.DatasetSpec(
        name="synthetic",
        num_classes=NUM_CLASSES,
        image_shape=tuple(image_shape),
        splits=("train", "test"),
      )
    )
    self._splits = {"train": make_examples(400, 1), "test": make_examples(150, 2, 1000)}
    if tuple(image_shape) != IMAGE_SHAPE:  # for shape-mismatch tests
      for name, ex in self._splits.items():
        self._splits[name] = dataset_api.Examples(
          images=np.zeros((len(ex), *image_shape), np.uint8), labels=ex.labels, ids=ex.ids
        )

  def batches(self, split, batch_size):
    self.check_split(split)
    data = self._splits[split]
    for start in range(0, len(data), batch_size):
      yield data.take(slice(start, start + batch_size))


def hand_model():
  """Input 2x2x1 -> Flatten -> Dense(3) with integer weights set by hand."""
  keras = keras2.keras()
  inp = keras.Input((2, 2, 1), name="image")
  dense = keras.layers.Dense(3)
  model = keras.Model(inp, dense(keras.layers.Flatten()(inp)))
  kernel = np.array([[1, 0, 2], [0, 1, -1], [1, 1, 1], [-2, 0, 0.5]], np.float32)
  bias = np.array([0.5, -1, 0], np.float32)
  dense.set_weights([kernel, bias])
  return model


def tiny_cnn(seed=0, num_classes=NUM_CLASSES, input_shape=IMAGE_SHAPE):
  """Rescaling -> Conv(8) -> BN -> ReLU -> Conv(8) -> ReLU -> GAP... Dense(32) -> Dense(C)."""
  keras = keras2.keras()
  keras.utils.set_random_seed(seed)
  inp = keras.Input(input_shape, name="image")
  x = keras.layers.Rescaling(1.0 / 255.0)(inp)
  x = keras.layers.Conv2D(8, 3, padding="same")(x)
  x = keras.layers.BatchNormalization()(x)
  x = keras.layers.ReLU()(x)
  x = keras.layers.Flatten()(x)
  x = keras.layers.Dense(64, activation="relu")(x)
  out = keras.layers.Dense(num_classes)(x)
  return keras.Model(inp, out)


def train(model, dataset, epochs=3):
  keras = keras2.keras()
  data = dataset.load("train")
  model.compile(
    optimizer=keras.optimizers.Adam(0.01),
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
  )
  model.fit(data.images.astype(np.float32), data.labels, epochs=epochs, batch_size=32, verbose=0)
  return model


def prune(model, dataset, sparsity=0.75, epochs=1, examples=64):
  """Magnitude-prunes `model` with tfmot to `sparsity` (constant schedule) and strips it.

  The constant schedule masks at the first step, so a couple of steps on `examples` train
  examples reach the target.
  """
  keras = keras2.keras()
  tfmot = keras2.tfmot()
  data = dataset.take("train", examples)
  schedule = tfmot.sparsity.keras.ConstantSparsity(sparsity, begin_step=0, frequency=1)

  def wrap(layer):  # only the prunable kernels (docs/spec.md §1.4); Rescaling / BN stay as they are
    copy = layer.__class__.from_config(layer.get_config())  # `model`'s own layers stay untouched
    if isinstance(layer, (keras.layers.Conv2D, keras.layers.Dense)):
      return tfmot.sparsity.keras.prune_low_magnitude(copy, pruning_schedule=schedule)
    return copy

  pruned = keras.models.clone_model(model, clone_function=wrap)
  for src, dst in zip(model.layers, pruned.layers):
    target = getattr(dst, "layer", dst)
    target.set_weights(src.get_weights())
  pruned.compile(
    optimizer=keras.optimizers.Adam(0.005),
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
  )
  pruned.fit(
    data.images.astype(np.float32),
    data.labels,
    epochs=epochs,
    batch_size=32,
    verbose=0,
    callbacks=[tfmot.sparsity.keras.UpdatePruningStep()],
  )
  return tfmot.sparsity.keras.strip_pruning(pruned)


def write_member(run_dir, variant, k, model, dataset="synthetic"):
  """Saves a member as docs/artifacts/members.md says (metadata.json last)."""
  mdir = os.path.join(run_dir, "members", variant, str(k))
  os.makedirs(mdir, exist_ok=True)
  model.save(os.path.join(mdir, "model.keras"))
  with open(os.path.join(mdir, "metadata.json"), "w") as f:
    json.dump(
      {
        "schema": member_metadata.SCHEMA,
        "dataset": dataset,
        "dataset_options": {},
        "model": "tiny_cnn",
        "model_options": {},
        "variant": variant,
        "k": k,
        "seed": k,
      },
      f,
    )
  return mdir


def pruned_twins_run(run_dir):
  """A run with dense/0 and prune_0.9/0 on the synthetic data, exported to float32 with the
  pruned file's sparse twin; returns `run_dir`."""
  dataset = SyntheticDataset()
  write_member(run_dir, "dense", 0, tiny_cnn(0))
  write_member(run_dir, "prune_0.9", 0, prune(tiny_cnn(0), dataset, 0.9))
  from tf_forget.export import export

  export.export_population(
    run_dir, ["float32"], ["float32"], dataset=dataset, encodings=("plain", "sparse")
  )
  return run_dir


def kernel_zeros(model):
  """(zeros, count) over the Conv2D / Dense kernels of a Keras model (docs/spec.md §1.4)."""
  keras = keras2.keras()
  zeros = count = 0
  for layer in model.layers:
    if isinstance(layer, (keras.layers.Conv2D, keras.layers.Dense)):
      kernel = layer.kernel.numpy()
      zeros += int(np.sum(kernel == 0))
      count += kernel.size
  return zeros, count


@functools.lru_cache(maxsize=None)
def trained_exports():
  """(trained tiny model, data set, {format: tflite bytes}), built once per process."""
  from tf_forget.export import converter

  dataset = SyntheticDataset()
  model = train(tiny_cnn(0), dataset)
  rep = dataset.take("train", 100).images
  return model, dataset, {fmt: converter.convert(model, fmt, rep) for fmt in names.FORMAT_NAMES}
