"""TensorFlow's "Post-training integer quantization" tutorial, followed as a user does, offline.

The tutorial (tensorflow.org/lite/performance/post_training_integer_quant) trains a small
MNIST classifier with the default Keras of TensorFlow 2.21 — Keras 3 — and converts it with the
plain TFLite converter three times: float32, dynamic range, and full integer with uint8 input
and output. This script does the same, step for step, on scikit-learn's bundled 8x8 digits
(MNIST cannot be downloaded here), and writes what a user has at the end of it:

    <out>/model.keras                   the Keras 3 model (input [N, 8, 8], pixels / 255)
    <out>/mnist_model.tflite            float32
    <out>/mnist_model_dynamic.tflite    dynamic-range int8 weights
    <out>/mnist_model_quant.tflite      full integer, uint8 input and output
    <out>/images/{train,test}/<digit>/<i>.png    the data, as an image folder

The model takes `[N, 8, 8]` float pixels scaled to [0, 1] and reshapes them inside (as the
tutorial's `Reshape((28, 28, 1))`), so the audit needs `--preprocess=unit`. Run:

    .venv/bin/python examples/tutorial/make_files.py --out=/tmp/tutorial
"""

import argparse
import os

os.environ.pop("TF_USE_LEGACY_KERAS", None)  # TensorFlow 2.21's default Keras: Keras 3
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
from sklearn import datasets
import tensorflow as tf


def load(seed=0, size=8, test_images=None):
  """(train images, train labels, test images, test labels): digits as uint8 [N, size, size]
  (0-16 ink levels stretched to 0-255, resized bilinearly when `size` is not 8), 80% / 20%
  split in a seeded shuffle. `test_images` repeats the test split, each copy after the first
  shifted by up to 2 pixels (a seeded roll), to that many images (a benchmark's MNIST-sized
  test set)."""
  digits = datasets.load_digits()
  images = digits.images * (255.0 / 16.0)
  if size != 8:
    images = tf.image.resize(images[..., None], (size, size)).numpy()[..., 0]
  images = np.round(np.clip(images, 0, 255)).astype(np.uint8)
  rng = np.random.default_rng(seed)
  order = rng.permutation(len(images))
  cut = int(0.8 * len(order))
  train, test = order[:cut], order[cut:]
  test_x, test_y = images[test], digits.target[test]
  if test_images:
    pick = np.arange(test_images) % len(test)
    shifts = rng.integers(-2, 3, (test_images, 2))
    shifts[: len(test)] = 0
    test_x = np.stack([np.roll(test_x[i], tuple(d), axis=(0, 1)) for i, d in zip(pick, shifts)])
    test_y = test_y[pick]
  return images[train], digits.target[train], test_x, test_y


def train_model(train_images, train_labels, seed=0):
  """The tutorial's model and training, at the images' size."""
  tf.keras.utils.set_random_seed(seed)
  size = train_images.shape[1]
  model = tf.keras.Sequential(
    [
      tf.keras.layers.InputLayer(shape=(size, size)),
      tf.keras.layers.Reshape(target_shape=(size, size, 1)),
      tf.keras.layers.Conv2D(filters=12, kernel_size=(3, 3), activation="relu"),
      tf.keras.layers.MaxPooling2D(pool_size=(2, 2)),
      tf.keras.layers.Flatten(),
      tf.keras.layers.Dense(10),
    ]
  )
  model.compile(
    optimizer="adam",
    loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    metrics=["accuracy"],
  )
  model.fit(train_images, train_labels, epochs=15, batch_size=32, verbose=0)
  return model


def convert(model, train_images):
  """The tutorial's three conversions: {file name: bytes}."""
  out = {}
  converter = tf.lite.TFLiteConverter.from_keras_model(model)
  out["mnist_model.tflite"] = converter.convert()
  converter.optimizations = [tf.lite.Optimize.DEFAULT]
  out["mnist_model_dynamic.tflite"] = converter.convert()

  def representative_data_gen():
    for input_value in tf.data.Dataset.from_tensor_slices(train_images).batch(1).take(100):
      yield [input_value]

  converter.representative_dataset = representative_data_gen
  converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
  converter.inference_input_type = tf.uint8
  converter.inference_output_type = tf.uint8
  out["mnist_model_quant.tflite"] = converter.convert()
  return out


def write_images(root, images, labels):
  for i, (image, label) in enumerate(zip(images, labels)):
    folder = os.path.join(root, str(int(label)))
    os.makedirs(folder, exist_ok=True)
    tf.io.write_file(os.path.join(folder, f"{i:05d}.png"), tf.io.encode_png(image[..., None]))


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--out", required=True)
  parser.add_argument(
    "--size", type=int, default=8, help="image side (28 for MNIST's size: the digits resized)"
  )
  parser.add_argument(
    "--test_images",
    type=int,
    default=0,
    help="repeat the test split (shifted copies) to this many images",
  )
  args = parser.parse_args()
  os.makedirs(args.out, exist_ok=True)
  train_u8, train_labels, test_u8, test_labels = load(size=args.size, test_images=args.test_images)
  train_images = train_u8.astype(np.float32) / 255.0  # the tutorial's normalization
  model = train_model(train_images, train_labels)
  model.save(os.path.join(args.out, "model.keras"))
  for name, data in convert(model, train_images).items():
    with open(os.path.join(args.out, name), "wb") as f:
      f.write(data)
  write_images(os.path.join(args.out, "images", "train"), train_u8, train_labels)
  write_images(os.path.join(args.out, "images", "test"), test_u8, test_labels)
  _, accuracy = model.evaluate(test_u8.astype(np.float32) / 255.0, test_labels, verbose=0)
  print(f"Keras {tf.keras.__version__}: test accuracy {accuracy:.4f}; files in {args.out}")


if __name__ == "__main__":
  main()
