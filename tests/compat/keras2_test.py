"""The Keras-2 switch selects tf_keras for tfmot and TensorFlow alike."""

import os

from tf_forget.compat import keras2


def test_enabled_by_conftest():
  assert os.environ[keras2.ENV_VAR] == "1"
  assert keras2.is_enabled()


def test_tf_keras_is_keras2_and_tfmot_uses_it():
  keras = keras2.keras()
  assert keras.__version__.startswith("2.")
  tfmot = keras2.tfmot()
  layer = tfmot.sparsity.keras.prune_low_magnitude(keras.layers.Dense(2))
  assert isinstance(layer, keras.layers.Wrapper)
