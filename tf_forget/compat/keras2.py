"""The Keras-2 switch: the one module that knows TF 2.21 ships Keras 3 and tfmot needs Keras 2.

TensorFlow 2.21 binds `tf.keras` to Keras 3 unless the environment variable
`TF_USE_LEGACY_KERAS=1` is set *before* TensorFlow is first imported; tfmot 0.8.1 (pruning
wrappers, schedules, `strip_pruning`) only works with Keras 2, which ships as the `tf_keras`
package. Everything in tf_forget builds models with `keras` from this module, and gets tfmot
from here too, so no other module has to know.

Binaries call `enable()` first thing in `main` (before they import a library module that imports
TensorFlow); the test suite's conftest does the same. Importing this module has no side effect.
"""

import os
import sys

ENV_VAR = "TF_USE_LEGACY_KERAS"


def enable():
  """Selects Keras 2 for this process.

  Raises:
    RuntimeError: if TensorFlow was already imported with Keras 3 bound to `tf.keras`.
  """
  if os.environ.get(ENV_VAR) == "1":
    return
  if "tensorflow" in sys.modules:
    raise RuntimeError(
      f"{ENV_VAR}=1 must be set before TensorFlow is imported; call "
      "tf_forget.compat.keras2.enable() before importing TensorFlow-using modules"
    )
  os.environ[ENV_VAR] = "1"


def is_enabled():
  """Whether this process selected Keras 2 (`TF_USE_LEGACY_KERAS=1`)."""
  return os.environ.get(ENV_VAR) == "1"


def keras():
  """Returns the Keras 2 package (`tf_keras`), the only Keras tf_forget builds models with."""
  import tf_keras

  return tf_keras


def tfmot():
  """Returns `tensorflow_model_optimization`, importing it with Keras 2 selected.

  Raises:
    RuntimeError: see `enable`.
  """
  enable()
  import tensorflow_model_optimization

  return tensorflow_model_optimization
