"""CIFAR DenseNet-BC-22 (003 Table 3, torchprune `densenet22`): parameter count, structure."""

import numpy as np
import pytest

from tf_forget.compat import keras2
from tf_forget.models import densenet
from tf_forget.models import model_kit
from tf_forget.models import model_registry
from tf_forget.prune import oneshot

keras = keras2.keras()


def _expected_params(depth=22, k=12, num_classes=10):
  """Trainable count of torchprune's DenseNet(depth, Bottleneck, growthRate=k, compressionRate=2).

  conv1 3×3×3×2k (no bias); per bottleneck on C channels: BN(C) γβ, 1×1 C->4k, BN(4k) γβ,
  3×3 4k->k, then C += k; per transition on C: BN(C) γβ, 1×1 C->C // 2; final BN γβ and
  Linear(C, classes) with bias. No conv has a bias.
  """
  n = (depth - 4) // 6
  c = 2 * k
  total = 9 * 3 * c
  for block in range(3):
    for _ in range(n):
      total += 2 * c + c * 4 * k + 2 * 4 * k + 9 * 4 * k * k
      c += k
    if block < 2:
      total += 2 * c + c * (c // 2)
      c //= 2
  return total + 2 * c + c * num_classes + num_classes


def test_exact_count_by_hand():
  # Channels 24 -> 60 -> 30 -> 66 -> 33 -> 69 (module docstring). By hand: convs 68,994
  # (conv1 648; 1×1 bottleneck 5,184 + 6,048 + 6,480; 3×3 3 × 15,552; transitions 1,800 +
  # 2,178), BN γβ 1,992, dense 69·10 + 10 = 700.
  assert 648 + 5_184 + 6_048 + 6_480 + 3 * 15_552 + 1_800 + 2_178 == 68_994
  assert _expected_params() == 68_994 + 1_992 + 700 == 71_686


def test_param_count_and_output_shape():
  model = model_registry.get("densenet22", (32, 32, 3), 10)
  trainable, non_trainable = model_kit.param_counts(model)
  assert trainable == _expected_params() == 71_686
  assert non_trainable == 1_992
  assert model.name == "densenet22"
  assert model.output_shape == (None, 10)
  x = np.random.default_rng(0).uniform(0, 255, (2, 32, 32, 3)).astype(np.float32)
  assert model(x, training=False).shape == (2, 10)


def test_other_depth_and_growth_rate():
  # DenseNet-BC-40 with k = 4 on 10 classes, against the same independent count.
  model = densenet.densenet((8, 8, 3), 10, depth=40, growth_rate=4)
  assert model_kit.param_counts(model)[0] == _expected_params(40, 4)


def test_layout():
  model = model_registry.get("densenet22", (32, 32, 3), 10)
  assert model.get_layer("conv1").output_shape == (None, 32, 32, 24)
  assert model.get_layer("block1_layer3_concat").output_shape == (None, 32, 32, 60)
  assert model.get_layer("transition1_pool").output_shape == (None, 16, 16, 30)
  assert model.get_layer("block2_layer3_concat").output_shape == (None, 16, 16, 66)
  assert model.get_layer("transition2_pool").output_shape == (None, 8, 8, 33)
  assert model.get_layer("block3_layer3_concat").output_shape == (None, 8, 8, 69)
  layer = model.get_layer("block2_layer1_conv1")
  assert layer.kernel_size == (1, 1) and layer.filters == 48 and not layer.use_bias
  layer = model.get_layer("block2_layer1_conv2")
  assert layer.kernel_size == (3, 3) and layer.filters == 12 and not layer.use_bias
  # The new channels come after the layer's input (torch.cat((x, out), 1)).
  concat = model.get_layer("block1_layer1_concat")
  assert [t.name.split("/")[0] for t in concat.input] == ["conv1", "block1_layer1_conv2"]
  assert model.get_layer("final_bn").gamma.shape == (69,)
  assert isinstance(model.get_layer("avg_pool"), keras.layers.GlobalAveragePooling2D)


def test_every_kernel_is_prunable():
  model = model_registry.get("densenet22", (32, 32, 3), 10)
  found = oneshot.kernels(model)
  convs = [l.name for l in model.layers if isinstance(l, keras.layers.Conv2D)]
  assert len(convs) == 21  # conv1 + 3 blocks × 3 layers × 2 + 2 transitions
  assert list(found) == convs + ["logits"]  # 22 weighted layers: the "22" of DenseNet-22
  assert sum(int(np.prod(k.shape)) for k in found.values()) == 68_994 + 690


@pytest.mark.parametrize(
  "kwargs",
  [
    dict(depth=21),
    dict(depth=4),
    dict(growth_rate=0),
    dict(compression=0.0),
    dict(compression=1.5),
    dict(input_shape=(3, 3, 3)),
  ],
)
def test_bad_options_raise_model_error(kwargs):
  args = dict(input_shape=(32, 32, 3), num_classes=10)
  args.update(kwargs)
  with pytest.raises(model_kit.ModelError):
    densenet.densenet(**args)
