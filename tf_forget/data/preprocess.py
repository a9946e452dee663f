"""What a user's model takes: named transforms from the data set's uint8 pixels.

Every member tf_forget trains takes the raw pixel values 0-255 as float32 and normalizes inside
the model; a user's model that includes its own preprocessing needs nothing either. A model
trained on normalized images instead names its transform (`--preprocess`, a data set option of
the user's data sources, so it is part of the split's identity and of every file's lineage):

* `unit`: x / 255 (Keras `Rescaling(1/255)`);
* `symmetric`: x / 127.5 − 1 (MobileNet, Inception: `tf.keras.applications.*.preprocess_input`
  with mode "tf");
* `imagenet_caffe`: RGB → BGR, minus the ImageNet mean (103.939, 116.779, 123.68) per BGR
  channel (ResNet50, VGG: mode "caffe");
* `imagenet_torch`: x / 255, minus (0.485, 0.456, 0.406), divided by (0.229, 0.224, 0.225)
  per RGB channel (mode "torch");
* `MODULE:FUNCTION`: a function of the user's, importable here, that receives a uint8 batch
  `[N, H, W, C]` and returns the model's input of the same shape (numbers; fed as float32).
  This runs the user's code: `resolve` imports MODULE, which runs its top-level
  code, and the function is called on every batch. It must be a Python function (`def` or
  `lambda`) defined outside Python's standard library: a built-in or C function (`os:system`,
  `numpy:sqrt`), a class or a standard-library function (`shutil:rmtree`) is refused before
  it is called. Its result is checked on every call (`_checked`: an array or tensor of the
  batch's shape and a numeric dtype); the audit calls it once on test images while it
  validates, before anything is written (`tf_forget.pipeline.user_plan`).

Applied where a model is fed — every `.tflite` file and Keras model evaluated, the
representative data of a conversion — after corruptions (which act on the pixels). Numpy only.
"""

import importlib
import inspect
import sys

import numpy as np

from tf_forget.artifacts import errors
from tf_forget.data import dataset_api

_CAFFE_MEAN_BGR = np.array([103.939, 116.779, 123.68], np.float32)
_TORCH_MEAN = np.array([0.485, 0.456, 0.406], np.float32)
_TORCH_STD = np.array([0.229, 0.224, 0.225], np.float32)


def _rgb(images, name):
  if images.shape[-1] != 3:
    raise dataset_api.DataError(
      f"preprocess {name!r} needs RGB images, got {images.shape[-1]} channel(s)"
    )
  return images


TRANSFORMS = {
  "unit": lambda x: x / np.float32(255.0),
  "symmetric": lambda x: x / np.float32(127.5) - np.float32(1.0),
  "imagenet_caffe": lambda x: _rgb(x, "imagenet_caffe")[..., ::-1] - _CAFFE_MEAN_BGR,
  "imagenet_torch": lambda x: (
    (_rgb(x, "imagenet_torch") / np.float32(255.0) - _TORCH_MEAN) / _TORCH_STD
  ),
}


def resolve(name):
  """The callable uint8 `[N, H, W, C]` -> float32 of `name` (a key of `TRANSFORMS` or
  "module:function").

  Raises:
    dataset_api.DataError: an unknown name, a function that cannot be imported or that is not a
      Python function outside the standard library (`_check_function`); the callable raises it for a
      function that raises or returns what is not the model's input (`_checked`; one line).
  """
  if name in TRANSFORMS:
    return lambda images: TRANSFORMS[name](np.asarray(images, np.float32)).astype(np.float32)
  module, sep, function = str(name).partition(":")
  if not sep or not module or not function:
    raise dataset_api.DataError(
      f"unknown preprocess {name!r} (known: {', '.join(TRANSFORMS)}, or MODULE:FUNCTION)"
    )
  try:
    fn = getattr(importlib.import_module(module), function)
  except Exception as e:  # the user's module runs on import
    raise dataset_api.DataError(
      f"preprocess {name!r} cannot be imported: {errors.one_line(e, 300)}"
    ) from e
  _check_function(fn, name)
  return lambda images: _checked(_call(fn, images, name), images, name)


def _stdlib(module):
  return str(module or "").split(".")[0] in sys.stdlib_module_names


def _check_function(fn, name):
  """Refuses, before calling it, what is not a Python function of a module outside the
  standard library (see the module docstring)."""
  module, _, function = name.partition(":")
  where = f"{module}.{function}"
  if not inspect.isfunction(fn):
    raise dataset_api.DataError(
      f"--preprocess={name}: {where} is a {type(fn).__name__}, not a Python "
      "function (def) of your own module; refused without calling it"
    )
  if _stdlib(fn.__module__) or _stdlib(module):
    raise dataset_api.DataError(
      f"--preprocess={name}: {where} is a function of Python's standard "
      "library, not a preprocessing function; refused without calling it"
    )


def _call(fn, images, name):
  try:
    return fn(np.asarray(images, np.uint8))
  except Exception as e:  # the user's code raises anything
    raise dataset_api.DataError(
      f"--preprocess={name} raised {type(e).__name__}: {errors.one_line(e, 300)}"
    ) from e


def _checked(out, images, name):
  """`out` as float32 if it is an array (numpy, or a tensor) of `images`' shape and of a
  numeric dtype; else a one-line `DataError` naming the function and what it returned."""
  want = "[" + ", ".join(str(d) for d in np.shape(images)) + "]"
  if not (
    isinstance(out, np.ndarray) or all(hasattr(out, a) for a in ("__array__", "shape", "dtype"))
  ):
    raise dataset_api.DataError(
      f"--preprocess={name}: returned {type(out).__name__}, not an array of shape {want}"
    )
  out = np.asarray(out)
  got = "[" + ", ".join(str(d) for d in out.shape) + "]"
  if out.shape != np.shape(images):
    raise dataset_api.DataError(
      f"--preprocess={name}: returned an array of shape {got}, not {want} (the images it was given)"
    )
  if out.dtype == np.bool_ or not (
    np.issubdtype(out.dtype, np.integer) or np.issubdtype(out.dtype, np.floating)
  ):
    raise dataset_api.DataError(
      f"--preprocess={name}: returned an array of dtype {out.dtype}, not "
      "numbers (integers or floats)"
    )
  return out.astype(np.float32)
