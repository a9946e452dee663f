"""ImageNet-style ResNet-18 / -50: shapes and parameter counts against the published models."""

import numpy as np
import pytest

from tf_forget.compat import keras2
from tf_forget.models import model_kit
from tf_forget.models import resnet

keras = keras2.keras()


def _bn_channels(model):
  return sum(
    l.gamma.shape[0] for l in model.layers if isinstance(l, keras.layers.BatchNormalization)
  )


def _conv_out_channels(model):
  return sum(l.filters for l in model.layers if isinstance(l, keras.layers.Conv2D))


@pytest.fixture(name="resnet50_imagenet", scope="module")
def fixture_resnet50_imagenet():
  return resnet.resnet50((224, 224, 3), 1000)  # built once for the module


def test_resnet50_param_count(resnet50_imagenet):
  # 25,557,032: torchvision `resnet50` (sum of `parameters()`: conv weights without bias, BN
  # gamma/beta, fc; BN running statistics are buffers, not parameters) — the count printed in
  # torchvision's model table (docs "Classification", ResNet50_Weights: 25.6M, num_params
  # 25557032). Our convs are bias-free too, so the trainable counts agree exactly.
  model = resnet50_imagenet
  trainable, non_trainable = model_kit.param_counts(model)
  assert trainable == 25_557_032
  assert non_trainable == 2 * _bn_channels(model) == 53_120  # BN moving mean + variance
  # keras.applications.ResNet50(weights=None).count_params() is 25,636,712 (its summary): the
  # same network with a bias on each conv (one per output channel) and BN statistics included.
  assert trainable + non_trainable + _conv_out_channels(model) == 25_636_712
  assert model.output_shape == (None, 1000)
  assert model.get_layer("stage4_block3_out").output_shape == (None, 7, 7, 2048)


def test_resnet18_param_count():
  # 11,689,512: torchvision `resnet18` num_params (ResNet18_Weights: 11.7M), bias-free convs,
  # BN gamma/beta counted, running statistics not.
  model = resnet.resnet18((224, 224, 3), 1000)
  trainable, non_trainable = model_kit.param_counts(model)
  assert trainable == 11_689_512
  assert non_trainable == 2 * _bn_channels(model) == 9_600
  assert model.get_layer("stage4_block2_out").output_shape == (None, 7, 7, 512)


def test_resnet18_output_shape_on_small_and_celeba_inputs():
  model = resnet.resnet18((32, 32, 3), 2)
  assert model(np.zeros((2, 32, 32, 3), np.float32), training=False).shape == (2, 2)
  # CelebA's native 218×178 (docs/spec.md §2.4): strides 32 with symmetric padding -> 7×6 final map.
  celeba = resnet.resnet18((218, 178, 3), 2)
  assert celeba.get_layer("avg_pool").input_shape == (None, 7, 6, 512)
  assert celeba.output_shape == (None, 2)


def test_structure_v15_stride_on_3x3_and_zero_init_residual(resnet50_imagenet):
  model = resnet50_imagenet
  assert model.get_layer("stage2_block1_1_conv").strides == (1, 1)
  assert model.get_layer("stage2_block1_2_conv").strides == (2, 2)
  assert model.get_layer("stage2_block1_proj_conv").strides == (2, 2)
  assert not any(l.use_bias for l in model.layers if isinstance(l, keras.layers.Conv2D))
  assert np.all(model.get_layer("stage2_block1_3_bn").gamma.numpy() == 0)
  assert model.layers[1].name == "rescale"
  plain = resnet.resnet18((32, 32, 3), 10, zero_init_residual=False)
  assert np.all(plain.get_layer("stage1_block1_2_bn").gamma.numpy() == 1)


def test_bad_depth_raises_model_error():
  with pytest.raises(model_kit.ModelError, match="depth"):
    resnet.resnet((32, 32, 3), 10, depth=19)
