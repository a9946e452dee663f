"""CIFAR ResNets: parameter counts against He et al. 2016 Table 6, option A shortcut."""

import numpy as np
import pytest

from tf_forget.compat import keras2
from tf_forget.models import cifar_resnet
from tf_forget.models import model_kit

keras = keras2.keras()


def _expected_params(depth, shortcut="A", num_classes=10):
  """Trainable count from He et al. §4.2's layout, layer by layer (bias-free convs, BN γβ).

  stem 3×3×3×16 + BN(16); per block two 3×3 convs + two BN; option B adds a 1×1 conv + BN on
  the two blocks where the channels double; dense 64 -> classes with bias.
  """
  n = (depth - 2) // 6
  total, c_in = 3 * 3 * 3 * 16 + 2 * 16, 16
  for c in (16, 32, 64):
    for _ in range(n):
      total += 9 * c_in * c + 2 * c + 9 * c * c + 2 * c
      if shortcut == "B" and c_in != c:
        total += c_in * c + 2 * c
      c_in = c
  return total + 64 * num_classes + num_classes


# He et al. 2016, Table 6 ("# params" column), printed to two significant digits.
TABLE_6 = {20: 0.27e6, 32: 0.46e6, 44: 0.66e6, 56: 0.85e6, 110: 1.7e6}
ROUNDING = {20: 0.005e6, 32: 0.005e6, 44: 0.005e6, 56: 0.005e6, 110: 0.05e6}


@pytest.mark.parametrize("depth", sorted(TABLE_6))
def test_param_count_matches_table_6(depth):
  model = cifar_resnet.cifar_resnet((32, 32, 3), 10, depth=depth)
  trainable, _ = model_kit.param_counts(model)
  assert trainable == _expected_params(depth)
  assert abs(trainable - TABLE_6[depth]) <= ROUNDING[depth]
  # Without BN γβ (if He et al. did not count them) the rounding agrees as well.
  bn = sum(
    2 * l.gamma.shape[0] for l in model.layers if isinstance(l, keras.layers.BatchNormalization)
  )
  assert abs(trainable - bn - TABLE_6[depth]) <= ROUNDING[depth]
  assert model.output_shape == (None, 10)


def test_exact_counts():
  assert [_expected_params(d) for d in sorted(TABLE_6)] == [
    269_722,
    464_154,
    658_586,
    853_018,
    1_727_962,
  ]


def test_option_b_adds_two_projections():
  model = cifar_resnet.cifar_resnet((32, 32, 3), 10, depth=20, shortcut="B")
  assert model_kit.param_counts(model)[0] == _expected_params(20, "B") == 272_474


def test_option_a_shortcut_is_subsampled_identity_with_zero_channels():
  model = cifar_resnet.cifar_resnet((32, 32, 3), 10, depth=20)
  block_in = model.get_layer("stage1_block3_out").output
  skip = keras.Model(model.input, [block_in, model.get_layer("stage2_block1_to_cl").output])
  x = np.random.default_rng(0).uniform(0, 255, (2, 32, 32, 3)).astype(np.float32)
  before, after = (t.numpy() for t in skip(x, training=False))
  assert after.shape == (2, 16, 16, 32)
  np.testing.assert_array_equal(after[..., 8:24], before[:, ::2, ::2, :])
  assert not after[..., :8].any() and not after[..., 24:].any()
  assert model.get_layer("stage3_block1_add").output_shape == (None, 8, 8, 64)


@pytest.mark.parametrize(
  "kwargs", [dict(depth=21), dict(shortcut="C"), dict(input_shape=(2, 2, 3))]
)
def test_bad_options_raise_model_error(kwargs):
  args = dict(input_shape=(32, 32, 3), num_classes=10)
  args.update(kwargs)
  with pytest.raises(model_kit.ModelError):
    cifar_resnet.cifar_resnet(**args)
