"""ImageNet-style ResNets (He et al. 2016, "Deep Residual Learning", Table 1): 18 and 50.

000 §2.4 trains a ResNet-50 on ImageNet and a ResNet-18 on CelebA (also 004 §2); neither paper
gives more detail than "ResNet (He et al., 2015) ... with batch normalization", so this follows
the widely used reference implementations whose parameter counts are the published ones:

  * ResNet v1.5: in a bottleneck the stride sits on the 3×3 conv (torchvision, the TensorFlow
    TPU / Model Garden ResNet-50 that 000's Google authors trained), not on the first 1×1 conv
    as in He et al.'s Caffe model; parameter counts do not depend on where the stride sits.
  * Convs have no bias (each is followed by BatchNorm: γ, β trainable; moving mean / variance
    non-trainable). Shortcuts are identity, or a 1×1 conv + BN projection where the shape
    changes (He et al. option B).
  * Stem: 7×7/2 conv with 3-pixel zero padding, BN, ReLU, 3×3/2 max pool with 1-pixel padding;
    strided 3×3 convs are preceded by an explicit symmetric `ZeroPadding2D(1)` and use "valid"
    padding, so the geometry matches the PyTorch / Caffe models (TF "same" pads stride-2 convs
    asymmetrically).
  * BN momentum 0.9, epsilon 1e-5 (torchvision; the TPU ResNet uses decay 0.9).
  * `zero_init_residual` (default True) starts each block's last BN at γ = 0 (Goyal et al.
    2017, as the TPU ResNet-50); it changes no parameter count.

Parameter counts (1000 classes, 224×224×3): ResNet-50 25,557,032 trainable (= torchvision's
`resnet50`) plus 53,120 non-trainable BN statistics; `keras.applications.ResNet50` reports
25,636,712 in total because its convs also carry biases (26,560 more, one per conv output
channel) and its total includes the 53,120 BN statistics. ResNet-18: 11,689,512 trainable
(= torchvision's `resnet18`) plus 9,600 non-trainable. Any input size works (global average
pooling); CelebA uses its native 218×178 (docs/spec.md §2.4).
"""

from tf_forget.compat import keras2
from tf_forget.models import model_kit

# Blocks per stage (He et al. 2016, Table 1).
STAGES = {18: (2, 2, 2, 2), 34: (3, 4, 6, 3), 50: (3, 4, 6, 3), 101: (3, 4, 23, 3)}
STAGE_FILTERS = (64, 128, 256, 512)
BOTTLENECK_EXPANSION = 4


