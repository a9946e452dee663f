"""The digits CNN: shape, layer-by-layer parameter count, input contract, training signal."""

import numpy as np
import pytest

from tf_forget.compat import keras2
from tf_forget.models import model_kit
from tf_forget.models import small_cnn

keras = keras2.keras()


def test_output_shape_and_input_contract():
  model = small_cnn.small_cnn((8, 8, 1), 10)
  assert model.input.name.startswith(model_kit.INPUT_NAME)
  assert model.input.dtype == "float32"
  assert model.layers[1].name == "rescale"
  assert isinstance(model.layers[1], keras.layers.Rescaling)
  out = model(np.zeros((3, 8, 8, 1), np.float32), training=False)
  assert out.shape == (3, 10)
  assert model.layers[-1].activation is keras.activations.linear  # logits, no softmax


def test_param_count_by_hand():
  # Computed by hand from the module's layer table (kernel + bias per layer):
  # conv1 3*3*1*32+32, conv2 3*3*32*64+64, conv3 3*3*64*128+128, fc1 2*2*128*128+128,
  # logits 128*10+10.
  expected = (288 + 32) + (18432 + 64) + (73728 + 128) + (65536 + 128) + (1280 + 10)
  assert expected == 159626
  model = small_cnn.small_cnn((8, 8, 1), 10)
  assert model_kit.param_counts(model) == (expected, 0)
  kernels = sum(int(np.prod(w.shape)) for w in model.trainable_weights if "kernel" in w.name)
  assert kernels == 159264  # the prunable weights (docs/spec.md §1.4)


def test_rescaling_is_inside_the_model():
  # conv1's top-left output recomputed by hand from x / 255: the model takes raw pixels.
  keras.utils.set_random_seed(0)
  model = small_cnn.small_cnn((8, 8, 1), 10, dropout_rate=0.0)
  x = np.random.default_rng(0).integers(0, 256, (4, 8, 8, 1)).astype(np.float32)
  kernel, bias = model.get_layer("conv1").get_weights()
  patch = x[:, 0:2, 0:2, 0] / 255.0  # top-left output sees rows/cols 0..1 (same padding)
  expected = np.maximum(np.einsum("bij,ijc->bc", patch, kernel[1:, 1:, 0, :]) + bias, 0)
  relu_out = keras.Model(model.input, model.get_layer("conv1_relu").output)(x).numpy()
  np.testing.assert_allclose(relu_out[:, 0, 0, :], expected, rtol=1e-5, atol=1e-6)


def test_weight_decay_adds_l2_losses():
  model = small_cnn.small_cnn((8, 8, 1), 10, weight_decay=1e-3)
  assert len(model.losses) == 5  # one per conv / dense kernel
  plain = small_cnn.small_cnn((8, 8, 1), 10)
  assert not plain.losses
  kernel = model.get_layer("fc1").kernel.numpy()
  np.testing.assert_allclose(
    float(model.get_layer("fc1").losses[0]), 1e-3 * np.sum(kernel**2), rtol=1e-5
  )


def test_trains_on_separable_data():
  # A training signal check, not an accuracy benchmark: 20 Adam steps on a 2-class toy set
  # whose classes differ by mean brightness must drive the loss well below log(2).
  keras.utils.set_random_seed(1)
  rng = np.random.default_rng(1)
  labels = np.repeat([0, 1], 64)
  x = rng.uniform(0, 100, (128, 8, 8, 1)) + 150 * labels[:, None, None, None]
  model = small_cnn.small_cnn((8, 8, 1), 2)
  model.compile(
    keras.optimizers.Adam(3e-3), keras.losses.SparseCategoricalCrossentropy(from_logits=True)
  )
  history = model.fit(x.astype(np.float32), labels, batch_size=32, epochs=5, verbose=0)
  assert history.history["loss"][-1] < 0.2


@pytest.mark.parametrize(
  "kwargs",
  [
    dict(input_shape=(3, 3, 1)),
    dict(input_shape=(8, 8)),
    dict(num_classes=1),
    dict(filters=(8, 8)),
    dict(dropout_rate=1.0),
    dict(weight_decay=-1.0),
    dict(mean=(0.1, 0.2)),
    dict(std=0.0),
  ],
)
def test_bad_values_raise_model_error(kwargs):
  args = dict(input_shape=(8, 8, 1), num_classes=10)
  args.update(kwargs)
  with pytest.raises(model_kit.ModelError):
    small_cnn.small_cnn(**args)
