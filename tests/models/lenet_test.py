"""LeNet-5: both variants' parameter counts against their sources, shapes."""

import pytest

from tf_forget.compat import keras2
from tf_forget.models import lenet
from tf_forget.models import model_kit

keras = keras2.keras()


def test_shrinkbench_variant_param_count():
  # ShrinkBench models/mnistnet.py `LeNet` (002's pruning library): Conv2d(1, 6, 3),
  # Conv2d(6, 16, 3), Linear(16*5*5, 120), Linear(120, 84), Linear(84, 10), all with bias.
  per_layer = [3 * 3 * 1 * 6 + 6, 3 * 3 * 6 * 16 + 16, 400 * 120 + 120, 120 * 84 + 84, 84 * 10 + 10]
  assert per_layer == [60, 880, 48_120, 10_164, 850]
  model = lenet.lenet5((28, 28, 1), 10)
  assert model_kit.param_counts(model) == (sum(per_layer), 0) == (60_074, 0)
  assert model.get_layer("flatten").output_shape == (None, 400)  # ShrinkBench's 16 * 5 * 5


def test_lecun1998_variant_param_count():
  # LeCun et al. 1998 §II.B: C1 156, S2 12, C3 1,516, S4 32, C5 48,120, F6 10,164 trainable
  # parameters, plus the 84×10 RBF output (840): 60,840 in all.
  lecun = {"C1": 156, "S2": 12, "C3": 1_516, "S4": 32, "C5": 48_120, "F6": 10_164, "output": 840}
  assert sum(lecun.values()) == 60_840
  # Ours: C3 fully connected (16 × (6·25 + 1) = 2,416, +900), max pools (−12, −32), dense
  # output with bias (850, +10).
  expected = sum(lecun.values()) + (2_416 - 1_516) - 12 - 32 + 10
  model = lenet.lenet5((28, 28, 1), 10, variant="lecun1998")
  assert model_kit.param_counts(model) == (expected, 0) == (61_706, 0)
  assert model.get_layer("conv1").output_shape == (None, 28, 28, 6)  # 32×32 field, as §II.A
  assert model.get_layer("flatten").output_shape == (None, 400)  # 5×5×16 into C5


@pytest.mark.parametrize("variant", sorted(lenet.VARIANTS))
def test_output_shape(variant):
  model = lenet.lenet5((28, 28, 1), 7, variant=variant)
  assert model.output_shape == (None, 7)
  assert model.layers[-1].activation is keras.activations.linear


def test_bad_variant_and_small_input_raise_model_error():
  with pytest.raises(model_kit.ModelError, match="variant"):
    lenet.lenet5((28, 28, 1), 10, variant="lenet300")
  with pytest.raises(model_kit.ModelError):
    lenet.lenet5((9, 9, 1), 10)
  lenet.lenet5((10, 10, 1), 10)  # the smallest the shrinkbench variant takes
