"""CIFAR ResNets 6n + 2 (He et al. 2016, "Deep Residual Learning", §4.2): 20, 32, 44, 56, 110.

002 §6 trains ResNet-{20, 32, 44, 56, 110} on CIFAR-10 / CIFAR-100 (via ShrinkBench, §6.1).
Architecture as He et al. §4.2:

  * 3×3 conv, 16 channels, BN, ReLU;
  * three stages of n basic blocks (two 3×3 convs each, post-activation: conv-BN-ReLU-conv-BN,
    add, ReLU) with 16, 32, 64 channels on 32×32, 16×16, 8×8 maps; the first conv of stages 2
    and 3 has stride 2;
  * global average pooling, dense logits: 6n + 2 weighted layers.

Shortcuts: option A by default — "the shortcut still performs identity mapping, with extra zero
entries padded for increasing dimensions" (He et al. §3.3 (A), used for all CIFAR ResNets in
§4.2), i.e. parameter-free. It is built from standard layers only: `MaxPooling2D(1, strides=2)`
(= `x[:, ::2, ::2]`), then the channel axis zero-padded via `Permute` -> `ZeroPadding2D` ->
`Permute` (half of the new channels on each side, as the common PyTorch port). Option B (a
1×1 conv + BN projection where dimensions increase) is `shortcut="B"`.

Convs have no bias; BN γ, β trainable, moving statistics non-trainable; momentum 0.9, epsilon
1e-5. Strided 3×3 convs use an explicit symmetric `ZeroPadding2D(1)`.

Parameter counts with 10 classes and option A (trainable; the BN statistics are not counted):
20: 269,722; 32: 464,154; 44: 658,586; 56: 853,018; 110: 1,727,962 — He et al. Table 6's
0.27M, 0.46M, 0.66M, 0.85M, 1.7M (also without BN γ, β, so the rounding cannot tell).
"""

from tf_forget.compat import keras2
from tf_forget.models import model_kit

STAGE_FILTERS = (16, 32, 64)
SHORTCUTS = ("A", "B")


def _conv_bn(x, filters, strides, weight_decay, name, relu=True):
  """3×3 conv (symmetric padding) -> BN (-> ReLU)."""
  keras = keras2.keras()
  padding = "same"
  if strides > 1:
    x = keras.layers.ZeroPadding2D(1, name=f"{name}_pad")(x)
    padding = "valid"
  x = model_kit.conv(
    filters, 3, strides=strides, padding=padding, weight_decay=weight_decay, name=f"{name}_conv"
  )(x)
  x = model_kit.batch_norm(name=f"{name}_bn")(x)
  if relu:
    x = model_kit.relu(name=f"{name}_relu")(x)
  return x


def _shortcut_a(x, filters, strides, name):
  """Option A: subsample, then zero-pad the channels from C to `filters` (no parameters)."""
  keras = keras2.keras()
  if strides > 1:
    x = keras.layers.MaxPooling2D(1, strides=strides, name=f"{name}_subsample")(x)
  extra = filters - x.shape[-1]
  if extra:
    x = keras.layers.Permute((3, 1, 2), name=f"{name}_to_cf")(x)  # [batch, C, H, W]
    x = keras.layers.ZeroPadding2D(
      ((extra // 2, extra - extra // 2), (0, 0)), data_format="channels_last", name=f"{name}_pad_c"
    )(x)
    x = keras.layers.Permute((2, 3, 1), name=f"{name}_to_cl")(x)  # [batch, H, W, filters]
  return x


def basic_block(x, filters, strides, shortcut, weight_decay, name):
  """Two 3×3 convs with a post-activation residual (He et al. 2016 Fig. 2).

  Args:
    x: input `[batch, H, W, C]`.
    filters: output channels.
    strides: stride of the first conv.
    shortcut: "A" (zero padding) or "B" (projection) where the shape changes.
    weight_decay: λ of `model_kit.l2`.
    name: layer name prefix.

  Returns:
    `[batch, ceil(H / strides), ceil(W / strides), filters]`.
  """
  keras = keras2.keras()
  if strides == 1 and x.shape[-1] == filters:
    skip = x
  elif shortcut == "A":
    skip = _shortcut_a(x, filters, strides, name)
  else:
    skip = model_kit.conv(
      filters,
      1,
      strides=strides,
      padding="valid",
      weight_decay=weight_decay,
      name=f"{name}_proj_conv",
    )(x)
    skip = model_kit.batch_norm(name=f"{name}_proj_bn")(skip)
  y = _conv_bn(x, filters, strides, weight_decay, f"{name}_1")
  y = _conv_bn(y, filters, 1, weight_decay, f"{name}_2", relu=False)
  y = keras.layers.Add(name=f"{name}_add")([skip, y])
  return model_kit.relu(name=f"{name}_out")(y)


def cifar_resnet(
  input_shape, num_classes, *, depth=20, shortcut="A", weight_decay=0.0, mean=None, std=None
):
  """Builds the CIFAR ResNet of `depth` = 6n + 2 layers.

  Args:
    input_shape: `(H, W, C)`, H and W >= 4 (32×32×3 for CIFAR).
    num_classes: number of logits.
    depth: 6n + 2 (20, 32, 44, 56, 110, ...).
    shortcut: "A" (parameter-free zero padding, He et al.'s CIFAR choice) or "B"
      (1×1 conv + BN projection) where dimensions increase.
    weight_decay: λ of `keras.regularizers.l2(λ)` on every conv / dense kernel (ε = 2λ in
      docs/spec.md §6.1's notation, see `model_kit.l2`; 002 §6.1's "weight decay 0.0005" is ε, i.e.
      `weight_decay=2.5e-4`). Default 0.
    mean: optional per-channel mean on the [0, 1] scale (`model_kit.image_input`).
    std: optional per-channel std on the [0, 1] scale.

  Returns:
    A `keras.Model` named `cifar_resnet{depth}`: float32 "image" `[batch, H, W, C]` in
    [0, 255] -> logits `[batch, num_classes]`.

  Raises:
    model_kit.ModelError: a bad depth, shortcut, shape or option value.
  """
  keras = keras2.keras()
  if isinstance(depth, bool) or not isinstance(depth, int) or depth < 8 or (depth - 2) % 6:
    raise model_kit.ModelError(f"cifar_resnet depth must be an int 6n + 2 >= 8, got {depth!r}")
  if shortcut not in SHORTCUTS:
    raise model_kit.ModelError(f"shortcut must be one of {SHORTCUTS}, got {shortcut!r}")
  input_shape = model_kit.check_input_shape(input_shape, min_size=4)
  num_classes = model_kit.check_num_classes(num_classes)
  blocks = (depth - 2) // 6

  inputs, x = model_kit.image_input(input_shape, mean=mean, std=std)
  x = _conv_bn(x, STAGE_FILTERS[0], 1, weight_decay, "stem")
  for stage, filters in enumerate(STAGE_FILTERS, start=1):
    for i in range(blocks):
      strides = 2 if stage > 1 and i == 0 else 1
      x = basic_block(
        x, filters, strides, shortcut, weight_decay, name=f"stage{stage}_block{i + 1}"
      )
  logits = model_kit.classifier_head(x, num_classes, weight_decay=weight_decay)
  return keras.Model(inputs, logits, name=f"cifar_resnet{depth}")
