"""Keras 3 (the `keras` package) next to tf_keras, for the model files users save with it.

TensorFlow 2.21's default Keras is Keras 3: a user following TensorFlow's tutorials saves
`model.keras` / `model.h5` with it, or `model.export(dir)`. tf_forget builds and trains with
tf_keras (`keras2`), but reads those files with Keras 3: `import keras` gives
Keras 3 (TensorFlow backend) in the same process, whatever `TF_USE_LEGACY_KERAS` says, since
that variable only decides what `tf.keras` is bound to. Every other module gets Keras 3 from
here. Importing this module has no side effect.

The path TensorFlow documents from a Keras 3 model to a TFLite file is a SavedModel endpoint
(`keras.export.ExportArchive`, what `model.export()` and `TFLiteConverter.from_keras_model`
use: TF 2.21 `lite.py`, `_convert_keras_to_saved_model`) with the call in inference mode;
`serving_function` gives that endpoint's concrete function and the archive that holds the
model's variables, for `tf.lite.TFLiteConverter.from_concrete_functions`.
"""

import sys


def keras():
  """The Keras 3 package (`keras`, TensorFlow backend).

  Raises:
    ImportError: the installed `keras` is not Keras 3.
  """
  import keras as keras3

  if not keras3.__version__.startswith("3."):
    raise ImportError(f"keras {keras3.__version__} is installed; Keras 3 is needed")
  return keras3


def is_model(obj):
  """Whether `obj` is a Keras 3 layer or model (False when Keras 3 was never imported)."""
  module = sys.modules.get("keras")
  layer = getattr(getattr(module, "layers", None), "Layer", None)
  return layer is not None and isinstance(obj, layer)


def load_model(path, safe_mode=True):
  """The Keras 3 model of a `.keras` / `.h5` file, not compiled (`safe_mode` as Keras')."""
  return keras().saving.load_model(path, compile=False, safe_mode=safe_mode)


def serving_function(model, spec):
  """(concrete function, trackable) of `model(image, training=False)` at `spec`.

  Args:
    model: a Keras 3 model.
    spec: the `tf.TensorSpec` of its input.

  Returns:
    The concrete function of an `ExportArchive` endpoint and the archive (it tracks the
    model's variables: the converter's `trackable_obj`).
  """
  archive = keras().export.ExportArchive()
  archive.track(model)
  function = archive.add_endpoint("serve", lambda image: model(image, training=False), [spec])
  return function.get_concrete_function(spec), archive
