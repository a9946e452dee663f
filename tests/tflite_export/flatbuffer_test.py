"""Zeros counted from the flatbuffer: hand-set kernels, a tfmot-pruned model, bad bytes."""

import numpy as np
import pytest

from tests.tflite_export import fake_run
from tf_forget.compat import keras2
from tflite_export import converter
from tflite_export import flatbuffer
from tflite_export import formats


def model_with_known_zeros():
  """Conv(4, 3x3) on 6x6x1 (36 kernel weights) -> 4x4x4 -> Dense(2) (128 weights); 20 + 32 zeros."""
  keras = keras2.keras()
  keras.utils.set_random_seed(3)
  inp = keras.Input((6, 6, 1), name="image")
  conv = keras.layers.Conv2D(4, 3)
  dense = keras.layers.Dense(2)
  model = keras.Model(inp, dense(keras.layers.Flatten()(conv(inp))))
  kernel = np.random.default_rng(0).uniform(0.5, 1.0, (3, 3, 1, 4)).astype(np.float32)
  kernel.reshape(-1)[:20] = 0.0
  conv.set_weights([kernel, np.ones(4, np.float32)])
  weights = np.random.default_rng(1).uniform(0.5, 1.0, (64, 2)).astype(np.float32)
  weights.reshape(-1)[::4] = 0.0  # 32 zeros
  dense.set_weights([weights, np.zeros(2, np.float32)])
  return model


@pytest.mark.parametrize("fmt", list(formats.FORMATS))
def test_hand_set_zeros_are_counted(fmt):
  # Non-zero weights are in [0.5, 1] so no format rounds one to zero: exactly 52 of 164.
  rep = np.random.default_rng(0).integers(0, 256, (10, 6, 6, 1)).astype(np.uint8)
  stats = flatbuffer.weight_stats(converter.convert(model_with_known_zeros(), fmt, rep))
  assert stats["kernels"]["count"] == 36 + 128
  assert stats["kernels"]["zeros"] == 20 + 32
  assert sorted(v["zeros"] for v in stats["per_kernel"].values()) == [20, 32]
  assert stats["constants"]["zeros"] >= 52


@pytest.fixture(scope="module")
def pruned_model():
  dataset = fake_run.SyntheticDataset()
  model = fake_run.prune(fake_run.train(fake_run.tiny_cnn(1), dataset, epochs=1), dataset,
                         sparsity=0.8, epochs=1)
  return model, dataset


@pytest.mark.parametrize("fmt", list(formats.FORMATS))
def test_pruned_zeros_survive_in_the_file(pruned_model, fmt):
  model, dataset = pruned_model
  zeros, count = fake_run.kernel_zeros(model)
  assert zeros >= 0.79 * count  # tfmot reached its target on the Keras side
  data = converter.convert(model, fmt, dataset.take("train", 20).images)
  stats = flatbuffer.weight_stats(data)
  assert stats["kernels"]["count"] == count
  if fmt in ("float32", "float16"):
    assert stats["kernels"]["zeros"] == zeros
  else:  # int8 weights: every pruned zero stays 0; tiny weights may also round to 0.
    assert zeros <= stats["kernels"]["zeros"] <= zeros + 0.01 * count
  raw, gz = flatbuffer.sizes(data)["raw"], flatbuffer.sizes(data)["gzip"]
  assert raw == len(data) and gz < raw  # zeros compress


def test_io_details_of_full_int8(pruned_model):
  model, dataset = pruned_model
  io = flatbuffer.io_details(converter.convert(model, "full_int8",
                                               dataset.take("train", 20).images))
  (inp,), (out,) = io["inputs"], io["outputs"]
  assert inp["shape"] == [-1, 8, 8, 1] and inp["dtype"] == "int8" and len(inp["scale"]) == 1
  assert out["shape"] == [-1, fake_run.NUM_CLASSES] and out["dtype"] == "int8"


@pytest.mark.parametrize("data", [b"", b"not a tflite file at all", b"\0" * 64])
def test_not_tflite(data):
  with pytest.raises(flatbuffer.TfliteFileError, match="not a TFLite flatbuffer"):
    flatbuffer.weight_stats(data)
