"""WRN-d-k: parameter counts against Zagoruyko & Komodakis 2016, structure, shapes."""

import pytest

from tf_forget.compat import keras2
from tf_forget.models import model_kit
from tf_forget.models import wide_resnet

keras = keras2.keras()


def _expected_params(depth, width, num_classes=10):
  """Trainable count of WRN-d-k computed from the paper's Table 1 layout, layer by layer.

  conv1 3×3×3×16; per block: BN(c_in) γβ, 3×3 c_in->c, BN(c) γβ, 3×3 c->c, plus a 1×1 c_in->c
  projection where c_in != c; final BN γβ; dense 64k -> classes with bias. No conv biases.
  """
  n = (depth - 4) // 6
  total, c_in = 3 * 3 * 3 * 16, 16
  for base in (16, 32, 64):
    c = base * width
    for i in range(n):
      proj = c_in * c if (c_in != c or (i == 0 and base > 16)) else 0
      total += 2 * c_in + 9 * c_in * c + 2 * c + 9 * c * c + proj
      c_in = c
  return total + 2 * c_in + c_in * num_classes + num_classes


@pytest.mark.parametrize(
  "depth,width,published_millions",
  [
    (28, 10, 36.5),  # Zagoruyko & Komodakis 2016, Table 2 and §3 text: "36.5M"
    (16, 8, 11.0),  # ibid. text: WRN-16-8 "11.0M"
  ],
)
def test_param_count_matches_paper(depth, width, published_millions):
  model = wide_resnet.wide_resnet((32, 32, 3), 10, depth=depth, width=width)
  trainable, non_trainable = model_kit.param_counts(model)
  assert trainable == _expected_params(depth, width)
  # Printed to 0.1M: the exact count lies within ±0.05M of it.
  assert abs(trainable / 1e6 - published_millions) <= 0.05
  assert non_trainable == sum(
    2 * l.gamma.shape[0] for l in model.layers if isinstance(l, keras.layers.BatchNormalization)
  )
  assert model.output_shape == (None, 10)


def test_exact_counts():
  # The paper's 36.5M / 11.0M rounded from these (also what the PyTorch reference code counts).
  assert _expected_params(28, 10) == 36_479_194
  assert _expected_params(16, 8) == 10_961_370


def test_preactivation_shortcut_and_dropout():
  model = wide_resnet.wide_resnet((8, 8, 3), 5, depth=16, width=2, dropout_rate=0.3)
  proj = model.get_layer("group2_block1_proj")
  assert proj.input.name.startswith("group2_block1_relu1")  # 1×1 conv on BN-ReLU(x)
  assert proj.strides == (2, 2)
  assert model.get_layer("group2_block1_dropout").rate == 0.3
  assert model.get_layer("group3_block2_add").output_shape == (None, 2, 2, 128)
  no_dropout = wide_resnet.wide_resnet((8, 8, 3), 5, depth=10, width=1)
  assert not any(isinstance(l, keras.layers.Dropout) for l in no_dropout.layers)


@pytest.mark.parametrize(
  "kwargs", [dict(depth=27), dict(width=0), dict(dropout_rate=1.0), dict(input_shape=(3, 3, 3))]
)
def test_bad_options_raise_model_error(kwargs):
  args = dict(input_shape=(32, 32, 3), num_classes=10)
  args.update(kwargs)
  with pytest.raises(model_kit.ModelError):
    wide_resnet.wide_resnet(**args)
