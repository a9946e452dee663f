"""The model registry: a plain dict of names -> builders (CONVENTIONS.md).

    model = model_registry.get("small_cnn", (8, 8, 1), 10, weight_decay=1e-4)

Every builder is `builder(input_shape, num_classes, **options) -> keras.Model` and follows the
contract of `model_kit` (docs/artifacts/models.md): float32 input "image" `[batch, H, W, C]` of raw
pixels in [0, 255], normalized inside the model, logits `[batch, num_classes]`, standard layers
only. Options every model takes: `weight_decay` (λ of Keras `l2`, ε = 2λ in docs/spec.md §6.1),
`mean` and `std` (per channel, [0, 1] scale). Model-specific options are the builder's keyword
arguments (e.g. `depth`, `width` of `wrn`). Unknown names and options raise `model_kit.ModelError`
with a one-line message.

Building is deterministic given `keras.utils.set_random_seed` (the trainer seeds globally;
tests/models/model_registry_test.py checks it).
"""

import inspect

from tf_forget.models import cifar_resnet
from tf_forget.models import densenet
from tf_forget.models import lenet
from tf_forget.models import model_kit
from tf_forget.models import resnet
from tf_forget.models import small_cnn
from tf_forget.models import vgg
from tf_forget.models import wide_resnet

ModelError = model_kit.ModelError


def _preset(builder, name, **fixed):
  """`builder` with some options fixed (e.g. `wrn` at depth 28, width 10), named `name`.

  The fixed options are removed from the returned builder's signature, so passing one of them
  to `get` is an unknown-option error rather than a silent override.

  Args:
    builder: a registry builder.
    name: the preset's registry name (also the Keras model name).
    **fixed: the options to fix.

  Returns:
    A builder function.
  """

  def build(input_shape, num_classes, **options):
    model = builder(input_shape, num_classes, **fixed, **options)
    model._name = name
    return model

  signature = inspect.signature(builder)
  build.__signature__ = signature.replace(
    parameters=[p for key, p in signature.parameters.items() if key not in fixed]
  )
  build.__name__ = name
  build.__doc__ = (
    f"`{builder.__name__}` with " + ", ".join(f"{k}={v!r}" for k, v in fixed.items()) + "."
  )
  return build


MODELS = {
  # 000 §2.4 / 004 §2: CelebA (ResNet-18), ImageNet (ResNet-50).
  "resnet18": resnet.resnet18,
  "resnet50": resnet.resnet50,
  # 000 §2.4: CIFAR-10 wide ResNet; `wrn` takes `depth` and `width`.
  "wrn": wide_resnet.wide_resnet,
  "wrn_28_10": _preset(wide_resnet.wide_resnet, "wrn_28_10", depth=28, width=10),
  "wrn_16_8": _preset(wide_resnet.wide_resnet, "wrn_16_8", depth=16, width=8),
  # 002 §6: CIFAR ResNet-{20, 32, 44, 56, 110}.
  **{
    f"cifar_resnet{depth}": _preset(cifar_resnet.cifar_resnet, f"cifar_resnet{depth}", depth=depth)
    for depth in (20, 32, 44, 56, 110)
  },
  # 003 appendix B (Table 3): torchprune's CIFAR `vgg16_bn` and `densenet22` (DenseNet-BC,
  # k = 12); 003's ResNet20/56/110 and WRN-16-8 are the entries above.
  "vgg16": _preset(vgg.vgg, "vgg16", depth=16),
  "densenet22": _preset(densenet.densenet, "densenet22", depth=22, growth_rate=12),
  # 002 §6: MNIST / Fashion-MNIST.
  "lenet5": lenet.lenet5,
  # The embedded default data set `digits` (8×8×1).
  "small_cnn": small_cnn.small_cnn,
}


def options(name):
  """The option names model `name` accepts (besides `input_shape`, `num_classes`).

  Raises:
    ModelError: unknown name.
  """
  builder = _builder(name)
  return tuple(
    key
    for key in inspect.signature(builder).parameters
    if key not in ("input_shape", "num_classes")
  )


def _builder(name):
  if name not in MODELS:
    raise ModelError(f"unknown model {name!r} (known: {', '.join(sorted(MODELS))})")
  return MODELS[name]


def get(name, input_shape, num_classes, **options_):
  """Builds model `name`.

  Args:
    name: a key of `MODELS`.
    input_shape: `(H, W, C)` of the images (no batch dimension).
    num_classes: number of logits.
    **options_: builder keyword options; `None` values are dropped (unset flags), as in the
      data set registry.

  Returns:
    A `keras.Model` (Keras 2) named `name`: float32 "image" `[batch, H, W, C]` in [0, 255] ->
    logits `[batch, num_classes]`.

  Raises:
    ModelError: unknown name or option, or an option value the model rejects.
  """
  builder = _builder(name)
  accepted = options(name)
  given = {k: v for k, v in options_.items() if v is not None}
  for key in given:
    if key not in accepted:
      raise ModelError(
        f"model {name!r} takes no option {key!r} (options: {', '.join(accepted) or 'none'})"
      )
  model = builder(input_shape, num_classes, **given)
  model._name = name
  return model
