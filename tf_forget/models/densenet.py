"""DenseNet-BC for CIFAR (Huang et al. 2017, "Densely Connected Convolutional Networks"), as 003.

003 (Liebenwein et al., "Lost in Pruning", appendix B, Table 3) prunes a "DenseNet22" on
CIFAR-10 trained with torchprune (003 B.1, docs/papers.md; docs/spec.md §6.5). torchprune's
`densenet22`
(`src/torchprune/torchprune/util/models/cnn/models/cifar/densenet.py`, from
bearpaw/pytorch-classification) is DenseNet-BC with depth L = 22, growth rate k = 12 and compression
0.5 (`compressionRate=2`), no dropout:

  * conv1: 3×3 conv (no bias), 2k = 24 channels — no BN / ReLU after it (each dense layer
    starts with its own BN-ReLU);
  * three dense blocks of n = (L − 4) / 6 = 3 bottleneck layers; a layer is
    BN-ReLU-conv1×1(4k)-BN-ReLU-conv3×3(k), its k new channels concatenated to its input;
  * between the blocks a transition BN-ReLU-conv1×1(⌊C / 2⌋)-AvgPool(2×2, stride 2);
  * final BN-ReLU, average pooling over the 8×8 map (global on 32×32 inputs), dense logits.

Channels on 32×32 inputs: 24 → 60 (block 1) → 30 → 66 (block 2) → 33 → 69 (block 3).

Here: the same layers (`Conv2D` without bias, `BatchNormalization`, `ReLU`, `Concatenate`,
`AveragePooling2D`, `GlobalAveragePooling2D`, `Dense`); BN momentum 0.9 / epsilon 1e-5
(PyTorch's defaults); L2 (`weight_decay`) on conv and dense kernels; the zoo's Keras
initializers (he_normal convs, glorot dense) rather than the reference's
normal(0, √(2 / (k²·C_out))) convs and PyTorch's default `Linear` init. Any input of at least
4×4 works (two poolings); CIFAR is 32×32×3.

Parameter count with 10 classes (trainable; BN moving statistics not counted, as PyTorch does
not): DenseNet-22 (k = 12) 71,686 = convs 68,994 + BN γ, β 1,992 + dense 700; the BN moving
statistics add 1,992 non-trainable weights. tests/models/densenet_test.py recounts it layer by
layer from the list above.
"""

import math

from tf_forget.compat import keras2
from tf_forget.models import model_kit

BOTTLENECK_WIDTH = 4  # the 1×1 conv of a bottleneck layer has 4k channels (Huang et al. §3)


def bottleneck_layer(x, growth_rate, weight_decay, name):
  """One DenseNet-BC layer: BN-ReLU-conv1×1(4k)-BN-ReLU-conv3×3(k), concatenated to `x`.

  Args:
    x: input `[batch, H, W, C]`.
    growth_rate: k, the channels the layer adds.
    weight_decay: λ of `model_kit.l2`.
    name: layer name prefix.

  Returns:
    `[batch, H, W, C + k]`: `x` then the k new channels (torch.cat((x, out), 1)).
  """
  keras = keras2.keras()
  y = model_kit.batch_norm(name=f"{name}_bn1")(x)
  y = model_kit.relu(name=f"{name}_relu1")(y)
  y = model_kit.conv(
    BOTTLENECK_WIDTH * growth_rate,
    1,
    padding="valid",
    weight_decay=weight_decay,
    name=f"{name}_conv1",
  )(y)
  y = model_kit.batch_norm(name=f"{name}_bn2")(y)
  y = model_kit.relu(name=f"{name}_relu2")(y)
  y = model_kit.conv(growth_rate, 3, weight_decay=weight_decay, name=f"{name}_conv2")(y)
  return keras.layers.Concatenate(axis=-1, name=f"{name}_concat")([x, y])