def _conv_bn(x, filters, kernel_size, strides, weight_decay, name, relu=True, gamma_zero=False):
  """Conv (symmetric padding) -> BN (-> ReLU). Returns the output tensor."""
  keras = keras2.keras()
  if kernel_size > 1 and strides > 1:
    x = keras.layers.ZeroPadding2D(kernel_size // 2, name=f"{name}_pad")(x)
    padding = "valid"
  else:
    padding = "same"
  x = model_kit.conv(
    filters,
    kernel_size,
    strides=strides,
    padding=padding,
    weight_decay=weight_decay,
    name=f"{name}_conv",
  )(x)
  x = model_kit.batch_norm(gamma_zero=gamma_zero, name=f"{name}_bn")(x)
  if relu:
    x = model_kit.relu(name=f"{name}_relu")(x)
  return x


def _shortcut(x, filters, strides, weight_decay, name):
  """Identity, or a 1×1 conv + BN projection when the shape changes (option B)."""
  if strides == 1 and x.shape[-1] == filters:
    return x
  return _conv_bn(x, filters, 1, strides, weight_decay, f"{name}_proj", relu=False)


def basic_block(x, filters, strides, weight_decay, zero_init_residual, name):
  """Two 3×3 convs (ResNet-18/34; He et al. 2016 Fig. 5 left).

  Args:
    x: input `[batch, H, W, C]`.
    filters: output channels.
    strides: stride of the first conv (and of the projection).
    weight_decay: λ of `model_kit.l2`.
    zero_init_residual: start the last BN at γ = 0.
    name: layer name prefix.

  Returns:
    `[batch, ceil(H / strides), ceil(W / strides), filters]`.
  """
  keras = keras2.keras()
  shortcut = _shortcut(x, filters, strides, weight_decay, name)
  y = _conv_bn(x, filters, 3, strides, weight_decay, f"{name}_1")
  y = _conv_bn(
    y, filters, 3, 1, weight_decay, f"{name}_2", relu=False, gamma_zero=zero_init_residual
  )
  y = keras.layers.Add(name=f"{name}_add")([shortcut, y])
  return model_kit.relu(name=f"{name}_out")(y)


def bottleneck_block(x, filters, strides, weight_decay, zero_init_residual, name):
  """1×1 -> 3×3 (strided, v1.5) -> 1×1 ×4 convs (ResNet-50; He et al. 2016 Fig. 5 right).

  Args:
    x: input `[batch, H, W, C]`.
    filters: bottleneck width; the block outputs `4 * filters` channels.
    strides: stride of the 3×3 conv (and of the projection).
    weight_decay: λ of `model_kit.l2`.
    zero_init_residual: start the last BN at γ = 0.
    name: layer name prefix.

  Returns:
    `[batch, ceil(H / strides), ceil(W / strides), 4 * filters]`.
  """
  keras = keras2.keras()
  shortcut = _shortcut(x, BOTTLENECK_EXPANSION * filters, strides, weight_decay, name)
  y = _conv_bn(x, filters, 1, 1, weight_decay, f"{name}_1")
  y = _conv_bn(y, filters, 3, strides, weight_decay, f"{name}_2")
  y = _conv_bn(
    y,
    BOTTLENECK_EXPANSION * filters,
    1,
    1,
    weight_decay,
    f"{name}_3",
    relu=False,
    gamma_zero=zero_init_residual,
  )
  y = keras.layers.Add(name=f"{name}_add")([shortcut, y])
  return model_kit.relu(name=f"{name}_out")(y)


def resnet(
  input_shape,
  num_classes,
  *,
  depth=50,
  zero_init_residual=True,
  weight_decay=0.0,
  mean=None,
  std=None,
):
  """Builds an ImageNet-style ResNet of `depth` 18, 34, 50 or 101.

  Args:
    input_shape: `(H, W, C)`, any size (224×224×3 for ImageNet, 218×178×3 for CelebA).
    num_classes: number of logits.
    depth: 18 or 34 (basic blocks), 50 or 101 (bottleneck blocks).
    zero_init_residual: initialize each block's last BN γ to 0 (Goyal et al. 2017).
    weight_decay: λ of `keras.regularizers.l2(λ)` on every conv / dense kernel (ε = 2λ in
      docs/spec.md §6.1's notation, see `model_kit.l2`). Default 0.
    mean: optional per-channel mean on the [0, 1] scale (`model_kit.image_input`).
    std: optional per-channel std on the [0, 1] scale.

  Returns:
    A `keras.Model` named `resnet{depth}`: float32 "image" `[batch, H, W, C]` in [0, 255] ->
    logits `[batch, num_classes]`.

  Raises:
    model_kit.ModelError: an unsupported depth or a bad shape / option value.
  """
  keras = keras2.keras()
  if depth not in STAGES:
    raise model_kit.ModelError(f"resnet depth must be one of {sorted(STAGES)}, got {depth!r}")
  input_shape = model_kit.check_input_shape(input_shape)
  num_classes = model_kit.check_num_classes(num_classes)
  block = basic_block if depth < 50 else bottleneck_block

  inputs, x = model_kit.image_input(input_shape, mean=mean, std=std)
  x = _conv_bn(x, 64, 7, 2, weight_decay, "stem")
  x = keras.layers.ZeroPadding2D(1, name="stem_pool_pad")(x)
  x = keras.layers.MaxPooling2D(3, strides=2, name="stem_pool")(x)
  for stage, (blocks, filters) in enumerate(zip(STAGES[depth], STAGE_FILTERS), start=1):
    for i in range(blocks):
      strides = 2 if stage > 1 and i == 0 else 1
      x = block(
        x, filters, strides, weight_decay, zero_init_residual, name=f"stage{stage}_block{i + 1}"
      )
  logits = model_kit.classifier_head(x, num_classes, weight_decay=weight_decay)
  return keras.Model(inputs, logits, name=f"resnet{depth}")


def resnet18(
  input_shape, num_classes, *, zero_init_residual=True, weight_decay=0.0, mean=None, std=None
):
  """ResNet-18 (000 §2.4 / 004 §2: CelebA). Args as `resnet`."""
  return resnet(
    input_shape,
    num_classes,
    depth=18,
    zero_init_residual=zero_init_residual,
    weight_decay=weight_decay,
    mean=mean,
    std=std,
  )


def resnet50(
  input_shape, num_classes, *, zero_init_residual=True, weight_decay=0.0, mean=None, std=None
):
  """ResNet-50 v1.5 (000 §2.4: ImageNet). Args as `resnet`."""
  return resnet(
    input_shape,
    num_classes,
    depth=50,
    zero_init_residual=zero_init_residual,
    weight_decay=weight_decay,
    mean=mean,
    std=std,
  )
