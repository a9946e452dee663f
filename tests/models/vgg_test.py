"""CIFAR VGG-16-BN (003 Table 3, torchprune `vgg16_bn`): parameter count, structure, kernels."""

import numpy as np
import pytest

from tf_forget.compat import keras2
from tf_forget.models import model_kit
from tf_forget.models import model_registry
from tf_forget.models import vgg
from tf_forget.prune import oneshot

keras = keras2.keras()

# bearpaw/pytorch-classification models/cifar/vgg.py cfg "D" (torchprune's CIFAR `vgg16_bn`),
# written out again here rather than taken from `vgg.CONFIGS`.
VGG16_D = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"]


def _expected_params(config, num_classes=10):
  """Trainable count of the reference layout, layer by layer.

  Per conv: 3×3×C_in×C_out kernel + C_out bias (nn.Conv2d's default bias=True) + BN γ, β
  (2·C_out); "M" has no weights; classifier `Linear(512, classes)` with bias.
  """
  total, c_in = 0, 3
  for v in config:
    if v != "M":
      total += 9 * c_in * v + v + 2 * v
      c_in = v
  return total + c_in * num_classes + num_classes


def test_exact_count():
  # 13 convs: kernels 14,710,464 + biases 4,224; BN γβ 8,448; dense 512·10 + 10 = 5,130
  # (by hand; 003 prints no parameter count).
  assert _expected_params(VGG16_D) == 14_728_266
  assert _expected_params(VGG16_D, num_classes=100) == 14_728_266 - 5_130 + 51_300


def test_param_count_and_output_shape():
  model = model_registry.get("vgg16", (32, 32, 3), 10)
  trainable, non_trainable = model_kit.param_counts(model)
  assert trainable == _expected_params(VGG16_D)
  assert non_trainable == 8_448  # BN moving mean and variance: 2 × 4,224 channels
  assert model.name == "vgg16"
  assert model.output_shape == (None, 10)
  x = np.random.default_rng(0).uniform(0, 255, (2, 32, 32, 3)).astype(np.float32)
  assert model(x, training=False).shape == (2, 10)


def test_layout_matches_configuration_d():
  model = vgg.vgg((32, 32, 3), 10, depth=16)
  convs = [l for l in model.layers if isinstance(l, keras.layers.Conv2D)]
  assert [c.filters for c in convs] == [v for v in VGG16_D if v != "M"]
  assert all(c.kernel_size == (3, 3) and c.use_bias and c.padding == "same" for c in convs)
  pools = [l for l in model.layers if isinstance(l, keras.layers.MaxPooling2D)]
  assert len(pools) == 5 and all(p.pool_size == (2, 2) and p.strides == (2, 2) for p in pools)
  # Every conv is followed by BN then ReLU.
  names = [l.name for l in model.layers]
  for conv in convs:
    i = names.index(conv.name)
    assert isinstance(model.layers[i + 1], keras.layers.BatchNormalization)
    assert isinstance(model.layers[i + 2], keras.layers.ReLU)
  assert model.get_layer("pool5").output_shape == (None, 1, 1, 512)
  assert model.get_layer("logits").input_shape == (None, 512)  # Linear(512, classes)


def test_every_kernel_is_prunable():
  model = model_registry.get("vgg16", (32, 32, 3), 10)
  found = oneshot.kernels(model)
  assert list(found) == [
    f"conv{s}_{i}" for s, n in ((1, 2), (2, 2), (3, 3), (4, 3), (5, 3)) for i in range(1, n + 1)
  ] + ["logits"]
  assert sum(int(np.prod(k.shape)) for k in found.values()) == 14_710_464 + 5_120
  without = oneshot.kernels(model, exclude_classifier=True)
  assert list(without) == list(found)[:-1]


def test_weight_decay_on_every_kernel_only():
  model = vgg.vgg((32, 32, 3), 10, weight_decay=2.5e-4)
  assert len(model.losses) == 14  # 13 conv kernels + the dense kernel, no bias / BN terms
  no_decay = vgg.vgg((32, 32, 3), 10)
  assert not no_decay.losses


@pytest.mark.parametrize(
  "kwargs",
  [dict(depth=15), dict(depth=True), dict(input_shape=(16, 16, 3)), dict(weight_decay=-1.0)],
)
def test_bad_options_raise_model_error(kwargs):
  args = dict(input_shape=(32, 32, 3), num_classes=10)
  args.update(kwargs)
  with pytest.raises(model_kit.ModelError):
    vgg.vgg(**args)


def test_registry_fixes_the_depth():
  with pytest.raises(model_kit.ModelError, match="takes no option 'depth'"):
    model_registry.get("vgg16", (32, 32, 3), 10, depth=19)