def transition(x, channels, weight_decay, name):
  """BN-ReLU-conv1×1(`channels`)-AvgPool(2×2, stride 2) between two dense blocks.

  Args:
    x: input `[batch, H, W, C]`.
    channels: output channels (⌊C · compression⌋).
    weight_decay: λ of `model_kit.l2`.
    name: layer name prefix.

  Returns:
    `[batch, ⌊H / 2⌋, ⌊W / 2⌋, channels]`.
  """
  keras = keras2.keras()
  y = model_kit.batch_norm(name=f"{name}_bn")(x)
  y = model_kit.relu(name=f"{name}_relu")(y)
  y = model_kit.conv(channels, 1, padding="valid", weight_decay=weight_decay, name=f"{name}_conv")(
    y
  )
  return keras.layers.AveragePooling2D(2, strides=2, name=f"{name}_pool")(y)


def densenet(
  input_shape,
  num_classes,
  *,
  depth=22,
  growth_rate=12,
  compression=0.5,
  weight_decay=0.0,
  mean=None,
  std=None,
):
  """Builds the CIFAR DenseNet-BC of `depth` layers and growth rate `growth_rate`.

  Args:
    input_shape: `(H, W, C)`, H and W >= 4 (32×32×3 for CIFAR-10).
    num_classes: number of logits.
    depth: L = 6n + 4 (22, 40, 100, ...): n bottleneck layers per dense block.
    growth_rate: k >= 1, the channels each bottleneck layer adds (12 for DenseNet-22).
    compression: θ in (0, 1], a transition keeps ⌊θ·C⌋ channels (0.5: torchprune's
      `compressionRate=2`).
    weight_decay: λ of `keras.regularizers.l2(λ)` on every conv / dense kernel (ε = 2λ in
      docs/spec.md §6.1's notation, see `model_kit.l2`; a PyTorch SGD `weight_decay=1e-4` is λ =
      5e-5). Default 0.
    mean: optional per-channel mean on the [0, 1] scale (`model_kit.image_input`).
    std: optional per-channel std on the [0, 1] scale.

  Returns:
    A `keras.Model` named `densenet{depth}`: float32 "image" `[batch, H, W, C]` in [0, 255] ->
    logits `[batch, num_classes]`.

  Raises:
    model_kit.ModelError: a bad depth, growth rate, compression, shape or option value.
  """
  keras = keras2.keras()
  if isinstance(depth, bool) or not isinstance(depth, int) or depth < 10 or (depth - 4) % 6:
    raise model_kit.ModelError(f"densenet depth must be an int 6n + 4 >= 10, got {depth!r}")
  if isinstance(growth_rate, bool) or not isinstance(growth_rate, int) or growth_rate < 1:
    raise model_kit.ModelError(f"densenet growth_rate must be a positive int, got {growth_rate!r}")
  if (
    isinstance(compression, bool)
    or not isinstance(compression, (int, float))
    or not (0 < compression <= 1)
  ):
    raise model_kit.ModelError(f"densenet compression must be in (0, 1], got {compression!r}")
  input_shape = model_kit.check_input_shape(input_shape, min_size=4)
  num_classes = model_kit.check_num_classes(num_classes)
  model_kit.check_weight_decay(weight_decay)
  layers_per_block = (depth - 4) // 6

  inputs, x = model_kit.image_input(input_shape, mean=mean, std=std)
  channels = 2 * growth_rate
  x = model_kit.conv(channels, 3, weight_decay=weight_decay, name="conv1")(x)
  for block in range(1, 4):
    for i in range(layers_per_block):
      x = bottleneck_layer(x, growth_rate, weight_decay, name=f"block{block}_layer{i + 1}")
      channels += growth_rate
    if block < 3:
      channels = int(math.floor(channels * compression))
      x = transition(x, channels, weight_decay, name=f"transition{block}")
  x = model_kit.batch_norm(name="final_bn")(x)
  x = model_kit.relu(name="final_relu")(x)
  logits = model_kit.classifier_head(x, num_classes, weight_decay=weight_decay)
  return keras.Model(inputs, logits, name=f"densenet{depth}")
