"""CIFAR VGG with BatchNorm (Simonyan & Zisserman 2014, configuration "D" = VGG-16), as 003 uses.

003 (Liebenwein et al., "Lost in Pruning", appendix B, Table 3) prunes a "VGG16" on CIFAR-10
trained with torchprune (003 B.1, docs/papers.md; docs/spec.md §6.5). The
released configuration `paper/lost/param/cifar/vgg16.yaml` names the network `vgg16_bn`:
torchprune's CIFAR zoo is bearpaw/pytorch-classification's `models/cifar/vgg.py` ("VGG for
CIFAR10. FC layers are removed."), which builds:

  * the feature stack of configuration "D" — 3×3 convs (stride 1, padding 1, **with bias**) of
    64, 64, M, 128, 128, M, 256, 256, 256, M, 512, 512, 512, M, 512, 512, 512, M, every conv
    followed by BatchNorm and ReLU, M a 2×2 max pooling with stride 2;
  * on 32×32 inputs a 1×1×512 map, flattened, and a single `Linear(512, num_classes)` — no
    hidden fully connected layers (unlike ImageNet VGG's 4096-4096 head).

Here: the same layers (`Conv2D` with bias + `BatchNormalization` + `ReLU`, `MaxPooling2D`,
`Flatten`, `Dense`); BN momentum 0.9 / epsilon 1e-5 (PyTorch's defaults); L2 (`weight_decay`)
on conv and dense kernels only; Keras initializers of the zoo (he_normal convs, glorot dense)
rather than bearpaw's normal(0, √(2 / (9·C_out))) convs and normal(0, 0.01) classifier. The
input must be at least 32×32 (five poolings); at 32×32 the flattened features are 512 wide
exactly as the reference's classifier expects (larger inputs widen the classifier).

Parameter count with 10 classes (trainable; BN moving statistics are not counted, as PyTorch
does not): VGG-16 14,728,266 = 13 convs 14,714,688 (kernels 14,710,464 + biases 4,224) + BN γ, β
8,448 + dense 5,130 (tests/models/vgg_test.py recounts it layer by layer from the list above);
the BN moving statistics add 8,448 non-trainable weights.
"""

from tf_forget.compat import keras2
from tf_forget.models import model_kit

POOL = "M"
# bearpaw/pytorch-classification models/cifar/vgg.py `cfg` (the ImageNet VGG configurations).
CONFIGS = {
  11: (64, POOL, 128, POOL, 256, 256, POOL, 512, 512, POOL, 512, 512, POOL),
  13: (64, 64, POOL, 128, 128, POOL, 256, 256, POOL, 512, 512, POOL, 512, 512, POOL),
  16: (64, 64, POOL, 128, 128, POOL, 256, 256, 256, POOL, 512, 512, 512, POOL, 512, 512, 512, POOL),
  19: (
    64,
    64,
    POOL,
    128,
    128,
    POOL,
    256,
    256,
    256,
    256,
    POOL,
    512,
    512,
    512,
    512,
    POOL,
    512,
    512,
    512,
    512,
    POOL,
  ),
}
MIN_SIZE = 32  # five 2×2 poolings


def features(x, config, weight_decay=0.0):
  """The conv-BN-ReLU / max-pool stack of a VGG configuration.

  Args:
    x: input `[batch, H, W, C]` (normalized pixels).
    config: a sequence of output channels (a conv3×3-BN-ReLU each) and `POOL` (2×2 max pooling,
      stride 2), e.g. `CONFIGS[16]`.
    weight_decay: λ of `model_kit.l2` on the conv kernels.

  Returns:
    `[batch, H / 2^p, W / 2^p, C_last]` for p poolings (floored as PyTorch's pooling).
  """
  keras = keras2.keras()
  stage, index = 1, 1
  for item in config:
    if item == POOL:
      x = keras.layers.MaxPooling2D(2, strides=2, name=f"pool{stage}")(x)
      stage, index = stage + 1, 1
      continue
    name = f"conv{stage}_{index}"
    x = model_kit.conv(item, 3, use_bias=True, weight_decay=weight_decay, name=name)(x)
    x = model_kit.batch_norm(name=f"{name}_bn")(x)
    x = model_kit.relu(name=f"{name}_relu")(x)
    index += 1
  return x


def vgg(input_shape, num_classes, *, depth=16, weight_decay=0.0, mean=None, std=None):
  """Builds the CIFAR VGG-`depth` with BatchNorm (bearpaw / torchprune `vgg{depth}_bn`).

  Args:
    input_shape: `(H, W, C)`, H and W >= 32 (32×32×3 for CIFAR-10).
    num_classes: number of logits.
    depth: 11, 13, 16 or 19 (configurations "A", "B", "D", "E").
    weight_decay: λ of `keras.regularizers.l2(λ)` on every conv / dense kernel (ε = 2λ in
      docs/spec.md §6.1's notation, see `model_kit.l2`; a PyTorch SGD `weight_decay=5e-4` is λ =
      2.5e-4). Default 0.
    mean: optional per-channel mean on the [0, 1] scale (`model_kit.image_input`).
    std: optional per-channel std on the [0, 1] scale.

  Returns:
    A `keras.Model` named `vgg{depth}`: float32 "image" `[batch, H, W, C]` in [0, 255] ->
    logits `[batch, num_classes]`.

  Raises:
    model_kit.ModelError: a bad depth, shape or option value.
  """
  keras = keras2.keras()
  if isinstance(depth, bool) or depth not in CONFIGS:
    raise model_kit.ModelError(f"vgg depth must be one of {sorted(CONFIGS)}, got {depth!r}")
  input_shape = model_kit.check_input_shape(input_shape, min_size=MIN_SIZE)
  num_classes = model_kit.check_num_classes(num_classes)
  model_kit.check_weight_decay(weight_decay)

  inputs, x = model_kit.image_input(input_shape, mean=mean, std=std)
  x = features(x, CONFIGS[depth], weight_decay=weight_decay)
  x = keras.layers.Flatten(name="flatten")(x)
  logits = model_kit.dense(num_classes, weight_decay=weight_decay, name="logits")(x)
  return keras.Model(inputs, logits, name=f"vgg{depth}")
