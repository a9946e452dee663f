"""Plays a user whose full-int8 file really breaks: an ordinary Keras CNN, trained outside
tf_forget, whose int8 file loses a large share of the test examples.

    python examples/repair/make_model.py --out=/tmp/repair

writes, under --out:
  images/train/<class>/<i>.png, images/test/<class>/<i>.png
                      scikit-learn's digits, upscaled to 32x32 RGB (Keras' folder layout; the
                      same images as examples/own_model)
  model.keras         the Keras model (raw 0-255 pixels in, logits out)
  model_int8.tflite   its full-int8 file (TFLiteConverter, 100 representative train images)

The model: three Conv2D+ReLU+MaxPool blocks on the raw, unscaled pixels, then Flatten,
BatchNormalization, Dense(64, relu), Dense(10). Nothing is hand-set: it is trained for 15
epochs (Adam, batch 32) with a fixed seed.

Cause of the damage: BatchNormalization stands in for input scaling, and the converter folds it
into the Dense after it, whose per-output-channel int8 weight scale the dead features then set.
In detail: some of the 256 flattened features are dead (ReLU outputs that are 0 on every training
image). In training, BN normalizes with batch statistics, so a dead feature's variance is 0 and
its moving variance decays from 1 as 0.99^steps (below 0.003 after 13 epochs). In inference,
BN multiplies each feature by gamma / sqrt(moving_variance + 1e-3): about 16 for the dead
features but about 0.1 for the live ones (std ~ 10: unscaled pixels through unnormalized convs).
The converter folds this multiplier into the rows of the next Dense's weights. The dead rows
cost nothing in float (their input is always 0), but they set each output channel's int8 weight
scale, so most of the live weights round to 0 or +-1. More training makes it worse (the moving
variance keeps decaying): with these settings on 2 threads, 10 epochs flip a few test examples,
13 about a quarter and 15 (the default) most of them; other kernels take other training paths
(1 thread: 13 epochs flip ~2%, 15 about half), so the default trains long enough to break on
each configuration tried (int8 top-1 0.25 to 0.52 at 15 epochs, float 0.98 to 0.99).

Nothing here imports tf_forget: this is the user's side (examples/repair/README.md).
"""

import argparse
import os

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

import numpy as np
from sklearn import datasets
import tensorflow as tf
import tf_keras as keras

SIZE = 32
SEED = 0


def images(seed=0):
  """(train images, train labels, test images, test labels): uint8 32x32x3, a 80/20 split
  (the same as examples/own_model/make_model.py)."""
  digits = datasets.load_digits()
  x = np.round(digits.images * (255.0 / 16.0)).astype(np.uint8)[..., None]
  x = tf.image.resize(x, (SIZE, SIZE), method="bilinear").numpy()
  x = np.repeat(np.clip(np.round(x), 0, 255).astype(np.uint8), 3, axis=-1)
  order = np.random.default_rng(seed).permutation(len(x))
  cut = int(0.8 * len(x))
  train, test = order[:cut], order[cut:]
  return x[train], digits.target[train], x[test], digits.target[test]


def write_folder(root, split, x, y):
  """images/<split>/<class>/<i>.png."""
  for i, (image, label) in enumerate(zip(x, y)):
    rel = os.path.join(split, str(int(label)), f"{i:04d}.png")
    os.makedirs(os.path.join(root, os.path.dirname(rel)), exist_ok=True)
    tf.io.write_file(os.path.join(root, rel), tf.io.encode_png(image))


def train_model(x, y, epochs, seed=SEED):
  keras.utils.set_random_seed(seed)
  layers = keras.layers
  model = keras.Sequential(
    [
      keras.Input((SIZE, SIZE, 3)),  # raw 0-255 pixels: no Rescaling
      layers.Conv2D(32, 3, activation="relu", name="conv1"),
      layers.MaxPooling2D(),
      layers.Conv2D(64, 3, activation="relu", name="conv2"),
      layers.MaxPooling2D(),
      layers.Conv2D(64, 3, activation="relu", name="conv3"),
      layers.MaxPooling2D(),
      layers.Flatten(),
      layers.BatchNormalization(name="head_bn"),
      layers.Dense(64, activation="relu", name="head"),
      layers.Dense(10, name="logits"),
    ]
  )
  model.compile(
    keras.optimizers.Adam(1e-3),
    keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    ["accuracy"],
  )
  model.fit(x.astype(np.float32), y, epochs=epochs, batch_size=32, verbose=0)
  return model


def to_int8(model, x):
  converter = tf.lite.TFLiteConverter.from_keras_model(model)
  converter.optimizations = [tf.lite.Optimize.DEFAULT]
  converter.representative_dataset = lambda: ([x[i : i + 1].astype(np.float32)] for i in range(100))
  converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
  converter.inference_input_type = tf.int8
  converter.inference_output_type = tf.int8
  return converter.convert()


def int8_accuracy(data, x, y):
  """Top-1 accuracy of a full-int8 file (int8 input: raw pixels quantized with its own scale)."""
  interpreter = tf.lite.Interpreter(model_content=data)
  inp, out = interpreter.get_input_details()[0], interpreter.get_output_details()[0]
  interpreter.resize_tensor_input(inp["index"], x.shape)
  interpreter.allocate_tensors()
  scale, zero = inp["quantization"]
  interpreter.set_tensor(
    inp["index"], np.clip(np.round(x / scale) + zero, -128, 127).astype(np.int8)
  )
  interpreter.invoke()
  return float(np.mean(interpreter.get_tensor(out["index"]).argmax(axis=1) == y))


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--out", required=True)
  parser.add_argument("--epochs", type=int, default=15)
  args = parser.parse_args()
  x_train, y_train, x_test, y_test = images()
  root = os.path.join(args.out, "images")
  write_folder(root, "train", x_train, y_train)
  write_folder(root, "test", x_test, y_test)
  model = train_model(x_train, y_train, args.epochs)
  _, accuracy = model.evaluate(x_test.astype(np.float32), y_test, verbose=0)
  model.save(os.path.join(args.out, "model.keras"))
  data = to_int8(model, x_train)
  with open(os.path.join(args.out, "model_int8.tflite"), "wb") as f:
    f.write(data)
  print(
    f"Keras test accuracy {accuracy:.4f}, int8 file {int8_accuracy(data, x_test, y_test):.4f};"
    f" wrote {args.out}"
  )


if __name__ == "__main__":
  main()
