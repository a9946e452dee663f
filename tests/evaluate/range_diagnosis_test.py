"""Range diagnosis: a dominating channel named, with the levels it leaves the rest.

Golden by hand: a 1x1 Conv2D (ReLU, no bias) with weights 1, 2, 3, 400 on images whose pixels
span [0, 1] gives channel spans exactly 1, 2, 3, 400; the median span is 2.5 (ratio 160), the
per-tensor scale is 400 / 255, and the other three channels keep 255 / 400 * (1, 2, 3) levels,
median 1.275. The planted range fault (the first Conv2D's output channel x100, the next
depthwise channel /100: the same float function) is named; the same model unplanted is not; the
conv's wide channel, pooled, is one fault that starts at the conv (`origins`).
"""

import os
import types

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

import numpy as np
import pytest
import tf_keras as keras

from tests import planted
from tf_forget.evaluate import range_diagnosis
from tf_forget.export import converter
from tf_forget.export import flatbuffer_graph
from tf_forget.report.words import why_forgot

L = keras.layers


def _images(n=20, shape=(6, 6, 1), seed=0):
  images = np.random.default_rng(seed).integers(0, 256, (n,) + shape, dtype=np.uint8)
  images[0, 0, 0, 0], images[1, 0, 0, 0] = 0, 255  # every pixel's range is [0, 1] after 1/255
  return images


def test_by_hand():
  model = keras.Sequential(
    [
      keras.Input((6, 6, 1)),
      L.Rescaling(1 / 255.0),
      L.Conv2D(4, 1, activation="relu", use_bias=False),
    ]
  )
  model.layers[1].set_weights([np.array([1.0, 2.0, 3.0, 400.0], np.float32).reshape(1, 1, 1, 4)])
  data = converter.convert(model, "float32")
  rows = range_diagnosis.channel_ranges(data, _images(), batch_size=8)
  assert [r["op_name"] for r in rows] == ["CONV_2D"]
  np.testing.assert_allclose(rows[0]["low"], 0.0, atol=1e-6)
  np.testing.assert_allclose(rows[0]["high"], [1.0, 2.0, 3.0, 400.0], rtol=1e-6)
  (found,) = range_diagnosis.dominant(rows)
  assert found["channel"] == 3 and found["channels"] == 4
  assert found["ratio"] == pytest.approx(160.0, rel=1e-6)
  assert found["levels_others"] == pytest.approx(255 / 400 * 2, rel=1e-6)
  assert found["levels_channel"] == pytest.approx(255.0, rel=1e-6)
  words = why_forgot.range_sentence(found)
  assert words.startswith("CONV_2D") and words.endswith(
    "output channel 3 spans 160x the median channel: per-tensor int8 leaves the other 3 "
    "channels about 1 levels"
  )
  # The op that writes the wide tensor is the one the causal ranking names.
  touching = range_diagnosis.ops_touching(flatbuffer_graph.graph(data), [found])
  assert list(touching) == [rows[0]["op_index"]]


def _cnn(fault):
  model = planted.cnn(keras, separable=1)
  return planted.plant(model, "range") if fault else model


def test_the_planted_range_fault_is_named_and_the_clean_model_is_not():
  images = _images(40, (8, 8, 1))
  clean = range_diagnosis.dominant(
    range_diagnosis.channel_ranges(converter.convert(_cnn(False), "float32"), images)
  )
  assert clean == []
  data = converter.convert(_cnn(True), "float32")
  found = range_diagnosis.dominant(range_diagnosis.channel_ranges(data, images))
  assert found, "the planted channel is not named"
  first = found[0]
  assert first["op_name"] == "CONV_2D" and first["channel"] == 6
  assert first["ratio"] > 30 and first["levels_others"] < 10
  # The pooled tensor keeps the wide channel: one fault, made by the conv.
  assert [r["op_name"] for r in found] == ["CONV_2D", "MAX_POOL_2D"]
  origins = range_diagnosis.origins(flatbuffer_graph.graph(data), found)
  assert origins == {r["tensor"]: first["op_index"] for r in found}


def test_origins_follow_a_wide_channel_passed_on_and_nothing_else():
  # op 0 writes tensor 1 (channel 6 wide), op 1 pools it into tensor 2 (channel 6 still),
  # op 2 reads 2 and writes 3, wide in another channel (a fault of its own), op 3 reads 1 and
  # 3 and writes 4 (channel 2, continuing op 2's fault).
  graph = types.SimpleNamespace(
    ops=[
      types.SimpleNamespace(inputs=i, outputs=o)
      for i, o in (((0, -1), (1,)), ((1,), (2,)), ((2, 9), (3,)), ((1, 3), (4,)))
    ]
  )
  found = [
    {"tensor": t, "op_index": i, "channel": c}
    for t, i, c in ((1, 0, 6), (2, 1, 6), (3, 2, 2), (4, 3, 2))
  ]
  assert range_diagnosis.origins(graph, found) == {1: 0, 2: 0, 3: 2, 4: 2}
  assert range_diagnosis.origins(graph, []) == {}
