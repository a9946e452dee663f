"""Plays a user who brings their own model: trains an ordinary Keras classifier outside
tf_forget, converts it with the plain TFLite converter to full int8, and writes the images.

    python examples/own_model/make_model.py --out=/tmp/own

writes, under --out:
  images/train/<class>/<i>.png, images/test/<class>/<i>.png
                      scikit-learn's digits, upscaled to 32x32 RGB (Keras' folder layout)
  attributes.csv      per image: path, heavy_ink (1 when its ink is above the median)
  model.keras         the Keras model (it includes its own preprocessing: raw 0-255 pixels in)
  model_int8.tflite   its full-int8 file (TFLiteConverter, 100 representative train images)

Nothing here imports tf_forget: this is the user's side. Then audit it with one command
(examples/own_model/README.md).
"""

import argparse
import csv
import os

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

import numpy as np
from sklearn import datasets
import tensorflow as tf
import tf_keras as keras

SIZE = 32


def images(seed=0):
  """(train images, train labels, test images, test labels): uint8 32x32x3, a 80/20 split."""
  digits = datasets.load_digits()
  x = np.round(digits.images * (255.0 / 16.0)).astype(np.uint8)[..., None]
  x = tf.image.resize(x, (SIZE, SIZE), method="bilinear").numpy()
  x = np.repeat(np.clip(np.round(x), 0, 255).astype(np.uint8), 3, axis=-1)
  order = np.random.default_rng(seed).permutation(len(x))
  cut = int(0.8 * len(x))
  train, test = order[:cut], order[cut:]
  return x[train], digits.target[train], x[test], digits.target[test]


def write_folder(root, split, x, y):
  """images/<split>/<class>/<i>.png; returns the relative paths."""
  paths = []
  for i, (image, label) in enumerate(zip(x, y)):
    rel = os.path.join(split, str(int(label)), f"{i:04d}.png")
    os.makedirs(os.path.join(root, os.path.dirname(rel)), exist_ok=True)
    tf.io.write_file(os.path.join(root, rel), tf.io.encode_png(image))
    paths.append(rel)
  return paths


def train_model(x, y, epochs, seed=0):
  keras.utils.set_random_seed(seed)
  model = keras.Sequential(
    [
      keras.Input((SIZE, SIZE, 3)),
      keras.layers.Rescaling(1 / 255.0),
      keras.layers.Conv2D(16, 3, activation="relu"),
      keras.layers.MaxPooling2D(),
      keras.layers.Conv2D(32, 3, activation="relu"),
      keras.layers.MaxPooling2D(),
      keras.layers.Flatten(),
      keras.layers.Dense(64, activation="relu"),
      keras.layers.Dense(10),
    ]
  )
  model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True), ["accuracy"])
  model.fit(x.astype(np.float32), y, epochs=epochs, batch_size=64, verbose=0)
  return model


def to_int8(model, x):
  converter = tf.lite.TFLiteConverter.from_keras_model(model)
  converter.optimizations = [tf.lite.Optimize.DEFAULT]
  converter.representative_dataset = lambda: ([x[i : i + 1].astype(np.float32)] for i in range(100))
  converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
  converter.inference_input_type = tf.int8
  converter.inference_output_type = tf.int8
  return converter.convert()


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--out", required=True)
  parser.add_argument("--epochs", type=int, default=8)
  args = parser.parse_args()
  x_train, y_train, x_test, y_test = images()
  root = os.path.join(args.out, "images")
  paths = write_folder(root, "train", x_train, y_train) + write_folder(root, "test", x_test, y_test)
  ink = np.concatenate([x_train, x_test]).reshape(len(paths), -1).sum(axis=1)
  with open(os.path.join(args.out, "attributes.csv"), "w", newline="") as f:
    writer = csv.writer(f)
    writer.writerow(["path", "heavy_ink"])
    writer.writerows([p, int(v > np.median(ink))] for p, v in zip(paths, ink))
  model = train_model(x_train, y_train, args.epochs)
  _, accuracy = model.evaluate(x_test.astype(np.float32), y_test, verbose=0)
  model.save(os.path.join(args.out, "model.keras"))
  with open(os.path.join(args.out, "model_int8.tflite"), "wb") as f:
    f.write(to_int8(model, x_train))
  print(f"Keras test accuracy {accuracy:.4f}; wrote {args.out}")


if __name__ == "__main__":
  main()
