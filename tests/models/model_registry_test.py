"""The model registry: names, option checking, normalization options, determinism."""

import numpy as np
import pytest

from tf_forget.compat import keras2
from tf_forget.models import model_kit
from tf_forget.models import model_registry

keras = keras2.keras()


def test_registry_is_a_plain_dict_of_callables():
  assert type(model_registry.MODELS) is dict
  assert all(callable(b) for b in model_registry.MODELS.values())
  assert "small_cnn" in model_registry.MODELS


def test_get_names_the_model_and_returns_logits():
  model = model_registry.get("small_cnn", (8, 8, 1), 10)
  assert model.name == "small_cnn"
  assert model.output_shape == (None, 10)


def test_unknown_name_is_a_one_line_model_error():
  with pytest.raises(model_kit.ModelError, match="unknown model 'vgg17'") as info:
    model_registry.get("vgg17", (8, 8, 1), 10)
  assert "\n" not in str(info.value)
  assert isinstance(info.value, ValueError)


def test_unknown_option_is_a_one_line_model_error():
  with pytest.raises(model_registry.ModelError, match="takes no option 'depth'") as info:
    model_registry.get("small_cnn", (8, 8, 1), 10, depth=3)
  assert "\n" not in str(info.value)


def test_presets_fix_their_options():
  model = model_registry.get("wrn_16_8", (8, 8, 3), 10)
  assert model.name == "wrn_16_8"
  assert model.get_layer("group3_block1_conv1").filters == 64 * 8
  with pytest.raises(model_kit.ModelError, match="takes no option 'depth'"):
    model_registry.get("wrn_28_10", (8, 8, 3), 10, depth=16)
  assert model_registry.get("wrn", (8, 8, 3), 10, depth=10, width=1).output_shape == (None, 10)


def test_bad_option_value_is_a_model_error():
  with pytest.raises(model_kit.ModelError, match="shortcut"):
    model_registry.get("cifar_resnet20", (8, 8, 3), 10, shortcut="C")


def test_none_options_are_dropped():
  model = model_registry.get("small_cnn", (8, 8, 1), 10, weight_decay=None, mean=None)
  assert not model.losses


def test_every_model_takes_the_shared_options():
  for name in model_registry.MODELS:
    assert {"weight_decay", "mean", "std"} <= set(model_registry.options(name)), name


def test_mean_std_normalize_per_channel():
  # (x/255 - mean)/std per channel, checked on the normalize layer's output.
  mean, std = (0.5, 0.25, 0.0), (0.5, 0.25, 2.0)
  model = model_registry.get("small_cnn", (8, 8, 3), 10, mean=mean, std=std)
  x = np.random.default_rng(0).integers(0, 256, (2, 8, 8, 3)).astype(np.float32)
  got = keras.Model(model.input, model.get_layer("normalize").output)(x).numpy()
  expected = (x / 255.0 - np.array(mean)) / np.array(std)
  np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_no_normalize_layer_without_mean_std():
  model = model_registry.get("small_cnn", (8, 8, 1), 10)
  assert "normalize" not in [layer.name for layer in model.layers]


@pytest.mark.parametrize(
  "name,shape", [("small_cnn", (8, 8, 1)), ("cifar_resnet20", (8, 8, 3)), ("lenet5", (28, 28, 1))]
)
def test_building_is_deterministic_given_the_global_seed(name, shape):
  def weights(seed):
    keras.utils.set_random_seed(seed)
    return model_registry.get(name, shape, 10).get_weights()

  first, again, other = weights(3), weights(3), weights(4)
  assert all(np.array_equal(a, b) for a, b in zip(first, again))
  assert not all(np.array_equal(a, b) for a, b in zip(first, other))
