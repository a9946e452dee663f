"""What a user's model takes: named transforms from the data set's uint8 pixels (issue #28).

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
  `[N, H, W, C]` and returns the model's float32 input of the same shape.

Applied where a model is fed — every `.tflite` file and Keras model evaluated, the
representative data of a conversion — after corruptions (which act on the pixels). Numpy only.
"""

import importlib

import numpy as np

from tf_forget.data import base

_CAFFE_MEAN_BGR = np.array([103.939, 116.779, 123.68], np.float32)
_TORCH_MEAN = np.array([0.485, 0.456, 0.406], np.float32)
_TORCH_STD = np.array([0.229, 0.224, 0.225], np.float32)


def _rgb(images, name):
  if images.shape[-1] != 3:
    raise base.DataError(f"preprocess {name!r} needs RGB images, got {images.shape[-1]} channel(s)")
  return images


TRANSFORMS = {
    "unit": lambda x: x / np.float32(255.0),
    "symmetric": lambda x: x / np.float32(127.5) - np.float32(1.0),
    "imagenet_caffe": lambda x: _rgb(x, "imagenet_caffe")[..., ::-1] - _CAFFE_MEAN_BGR,
    "imagenet_torch": lambda x: (_rgb(x, "imagenet_torch") / np.float32(255.0) - _TORCH_MEAN)
                                / _TORCH_STD,
}


def resolve(name):
  """The callable uint8 `[N, H, W, C]` -> float32 of `name` (a key of `TRANSFORMS` or
  "module:function").

  Raises:
    base.DataError: an unknown name or a function that cannot be imported (one line).
  """
  if name in TRANSFORMS:
    return lambda images: TRANSFORMS[name](np.asarray(images, np.float32)).astype(np.float32)
  module, sep, function = str(name).partition(":")
  if not sep or not module or not function:
    raise base.DataError(f"unknown preprocess {name!r} (known: {', '.join(TRANSFORMS)}, or "
                         "MODULE:FUNCTION)")
  try:
    fn = getattr(importlib.import_module(module), function)
  except (ImportError, AttributeError) as e:
    raise base.DataError(f"preprocess {name!r} cannot be imported: {e}") from e
  return lambda images: _checked(fn(np.asarray(images, np.uint8)), images, name)


def _checked(out, images, name):
  out = np.asarray(out)
  if out.shape != np.shape(images):
    raise base.DataError(f"preprocess {name!r} returned shape {out.shape} for images "
                         f"{np.shape(images)}")
  return out.astype(np.float32)
