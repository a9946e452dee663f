"""Causal attribution of forgetting to quantized ops, on planted faults.

A BN-free CNN (Conv2D -> pool -> SeparableConv2D x2 -> GAP -> Dense) is trained here on the
digits; each fault keeps the float function (ReLU is positively homogeneous) while its plain
full-int8 file breaks many test examples:
  * weight fault: the second SeparableConv's pointwise input row 5 x100, its depthwise channel
    5 /100 — keeping that pointwise CONV_2D in float must recover most broken examples, and it
    alone quantized must break most of them: ranked first;
  * range fault: the first Conv2D's output channel 6 x100, the next depthwise channel /100 —
    the two ops around the wide tensor are ranked first and second by what they cause alone,
    and no single op kept in float recovers more than a few (the tensor is re-quantized per
    tensor by the next int8 op: no single float layer repairs a range fault);
  * the range fault below the NMSE cut: in a narrower CNN (8 filters) the planted conv's NMSE
    ranks below the 6 ops the NMSE picks; `attribute` still ablates it (named by the range
    diagnosis) and ranks it first, the depthwise conv reading its wide channel second.
The ranking of the ops around one range fault (together, the op where it starts first) is also
checked on hand-made effects.
"""

import os

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

import numpy as np
import pytest
from sklearn import datasets
import tf_keras as keras

from tests import planted
from tf_forget.evaluate import ablation_candidates
from tf_forget.evaluate import batched
from tf_forget.evaluate import causal_attribution
from tf_forget.export import layer_error
from tf_forget.export import selective_quantizer


@pytest.fixture(scope="module")
def trained():
  digits = datasets.load_digits()
  x = np.round(digits.images[..., None] * (255 / 16)).astype(np.uint8)
  model = planted.train(keras, planted.cnn(keras), x[:1200], digits.target[:1200])
  return model, x, digits.target


def _planted(trained, fault):
  model, x, y = trained
  model = keras.models.clone_model(model)
  model.set_weights(trained[0].get_weights())
  return planted.plant(model, fault), x, y


def _ablate(model, x, y):
  test, labels = x[1200:], y[1200:]
  reference = model.predict(test.astype(np.float32), verbose=0)
  quantizer = selective_quantizer.SelectiveQuantizer(model, x[:100])
  plain = batched.BatchedRunner(quantizer([]), runtime="builtin").run(test).argmax(axis=1)
  broken = (reference.argmax(axis=1) == labels) & (plain != labels)
  stable = np.flatnonzero(~broken)[:200]
  subsets = {
    "forgotten": (test[broken], labels[broken], reference[broken]),
    "stable": (test[stable], labels[stable], reference[stable]),
  }
  rows = layer_error.layer_errors(model, x[:100], {"forgotten": test[broken]})
  candidates = ablation_candidates.nmse_picks(rows, 20)
  return causal_attribution.ablate(quantizer, candidates, subsets), int(broken.sum())


def test_the_weight_fault_is_ranked_first(trained):
  model, x, y = _planted(trained, "weight")
  result, broken = _ablate(model, x, y)
  assert broken >= 30 and result["plain"]["broken_forgotten"] == broken
  first = result["ops"][0]
  planted = model.layers[4].name
  assert f"/{planted}/" in first["tensor_name"] and "depthwise" not in first["tensor_name"]
  assert first["recovered"] >= broken // 2, first
  assert first["caused"] >= 0.8 * broken, first
  assert first["kl_float_op"] < result["plain"]["kl_forgotten"]
  assert [r["rank"] for r in result["ops"]] == list(range(1, len(result["ops"]) + 1))


def test_the_range_fault_is_the_two_ops_around_the_wide_tensor(trained):
  model, x, y = _planted(trained, "range")
  result, broken = _ablate(model, x, y)
  assert broken >= 20
  top = [r["tensor_name"] for r in result["ops"][:2]]
  conv, sep = model.layers[1].name, model.layers[3].name
  assert any(f"/{conv}/" in n for n in top) and any(
    f"/{sep}/" in n and "depthwise" in n for n in top
  ), top
  assert all(r["caused"] >= 0.8 * broken for r in result["ops"][:2])
  assert max(r["recovered"] for r in result["ops"]) <= 0.2 * broken


@pytest.fixture(scope="module")
def narrow():
  """The range fault in a CNN of 8 filters per layer: its conv's NMSE ranks 7th of 8 (measured),
  below the 6 NMSE picks."""
  digits = datasets.load_digits()
  x = np.round(digits.images[..., None] * (255 / 16)).astype(np.uint8)
  model = planted.train(
    keras, planted.cnn(keras, filters=8, seed=2), x[:1200], digits.target[:1200]
  )
  return planted.plant(model, "range"), x, digits.target


