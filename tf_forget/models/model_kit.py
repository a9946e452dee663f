"""What every model of the zoo shares: the error type, the input stem and the L2 helper.

The model contract (docs/artifacts/models.md):
  * input "image": float32 `[batch, H, W, C]` of RAW pixel values in [0, 255], exactly what the
    data sets yield (as float), so a `.tflite` file is fed the data set's pixels;
  * the first layer is `Rescaling(1/255)`; an optional per-channel `mean` / `std` (given on the
    [0, 1] scale, e.g. torchvision's ImageNet (0.485, 0.456, 0.406) / (0.229, 0.224, 0.225))
    adds a second `Rescaling(1/std, offset=-mean/std)`;
  * output: logits `[batch, num_classes]`, no softmax;
  * only standard layers (Conv2D, Dense, BatchNormalization, ReLU, Add, Concatenate, pooling,
    ZeroPadding2D, Flatten, Dropout, Rescaling), so tfmot's `prune_low_magnitude` can wrap the
    model and TFLite (including full int8) converts it.

Keras is Keras 2 from `tf_forget.compat.keras2` (CONVENTIONS.md).
"""

import math

from tf_forget.artifacts import errors
from tf_forget.compat import keras2

INPUT_NAME = "image"


class ModelError(errors.Error):
  """An unknown model, an unknown option, or an option value a model cannot be built with."""


def check_input_shape(input_shape, min_size=1):
  """Validates an `(H, W, C)` input shape.

  Args:
    input_shape: sequence of three positive ints (no batch dimension).
    min_size: smallest H and W the model can take.

  Returns:
    The shape as a tuple of ints.

  Raises:
    ModelError: not three positive ints, or H / W below `min_size`.
  """
  try:
    shape = tuple(int(d) for d in input_shape)
    ok = len(shape) == 3 and all(d > 0 for d in shape) and all(int(d) == d for d in input_shape)
  except (TypeError, ValueError):
    ok = False
  if not ok:
    raise ModelError(f"input_shape must be (H, W, C) positive ints, got {input_shape!r}")
  if shape[0] < min_size or shape[1] < min_size:
    raise ModelError(f"input_shape {shape} too small: this model needs H, W >= {min_size}")
  return shape


def check_num_classes(num_classes):
  """Validates `num_classes` (an int >= 2) and returns it."""
  if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 2:
    raise ModelError(f"num_classes must be an int >= 2, got {num_classes!r}")
  return num_classes


def check_weight_decay(weight_decay):
  """Validates `weight_decay` (a finite float >= 0) and returns it as float."""
  try:
    value = float(weight_decay)
  except (TypeError, ValueError):
    value = float("nan")
  if not math.isfinite(value) or value < 0:
    raise ModelError(f"weight_decay must be a finite float >= 0, got {weight_decay!r}")
  return value


def check_dropout_rate(rate):
  """Validates a dropout rate (a float in [0, 1)) and returns it as float."""
  try:
    value = float(rate)
  except (TypeError, ValueError):
    value = float("nan")
  if not 0.0 <= value < 1.0:
    raise ModelError(f"dropout_rate must be in [0, 1), got {rate!r}")
  return value


def l2(weight_decay):
  """The kernel regularizer for `weight_decay`, or None when it is 0.

  Keras `l2(λ)` adds λ‖θ‖² to the loss, so its gradient is 2λθ: in the notation of 002 §3 /
  docs/spec.md §6.1 (loss term (ε/2)‖θ‖²) `weight_decay = λ` means ε = 2λ. Papers that state "weight
  decay 5e-4" as an SGD decay ε (002 §6.1) correspond to `weight_decay = 2.5e-4` here.

  Args:
    weight_decay: λ, a float >= 0.

  Returns:
    A `keras.regularizers.L2` or None.

  Raises:
    ModelError: negative or non-finite `weight_decay`.
  """
  value = check_weight_decay(weight_decay)
  if value == 0:
    return None
  return keras2.keras().regularizers.l2(value)


def _per_channel(values, channels, what):
  """Returns `values` as a list of `channels` floats (a scalar or length-1 is broadcast)."""
  if isinstance(values, (int, float)):
    values = [values]
  try:
    values = [float(v) for v in values]
  except (TypeError, ValueError):
    raise ModelError(f"{what} must be a float or {channels} floats, got {values!r}") from None
  if len(values) == 1:
    values = values * channels
  if len(values) != channels or not all(math.isfinite(v) for v in values):
    raise ModelError(f"{what} must be a float or {channels} finite floats, got {values!r}")
  return values


