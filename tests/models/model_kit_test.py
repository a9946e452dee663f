"""The shared stem and helpers: validation, L2 semantics (docs/spec.md §6.1), normalization."""

import numpy as np
import pytest
import tensorflow as tf

from tf_forget.compat import keras2
from tf_forget.models import model_kit

keras = keras2.keras()


def test_l2_none_for_zero_and_gradient_is_two_lambda_theta():
  assert model_kit.l2(0.0) is None
  # docs/spec.md §6.1: Keras l2(λ) adds λ‖θ‖², so ∂/∂θ = 2λθ, i.e. ε = 2λ for the (ε/2)‖θ‖² term.
  regularizer = model_kit.l2(0.125)
  theta = tf.Variable([2.0, -1.0])
  with tf.GradientTape() as tape:
    loss = regularizer(theta)
  np.testing.assert_allclose(float(loss), 0.125 * 5.0)
  np.testing.assert_allclose(tape.gradient(loss, theta).numpy(), 2 * 0.125 * theta.numpy())


@pytest.mark.parametrize("bad", [-1e-4, float("nan"), float("inf"), "x", None])
def test_bad_weight_decay(bad):
  with pytest.raises(model_kit.ModelError, match="weight_decay"):
    model_kit.l2(bad)


@pytest.mark.parametrize("shape", [(8, 8), (8, 8, 0), (8.5, 8, 1), "abc", None, (-1, 8, 1)])
def test_bad_input_shape(shape):
  with pytest.raises(model_kit.ModelError, match="input_shape"):
    model_kit.check_input_shape(shape)


def test_input_shape_accepts_lists_and_numpy_ints():
  assert model_kit.check_input_shape([np.int64(8), 8, 1]) == (8, 8, 1)


@pytest.mark.parametrize("bad", [1, 0, 2.0, True, "10"])
def test_bad_num_classes(bad):
  with pytest.raises(model_kit.ModelError, match="num_classes"):
    model_kit.check_num_classes(bad)


def test_image_input_scalar_mean_std_broadcast():
  inputs, x = model_kit.image_input((2, 2, 3), mean=0.5, std=0.25)
  model = keras.Model(inputs, x)
  assert inputs.name.startswith("image") and inputs.dtype == tf.float32
  pixels = np.full((1, 2, 2, 3), 255.0, np.float32)
  np.testing.assert_allclose(model(pixels).numpy(), 2.0, rtol=1e-6)  # (1 - 0.5) / 0.25


def test_image_input_without_normalization_only_rescales():
  inputs, x = model_kit.image_input((2, 2, 1))
  model = keras.Model(inputs, x)
  assert [type(l) for l in model.layers[1:]] == [keras.layers.Rescaling]
  np.testing.assert_allclose(model(np.full((1, 2, 2, 1), 51.0, np.float32)).numpy(), 0.2, rtol=1e-6)


@pytest.mark.parametrize(
  "mean,std",
  [((0.1, 0.2), None), (None, (1.0, 0.0, 1.0)), (None, -1.0), ("abc", None), (float("nan"), None)],
)
def test_bad_mean_std(mean, std):
  with pytest.raises(model_kit.ModelError):
    model_kit.image_input((4, 4, 3), mean=mean, std=std)


@pytest.mark.parametrize("bad", [1.0, -0.1, "x", None])
def test_bad_dropout_rate(bad):
  with pytest.raises(model_kit.ModelError, match="dropout_rate"):
    model_kit.check_dropout_rate(bad)
