"""Wide ResNets WRN-d-k (Zagoruyko & Komodakis 2016, "Wide Residual Networks"), for CIFAR-10.

000 §2.4 trains "a wide ResNet model (Zagoruyko & Komodakis, 2016) on CIFAR-10" without naming
depth or width; the registry offers `wrn` (options `depth`, `width`) and the presets `wrn_28_10`
(the paper's headline CIFAR model) and `wrn_16_8`.

Architecture (Zagoruyko & Komodakis 2016, Table 1, and their reference code):

  * conv1: 3×3 conv, 16 channels;
  * three groups of n = (d − 4) / 6 pre-activation blocks B(3,3) with 16k, 32k, 64k channels,
    strides 1, 2, 2; a block is BN-ReLU-conv3×3-BN-ReLU-(dropout)-conv3×3 plus the shortcut;
    the shortcut is the identity, or — where channels or stride change — a 1×1 conv of the
    block's pre-activated input (BN-ReLU(x)), as the reference code does;
  * final BN-ReLU, global average pooling, dense logits.

Convs have no bias; BN γ, β are trainable, the moving statistics non-trainable; BN momentum
0.9, epsilon 1e-5 (PyTorch defaults of the reference code). Strided 3×3 convs use an explicit
symmetric `ZeroPadding2D(1)` (as PyTorch's padding=1). `dropout_rate` is the paper's dropout
between the two convs of a block (0.3 in its dropout experiments; default 0 as 000 does not
mention dropout).

Parameter counts with 10 classes (trainable, BN statistics excluded): WRN-28-10 36,479,194 and
WRN-16-8 10,961,370 — the paper's "36.5M" (Table 2 and text) and "11.0M" (text). Any input of
at least 4×4 works; CIFAR is 32×32×3.
"""

from tf_forget.compat import keras2
from tf_forget.models import model_kit

BASE_WIDTHS = (16, 32, 64)


def _pad_conv(x, filters, strides, weight_decay, name):
  """3×3 conv with PyTorch-like symmetric padding also when strided."""
  keras = keras2.keras()
  padding = "same"
  if strides > 1:
    x = keras.layers.ZeroPadding2D(1, name=f"{name}_pad")(x)
    padding = "valid"
  return model_kit.conv(
    filters, 3, strides=strides, padding=padding, weight_decay=weight_decay, name=name
  )(x)


def wide_block(x, filters, strides, dropout_rate, weight_decay, name):
  """A pre-activation wide block B(3,3) (Zagoruyko & Komodakis 2016, Fig. 1 (d)).

  Args:
    x: input `[batch, H, W, C]`.
    filters: output channels.
    strides: stride of the first conv and of the shortcut projection.
    dropout_rate: dropout between the two convs (0 = none).
    weight_decay: λ of `model_kit.l2`.
    name: layer name prefix.

  Returns:
    `[batch, ceil(H / strides), ceil(W / strides), filters]`.
  """
  keras = keras2.keras()
  pre = model_kit.batch_norm(name=f"{name}_bn1")(x)
  pre = model_kit.relu(name=f"{name}_relu1")(pre)
  if strides == 1 and x.shape[-1] == filters:
    shortcut = x
  else:
    shortcut = model_kit.conv(
      filters, 1, strides=strides, padding="valid", weight_decay=weight_decay, name=f"{name}_proj"
    )(pre)
  y = _pad_conv(pre, filters, strides, weight_decay, f"{name}_conv1")
  y = model_kit.batch_norm(name=f"{name}_bn2")(y)
  y = model_kit.relu(name=f"{name}_relu2")(y)
  if dropout_rate:
    y = keras.layers.Dropout(dropout_rate, name=f"{name}_dropout")(y)
  y = _pad_conv(y, filters, 1, weight_decay, f"{name}_conv2")
  return keras.layers.Add(name=f"{name}_add")([shortcut, y])


def wide_resnet(
  input_shape,
  num_classes,
  *,
  depth=28,
  width=10,
  dropout_rate=0.0,
  weight_decay=0.0,
  mean=None,
  std=None,
):
  """Builds WRN-`depth`-`width`.

  Args:
    input_shape: `(H, W, C)`, H and W >= 4 (32×32×3 for CIFAR-10).
    num_classes: number of logits.
    depth: total depth d, with (d − 4) divisible by 6 (10, 16, 22, 28, 40, ...).
    width: widening factor k >= 1.
    dropout_rate: dropout between the convs of each block, in [0, 1).
    weight_decay: λ of `keras.regularizers.l2(λ)` on every conv / dense kernel (ε = 2λ in
      docs/spec.md §6.1's notation, see `model_kit.l2`). Default 0.
    mean: optional per-channel mean on the [0, 1] scale (`model_kit.image_input`).
    std: optional per-channel std on the [0, 1] scale.

  Returns:
    A `keras.Model` named `wrn_{depth}_{width}`: float32 "image" `[batch, H, W, C]` in
    [0, 255] -> logits `[batch, num_classes]`.

  Raises:
    model_kit.ModelError: a bad depth, width, shape or option value.
  """
  keras = keras2.keras()
  if isinstance(depth, bool) or not isinstance(depth, int) or depth < 10 or (depth - 4) % 6:
    raise model_kit.ModelError(f"wrn depth must be an int 6n + 4 >= 10, got {depth!r}")
  if isinstance(width, bool) or not isinstance(width, int) or width < 1:
    raise model_kit.ModelError(f"wrn width must be a positive int, got {width!r}")
  dropout_rate = model_kit.check_dropout_rate(dropout_rate)
  input_shape = model_kit.check_input_shape(input_shape, min_size=4)
  num_classes = model_kit.check_num_classes(num_classes)
  blocks = (depth - 4) // 6

  inputs, x = model_kit.image_input(input_shape, mean=mean, std=std)
  x = model_kit.conv(BASE_WIDTHS[0], 3, weight_decay=weight_decay, name="conv1")(x)
  for group, base in enumerate(BASE_WIDTHS, start=1):
    for i in range(blocks):
      strides = 2 if group > 1 and i == 0 else 1
      x = wide_block(
        x, base * width, strides, dropout_rate, weight_decay, name=f"group{group}_block{i + 1}"
      )
  x = model_kit.batch_norm(name="final_bn")(x)
  x = model_kit.relu(name="final_relu")(x)
  logits = model_kit.classifier_head(x, num_classes, weight_decay=weight_decay)
  return keras.Model(inputs, logits, name=f"wrn_{depth}_{width}")
