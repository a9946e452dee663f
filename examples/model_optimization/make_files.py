"""Makes the files of TensorFlow Model Optimization's tutorials, on MNIST, for the audit.

Follows the tutorials with tf_keras and tfmot (what tfmot runs on): the post-training
quantization tutorial's small MNIST classifier (pixels / 255 in), then

  * `pruned_dyn.tflite`: "Pruning in Keras" — prune_low_magnitude from 50% to 80% sparsity while
    fine-tuning, strip_pruning, dynamic-range conversion (the tutorial's "prune + quantize");
  * `qat.tflite`: "Quantization aware training" — quantize_model, fine-tune, convert;
  * `clustered_dyn.tflite`: "Weight clustering" — 16 clusters, fine-tune, strip, dynamic range;
  * `ptq_dyn.tflite`, `ptq_16x8.tflite`, `ptq_uint8.tflite`: post-training dynamic range,
    16x8 (int16 activations) and full integer with uint8 input and output;
  * `float.tflite`: the plain conversion;

and writes `model.keras` (the reference) and the test images as PNGs, `images/<label>/*.png`.
MNIST comes from its four IDX files in `--mnist_dir` (as distributed, `.gz` or not); without
it, scikit-learn's digits resized to 28x28 (offline, for a quick look).

    TF_USE_LEGACY_KERAS=1 python examples/model_optimization/make_files.py --out=/tmp/tfmot \\
        --mnist_dir=/path/to/mnist
"""

import argparse
import gzip
import os

os.environ["TF_USE_LEGACY_KERAS"] = "1"  # tfmot runs on tf_keras
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import tensorflow as tf
import tensorflow_model_optimization as tfmot
import tf_keras as keras

FILES = {
  "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
  "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}


def _idx(path):
  """The array of an IDX file (plain or .gz)."""
  for name in (path, path + ".gz"):
    if os.path.exists(name):
      with (gzip.open if name.endswith(".gz") else open)(name, "rb") as f:
        data = f.read()
      dims = data[3]
      shape = [int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(dims)]
      return np.frombuffer(data, np.uint8, offset=4 + 4 * dims).reshape(shape)
  raise SystemExit(f"make_files: {path} (.gz) is missing")


def load(mnist_dir):
  """(train images, train labels, test images, test labels), uint8 [N, 28, 28]."""
  if mnist_dir:
    return tuple(
      _idx(os.path.join(mnist_dir, f)) for split in ("train", "test") for f in FILES[split]
    )
  from sklearn import datasets

  digits = datasets.load_digits()
  images = tf.image.resize(digits.images[..., None] * (255 / 16), (28, 28)).numpy()[..., 0]
  images = np.round(np.clip(images, 0, 255)).astype(np.uint8)
  order = np.random.default_rng(0).permutation(len(images))
  cut = int(0.8 * len(order))
  tr, te = order[:cut], order[cut:]
  return images[tr], digits.target[tr], images[te], digits.target[te]


def _compile(model):
  model.compile(
    optimizer="adam",
    metrics=["accuracy"],
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
  )
  return model


def train(x, y, epochs):
  """The tutorial's model: Reshape, Conv2D 12 3x3, MaxPool, Flatten, Dense 10."""
  keras.utils.set_random_seed(0)
  model = _compile(
    keras.Sequential(
      [
        keras.layers.InputLayer(input_shape=(28, 28)),
        keras.layers.Reshape(target_shape=(28, 28, 1)),
        keras.layers.Conv2D(filters=12, kernel_size=(3, 3), activation="relu"),
        keras.layers.MaxPooling2D(pool_size=(2, 2)),
        keras.layers.Flatten(),
        keras.layers.Dense(10),
      ]
    )
  )
  model.fit(x, y, epochs=epochs, validation_split=0.1, verbose=0)
  return model


def _copy(model):
  """A copy of the trained model (tfmot's wrappers train the layers they wrap)."""
  copy = keras.models.clone_model(model)
  copy.set_weights(model.get_weights())
  return copy


def pruned(model, x, y, epochs=2, batch=128):
  sparsity = tfmot.sparsity.keras
  end = int(np.ceil(0.9 * len(x) / batch)) * epochs
  # The tutorial's schedule; pruning steps at least ten times in it (on the small digits too).
  schedule = sparsity.PolynomialDecay(
    0.50, 0.80, begin_step=0, end_step=end, frequency=max(1, min(100, end // 10))
  )
  p = _compile(sparsity.prune_low_magnitude(_copy(model), pruning_schedule=schedule))
  p.fit(
    x,
    y,
    batch_size=batch,
    epochs=epochs,
    validation_split=0.1,
    verbose=0,
    callbacks=[sparsity.UpdatePruningStep()],
  )
  return sparsity.strip_pruning(p)


def qat(model, x, y):
  q = _compile(tfmot.quantization.keras.quantize_model(_copy(model)))
  q.fit(x[:1000], y[:1000], batch_size=500, epochs=1, validation_split=0.1, verbose=0)
  return q


def clustered(model, x, y):
  cluster = tfmot.clustering.keras
  c = cluster.cluster_weights(
    _copy(model),
    number_of_clusters=16,
    cluster_centroids_init=cluster.CentroidInitialization.LINEAR,
  )
  _compile(c).fit(x, y, batch_size=500, epochs=1, validation_split=0.1, verbose=0)
  return cluster.strip_clustering(c)


def convert(model, kind, x=None):
  """The converter's file: float, dyn (dynamic range), 16x8, uint8 (full integer I/O)."""
  c = tf.lite.TFLiteConverter.from_keras_model(model)
  if kind == "float":
    return c.convert()
  c.optimizations = [tf.lite.Optimize.DEFAULT]
  if kind in ("16x8", "uint8"):
    c.representative_dataset = lambda: ([x[i : i + 1].astype(np.float32)] for i in range(100))
  if kind == "16x8":
    c.target_spec.supported_ops = [
      tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8
    ]
  if kind == "uint8":
    c.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    c.inference_input_type = c.inference_output_type = tf.uint8
  return c.convert()


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--out", required=True)
  parser.add_argument("--mnist_dir", default=None, help="the four MNIST IDX files")
  parser.add_argument("--epochs", type=int, default=1, help="the reference's epochs")
  args = parser.parse_args()
  train_x, train_y, test_x, test_y = load(args.mnist_dir)
  x = train_x.astype(np.float32) / 255.0
  os.makedirs(args.out, exist_ok=True)
  model = train(x, train_y, args.epochs)
  model.save(os.path.join(args.out, "model.keras"))
  files = {
    "float": convert(model, "float"),
    "ptq_dyn": convert(model, "dyn"),
    "ptq_16x8": convert(model, "16x8", x),
    "ptq_uint8": convert(model, "uint8", x),
    "qat": convert(qat(model, x, train_y), "dyn"),
    "pruned_dyn": convert(pruned(model, x, train_y), "dyn"),
    "clustered_dyn": convert(clustered(model, x, train_y), "dyn"),
  }
  for name, data in files.items():
    with open(os.path.join(args.out, f"{name}.tflite"), "wb") as f:
      f.write(data)
  for i, (image, label) in enumerate(zip(test_x, test_y)):
    folder = os.path.join(args.out, "images", str(int(label)))
    os.makedirs(folder, exist_ok=True)
    tf.io.write_file(os.path.join(folder, f"{i:05d}.png"), tf.io.encode_png(image[..., None]))
  print(f"wrote {len(files)} files, model.keras and {len(test_y)} test images in {args.out}")


if __name__ == "__main__":
  main()