def test_a_range_fault_below_the_nmse_cut_is_ablated_and_ranked_first(narrow):
  # The NMSE picks are the default ones unless training put the conv among them; then they are
  # cut just above its NMSE rank, so that only the range diagnosis can name it.
  model, x, y = narrow
  test, labels = x[1200:], y[1200:]
  reference = model.predict(test.astype(np.float32), verbose=0)
  quantizer = selective_quantizer.SelectiveQuantizer(model, x[:100])
  plain = batched.BatchedRunner(quantizer([]), runtime="builtin").run(test).argmax(axis=1)
  forgotten = reference.argmax(axis=1) != plain
  stable = np.flatnonzero(~forgotten)[:100]
  rows = layer_error.layer_errors(
    model, x[:100], {"forgotten": test[forgotten], "stable": test[stable]}, quantizer=quantizer
  )
  ranking = layer_error.rank_layers(rows)
  conv = f"/{model.layers[1].name}/"
  (conv_rank,) = [r["rank"] for r in ranking if conv in (r["tensor_name"] or "")]
  cut = min(ablation_candidates.NMSE_PICKS, conv_rank - 1)
  assert not any(conv in n for n in ablation_candidates.nmse_picks(rows, cut))
  subsets = {
    "forgotten": (test[forgotten], labels[forgotten], reference[forgotten]),
    "stable": (test[stable], labels[stable], reference[stable]),
  }
  found = causal_attribution.attribute(quantizer, rows, ranking, subsets, x[:100], nmse=cut)
  assert found["ranges"][0]["op_name"] == "CONV_2D" and found["ranges"][0]["channel"] == 6
  assert found["ablation"]["plain"]["broken_forgotten"] >= 20
  first = found["ranking"][0]
  assert conv in first["tensor_name"] and first["op_name"] == "CONV_2D", first
  assert first["evidence"] == "ablation" and first["picked_by"] == [ablation_candidates.RANGE]
  assert first["fault"] == "range" and first["nmse_rank"] == conv_rank
  # the depthwise conv reading the wide channel reproduces the fault: ranked with it, after it
  second = found["ranking"][1]
  assert second["op_name"] == "DEPTHWISE_CONV_2D" and second["fault"] == "range", second
  assert len(found["ablation"]["ops"]) <= cut + ablation_candidates.RANGE_PICKS


def _effect(name, recovered, caused):
  return {
    "tensor_name": name,
    "recovered": recovered,
    "broken": 30 - recovered,
    "kl_float_op": 1.0,
    "caused": caused,
    "caused_stable": 0,
    "kl_only_op": 1.0,
  }


def test_the_ops_around_one_range_fault_are_ranked_together_origin_first():
  # Hand-made: the depthwise reader's measured effect beats its conv's by noise (61 vs 60
  # caused); an op of its own weights beats both, an inherited one trails.
  ranking = [
    {"tensor_name": n, "op_index": i, "rank": r}
    for n, i, r in (("fc", 7, 1), ("pw", 3, 2), ("dw", 2, 3), ("conv", 0, 4), ("mean", 6, 5))
  ]
  ops = [_effect("pw", 25, 70), _effect("dw", 1, 61), _effect("conv", 1, 60), _effect("fc", 0, 2)]
  for place, op in enumerate(ops, start=1):
    op["rank"] = place  # `ablate`'s order: by recovered + caused
  ablation = {"plain": {"broken_forgotten": 30}, "ops": ops}
  wide = {"tensor": 10, "op_index": 0, "channel": 6, "ratio": 85.0}
  pooled = {"tensor": 11, "op_index": 1, "channel": 6, "ratio": 85.0}
  touching = {0: wide, 1: pooled, 2: pooled}
  picked = {"pw": ["nmse"], "dw": ["nmse", "range"], "conv": ["range"], "fc": ["nmse"]}
  out = causal_attribution.rank(ranking, ablation, touching, picked, {10: 0, 11: 0})
  assert [(r["tensor_name"], r["rank"], r["fault"]) for r in out] == [
    ("pw", 1, "weights"),
    ("conv", 2, "range"),
    ("dw", 3, "range"),
    ("fc", 4, "inherited"),
    ("mean", 5, None),
  ]
  assert [r["picked_by"] for r in out] == [["nmse"], ["range"], ["nmse", "range"], ["nmse"], None]
  # without the origins each dominated tensor is its own fault: measured order
  alone = causal_attribution.rank(ranking, ablation, touching, picked)
  assert [r["tensor_name"] for r in alone][:3] == ["pw", "dw", "conv"]