def image_input(input_shape, mean=None, std=None):
  """The shared stem: the "image" input and the in-model normalization.

  `x / 255`, then, if `mean` or `std` is given, `(x / 255 - mean) / std` per channel.

  Args:
    input_shape: `(H, W, C)`.
    mean: None, a float or C floats on the [0, 1] scale.
    std: None, a float or C floats > 0 on the [0, 1] scale.

  Returns:
    `(inputs, x)`: the `keras.Input` named "image" (float32 `[batch, H, W, C]`, values in
    [0, 255]) and the normalized float32 tensor `[batch, H, W, C]`.

  Raises:
    ModelError: a bad `mean` / `std` (wrong length, non-finite, std <= 0).
  """
  keras = keras2.keras()
  channels = input_shape[-1]
  inputs = keras.Input(shape=tuple(input_shape), dtype="float32", name=INPUT_NAME)
  x = keras.layers.Rescaling(1.0 / 255.0, name="rescale")(inputs)
  if mean is not None or std is not None:
    mean = _per_channel(0.0 if mean is None else mean, channels, "mean")
    std = _per_channel(1.0 if std is None else std, channels, "std")
    if any(s <= 0 for s in std):
      raise ModelError(f"std must be > 0, got {std!r}")
    x = keras.layers.Rescaling(
      scale=[1.0 / s for s in std], offset=[-m / s for m, s in zip(mean, std)], name="normalize"
    )(x)
  return inputs, x


def conv(
  filters,
  kernel_size,
  strides=1,
  padding="same",
  use_bias=False,
  weight_decay=0.0,
  kernel_initializer="he_normal",
  name=None,
):
  """A `Conv2D` with the zoo's defaults: no bias (a BatchNorm follows), L2 on the kernel.

  Args:
    filters: output channels.
    kernel_size: int or pair.
    strides: int or pair.
    padding: "same" or "valid".
    use_bias: whether the conv has a bias.
    weight_decay: λ of `l2` (0 = none).
    kernel_initializer: a Keras initializer name or a fresh instance (never share one instance
      between layers: an unseeded Keras 2 initializer instance returns the same values on every
      call).
    name: layer name.

  Returns:
    A `keras.layers.Conv2D`.
  """
  keras = keras2.keras()
  return keras.layers.Conv2D(
    filters,
    kernel_size,
    strides=strides,
    padding=padding,
    use_bias=use_bias,
    kernel_initializer=kernel_initializer,
    kernel_regularizer=l2(weight_decay),
    name=name,
  )


def dense(units, weight_decay=0.0, kernel_initializer="glorot_uniform", name=None):
  """A `Dense` with bias and L2 on the kernel (no activation: logits or followed by ReLU)."""
  keras = keras2.keras()
  return keras.layers.Dense(
    units, kernel_initializer=kernel_initializer, kernel_regularizer=l2(weight_decay), name=name
  )


def batch_norm(momentum=0.9, epsilon=1e-5, gamma_zero=False, name=None):
  """A `BatchNormalization` over channels (last axis).

  Args:
    momentum: moving-average decay (0.9 as the TPU / torchvision ResNets; Keras' 0.99 default
      adapts too slowly for 10,000-step runs).
    epsilon: variance epsilon (1e-5 as torchvision / the TPU ResNet).
    gamma_zero: initialize γ to 0 (the last BN of a residual block, Goyal et al. 2017).
    name: layer name.

  Returns:
    A `keras.layers.BatchNormalization`.
  """
  keras = keras2.keras()
  return keras.layers.BatchNormalization(
    axis=-1,
    momentum=momentum,
    epsilon=epsilon,
    gamma_initializer="zeros" if gamma_zero else "ones",
    name=name,
  )


def relu(name=None):
  """A `ReLU` layer."""
  return keras2.keras().layers.ReLU(name=name)


def param_counts(model):
  """Trainable and non-trainable parameter counts of a Keras model.

  Args:
    model: a built `keras.Model`.

  Returns:
    `(trainable, non_trainable)` ints. BatchNorm's γ, β are trainable; its moving mean and
    variance are non-trainable (PyTorch counts only the former as parameters).
  """
  trainable = sum(int(w.shape.num_elements()) for w in model.trainable_weights)
  non_trainable = sum(int(w.shape.num_elements()) for w in model.non_trainable_weights)
  return trainable, non_trainable


def classifier_head(x, num_classes, weight_decay=0.0, name="logits"):
  """Global average pooling then a `Dense(num_classes)` to logits `[batch, num_classes]`."""
  keras = keras2.keras()
  x = keras.layers.GlobalAveragePooling2D(name="avg_pool")(x)
  return dense(num_classes, weight_decay=weight_decay, name=name)(x)
