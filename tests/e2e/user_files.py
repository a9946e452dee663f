"""What a user brings to the audit, made as a user makes it (shared by the user-file tests).

`make(root)` trains a tiny tf_keras classifier on scikit-learn's digits (raw pixels in, its own
`Rescaling`), converts it with the plain TFLite converter to full int8 and float32, and writes
the first `num_images` test images as a PNG folder (`images/<class>/<i>.png`):

    root/images/<label>/<iiii>.png, root/model.keras, root/int8.tflite, root/float.tflite

`args(out)` is the audit command line over them (`tests/e2e/audit_binary.audit(args, root)`).
"""

import numpy as np
import tensorflow as tf

from tf_forget.compat import keras2
from tf_forget.data import registry

COMMON = ("--executor=inline", "--deploy_encoding=plain")


def train(seed, train_split, epochs=8):
  """A tiny classifier of 8x8x1 raw pixels (0-255) with its own `Rescaling`."""
  keras = keras2.keras()
  keras.utils.set_random_seed(seed)
  model = keras.Sequential(
    [
      keras.Input((8, 8, 1)),
      keras.layers.Rescaling(1 / 255.0),
      keras.layers.Conv2D(8, 3, activation="relu"),
      keras.layers.Flatten(),
      keras.layers.Dense(10),
    ]
  )
  model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
  model.fit(
    train_split.images.astype("float32"),
    train_split.labels,
    epochs=epochs,
    batch_size=64,
    verbose=0,
  )
  return model


def convert(model, train_split, int8):
  """The plain converter's float32 file, or its full-integer file (int8 input and output)."""
  converter = tf.lite.TFLiteConverter.from_keras_model(model)
  if int8:
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.representative_dataset = lambda: (
      [train_split.images[i : i + 1].astype("float32")] for i in range(100)
    )
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    converter.inference_input_type = tf.int8
    converter.inference_output_type = tf.int8
  return converter.convert()


def write_pngs(folder, examples):
  """`folder/<label>/<iiii>.png` for each example (i = its position)."""
  for i, (image, label) in enumerate(zip(examples.images, examples.labels)):
    target = folder / str(int(label))
    target.mkdir(parents=True, exist_ok=True)
    tf.io.write_file(str(target / f"{i:04d}.png"), tf.io.encode_png(image))


def make(root, num_images=200, seed=0):
  """Writes the user's files under `root` (a `pathlib.Path`) and returns `root`."""
  data = registry.get("digits")
  train_split, test = data.load("train"), data.load("test")
  write_pngs(root / "images", test.take(np.arange(min(num_images, len(test)))))
  model = train(seed, train_split)
  model.save(str(root / "model.keras"))
  (root / "int8.tflite").write_bytes(convert(model, train_split, int8=True))
  (root / "float.tflite").write_bytes(convert(model, train_split, int8=False))
  return root


def args(out, *extra):
  """The audit of model.keras with candidate int8.tflite on images/ into `out`."""
  return [
    "--dataset=folder:images",
    "--reference=model.keras",
    "--candidate=int8=int8.tflite",
    f"--out={out}",
    *COMMON,
    *extra,
  ]
