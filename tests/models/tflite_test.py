"""The models convert to full-int8 TFLite (the strictest format of docs/spec.md §1.1).

Conversion only: running `.tflite` files belongs to the interpreter factory
(`tf_forget.evaluate.interpreter.create`). One model per layer family: plain conv/dense, option A
shortcut (Permute / ZeroPadding2D), pre-activation wide blocks, and the per-channel `normalize`
layer.
"""

import numpy as np
import pytest
import tensorflow as tf

from tf_forget.compat import keras2
from tf_forget.models import model_registry

keras = keras2.keras()

SHAPES = {
  "small_cnn": (8, 8, 1),
  "lenet5": (28, 28, 1),
  "cifar_resnet20": (8, 8, 3),
  "wrn": (8, 8, 3),
}


@pytest.mark.parametrize(
  "name,options",
  [
    ("small_cnn", dict(mean=0.5, std=0.25)),  # with the per-channel normalize layer
    ("lenet5", {}),
    ("cifar_resnet20", {}),  # option A's Permute / ZeroPadding2D shortcut
    ("wrn", dict(depth=10, width=1)),
  ],
)
def test_full_int8_tflite_conversion(name, options):
  shape = SHAPES[name]
  keras.utils.set_random_seed(0)
  model = model_registry.get(name, shape, 3, **options)
  rng = np.random.default_rng(0)

  def representative():
    for _ in range(4):
      yield [rng.uniform(0, 255, (1,) + shape).astype(np.float32)]

  converter = tf.lite.TFLiteConverter.from_keras_model(model)
  converter.optimizations = [tf.lite.Optimize.DEFAULT]
  converter.representative_dataset = representative
  converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
  converter.inference_input_type = tf.int8
  converter.inference_output_type = tf.int8
  flatbuffer = converter.convert()
  assert flatbuffer[4:8] == b"TFL3"  # the TFLite flatbuffer identifier
