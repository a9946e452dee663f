"""Per-layer quantization error: ranking, repair, metrics, Model Explorer node data.

The main fixture trains a tiny 10-class CNN on structured 8x8 images and then breaks ONE layer for
int8 only (`broken_model`: a huge weight from a dead unit, so the layer's other int8 weights round
to 0 in the full_int8 file). "Broken" examples: float top-1 (the labels: the float model's own
argmax) != int8 top-1, both files run through the project's interpreter factory
(`tf_forget.evaluate.batched`).
"""

import json
import os
import time

from ai_edge_litert import schema_py_generated as schema
import dacite
import numpy as np
import pytest

from tests.export import broken_model
from tests.export import fake_run
from tests.export import model_explorer_schema
from tf_forget.evaluate import batched
from tf_forget.export import converter
from tf_forget.export import flatbuffer_graph
from tf_forget.export import layer_error
from tf_forget.export import model_explorer
from tf_forget.export import selective_quantizer

NUM_CLASSES = broken_model.NUM_CLASSES
make_images = broken_model.make_images


def top1(data, images):
  return batched.BatchedRunner(data).run(images).argmax(axis=1)


def op_outputs(data):
  """[(op name, output tensor name, output dtype name)] of a .tflite file, read with the schema."""
  model = schema.Model.GetRootAs(data, 0)
  graph = model.Subgraphs(0)
  names = {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}
  types = {v: k for k, v in vars(schema.TensorType).items() if not k.startswith("_")}
  out = []
  for i in range(graph.OperatorsLength()):
    op = graph.Operators(i)
    code = model.OperatorCodes(op.OpcodeIndex())
    tensor = graph.Tensors(op.Outputs(0))
    out.append(
      (
        names[max(code.BuiltinCode(), code.DeprecatedBuiltinCode())],
        tensor.Name().decode(),
        types[tensor.Type()],
      )
    )
  return out


@pytest.fixture(scope="module")
def case():
  images, labels = make_images(400, 3)
  rep = images[:100]
  model = broken_model.trained_model(images, labels)
  clean_int8 = converter.convert(model, "full_int8", rep)
  clean_float = top1(converter.convert(model, "float32"), images)
  broken_model.add_outlier(model)
  float32 = converter.convert(model, "float32")
  int8 = converter.convert(model, "full_int8", rep)
  pred_float, pred_int8 = top1(float32, images), top1(int8, images)
  broken = pred_int8 != pred_float
  worst = np.bincount(pred_float[broken], minlength=NUM_CLASSES).argmax()
  subsets = {
    "forgotten": images[broken],
    "stable": images[~broken],
    "worst_class": images[pred_float == worst],
  }
  start = time.perf_counter()
  result = layer_error.layer_errors(model, rep, subsets, batch_size=48)
  seconds = time.perf_counter() - start
  print(
    f"layer_errors: {seconds:.2f} s for {len(result)} layers, "
    f"{sum(map(len, subsets.values()))} examples"
  )
  return dict(
    model=model,
    images=images,
    rep=rep,
    float32=float32,
    int8=int8,
    pred_float=pred_float,
    broken=broken,
    result=result,
    clean_float=clean_float,
    clean_int8=clean_int8,
  )


_bad = broken_model.is_bad


def test_the_outlier_breaks_int8_only(case):
  # Same float function before and after the outlier (it multiplies a dead unit) ...
  np.testing.assert_array_equal(case["pred_float"], case["clean_float"])
  # ... but the int8 file now flips many examples the clean int8 file kept.
  clean_broken = top1(case["clean_int8"], case["images"]) != case["clean_float"]
  assert clean_broken.sum() <= 4
  assert case["broken"].sum() >= 40


def test_bad_layer_is_ranked_first(case):
  ranked = layer_error.rank_layers(case["result"])
  assert [r["rank"] for r in ranked] == list(range(1, len(ranked) + 1))
  top = ranked[0]
  assert _bad(top["tensor_name"]) and top["op_name"] == "FULLY_CONNECTED"
  assert top["excess"] > 0.05  # nmse of the forgotten examples exceeds the stable ones'
  assert all(r["nmse_forgotten"] < 0.01 * top["nmse_forgotten"] for r in ranked[1:])
  assert all(r["excess"] < 0.01 * top["excess"] for r in ranked[1:])
  assert top["snr_drop_db"] > 0
  # Every quantized op of the file has a row; all rows saw every subset.
  ops = op_outputs(case["int8"])
  assert sorted((r["op_index"], r["op_name"], r["file_tensor_name"]) for r in case["result"]) == [
    (i, name, tensor) for i, (name, tensor, _) in enumerate(ops)
  ]
  for row in case["result"]:
    assert row["subsets"]["forgotten"]["count"] == case["broken"].sum()
    assert row["subsets"]["stable"]["count"] == (~case["broken"]).sum()
  reshape = [r for r in case["result"] if r["op_name"] == "RESHAPE"]
  assert reshape and reshape[0]["subsets"]["stable"]["nmse"] < 1e-10  # reshape adds no error
  with pytest.raises(layer_error.LayerErrorError, match="no subset 'flipped'"):
    layer_error.rank_layers(case["result"], forgotten="flipped")


def test_keeping_the_top_layer_in_float_repairs_the_broken_examples(case):
  top = layer_error.rank_layers(case["result"])[0]["tensor_name"]
  repaired = selective_quantizer.SelectiveQuantizer(case["model"], case["rep"])([top])
  assert flatbuffer_graph.io_details(repaired)["inputs"][0]["dtype"] == "int8"
  assert flatbuffer_graph.io_details(repaired)["outputs"][0]["dtype"] == "int8"
  assert ("FULLY_CONNECTED", top, "FLOAT32") in op_outputs(repaired)
  pred = top1(repaired, case["images"])
  broken = case["broken"]
  recovered = (pred[broken] == case["pred_float"][broken]).mean()
  newly_broken = (pred[~broken] != case["pred_float"][~broken]).sum()
  assert recovered >= 0.9 and newly_broken <= 2, (recovered, newly_broken)
  assert len(case["int8"]) < len(repaired) < len(case["float32"])


def test_every_row_name_is_a_denylisted_nodes_name(case):
  # All rows but the bad layer's (covered above) kept in float at once: each op named runs in
  # float in the result (its output tensor keeps the name, or the name plus a number where the
  # int8 tensor after it took the name: the graph output). Unknown names, which the quantizer
  # would ignore, are refused, and an empty list gives the plain full_int8 model (the same
  # predictions as `converter.convert`).
  rows = [r for r in case["result"] if not _bad(r["tensor_name"])]
  quantizer = selective_quantizer.SelectiveQuantizer(case["model"], case["rep"])
  data = quantizer([r["tensor_name"] for r in rows])
  float_ops = [(name, tensor) for name, tensor, dtype in op_outputs(data) if dtype == "FLOAT32"]
  for row in rows:
    assert any(
      name == row["op_name"]
      and tensor.startswith(row["tensor_name"])
      and tensor[len(row["tensor_name"]) :] in ("", "1")
      for name, tensor in float_ops
    ), row
  assert len([name for name, _ in float_ops if name not in ("DEQUANTIZE",)]) == len(rows)
  with pytest.raises(layer_error.LayerErrorError, match="no op has output tensor"):
    quantizer(["model/bad/MatMul"])
  plain = quantizer([])
  assert quantizer([]) is plain  # one calibration, each set of float ops converted once
  runner = batched.BatchedRunner(case["int8"])
  np.testing.assert_array_equal(
    batched.BatchedRunner(plain).run(case["images"]), runner.run(case["images"])
  )


def test_metrics_equal_an_independent_computation():
  # Flatten -> Dense(3) with integer weights (fake_run.hand_model). Per layer, the float
  # reference of the FULLY_CONNECTED op is x_deq @ kernel + bias on the dequantized int8 input
  # x_deq, and its int8 output is the file's output: both computed here without the debugger.
  model = fake_run.hand_model()
  kernel, bias = model.layers[-1].get_weights()
  rng = np.random.default_rng(5)
  rep = rng.integers(0, 256, size=(20, 2, 2, 1)).astype(np.uint8)
  images = rng.integers(0, 256, size=(50, 2, 2, 1)).astype(np.uint8)
  # 50 = 3 * 16 + 2: full batches and a smaller last one.
  result = layer_error.layer_errors(model, rep, {"all": images}, batch_size=16)
  data = converter.convert(model, "full_int8", rep)
  runner = batched.BatchedRunner(data, runtime="builtin")
  x = runner.quantize(images).reshape(50, 4).astype(np.float64) - runner.quantize.zero_point
  ref = (x * runner.quantize.scale) @ kernel.astype(np.float64) + bias
  out = (
    runner.run_raw(images).astype(np.float64) - runner.dequantize.zero_point
  ) * runner.dequantize.scale
  err = out - ref
  cosine = np.mean(np.sum(out * ref, 1) / np.linalg.norm(out, axis=1) / np.linalg.norm(ref, axis=1))
  expected = {
    "count": 50,
    "mse": np.mean(err**2),
    "float_power": np.mean(ref**2),
    "nmse": np.sum(err**2) / np.sum(ref**2),
    "snr_db": 10 * np.log10(np.sum(ref**2) / np.sum(err**2)),
    "cosine": cosine,
  }
  assert [(r["op_index"], r["op_name"]) for r in result] == [(0, "RESHAPE"), (1, "FULLY_CONNECTED")]
  dense_row = result[1]
  assert dense_row["size"] == 3
  assert dense_row["subsets"]["all"]["count"] == 50
  for key in ("mse", "float_power", "nmse", "snr_db", "cosine"):
    np.testing.assert_allclose(
      dense_row["subsets"]["all"][key], expected[key], rtol=1e-4, err_msg=key
    )
  assert expected["mse"] > 1e-6  # a real quantization error was compared
  json.dumps(result, allow_nan=False)  # plain JSON


def test_model_explorer_node_data(case, tmp_path):
  # Model Explorer's custom node data, read by the package's own dataclasses
  # (ai-edge-model-explorer 0.1.34, model_explorer/node_data_builder.py: GraphNodeData,
  # NodeDataResult, GradientItem) in dacite's strict mode, and written back identically by its
  # `to_json_string` (which drops None fields and adds the defaults). Keys: output tensor names
  # of the file's ops.
  data = model_explorer.model_explorer_node_data(case["result"], "nmse", "forgotten")
  path = tmp_path / "nmse_forgotten.json"
  model_explorer.write_model_explorer_json(str(path), data)
  assert os.listdir(tmp_path) == ["nmse_forgotten.json"]  # no temporary file left
  loaded = json.loads(path.read_text())  # strict JSON: json.loads accepts what JSON.parse does
  assert loaded == data
  node_data = model_explorer_schema.load_graph_node_data(loaded)
  written = model_explorer_schema.round_trip(loaded)
  assert {k: written[k] for k in loaded} == loaded
  assert node_data.name == loaded["name"]
  assert all(isinstance(r.value, float) for r in node_data.results.values())
  # One graph's node data: `results` present, and no `results` inside it (the web app's test).
  assert isinstance(loaded["results"], dict) and "results" not in loaded["results"]
  tensors = {tensor for _, tensor, _ in op_outputs(case["int8"])}
  assert set(loaded["results"]) == tensors
  for key, entry in loaded["results"].items():
    assert set(entry) <= {"value", "bgColor", "textColor"}
    assert isinstance(entry["value"], (int, float)) and not isinstance(entry["value"], bool)
  stops = [item["stop"] for item in loaded["gradient"]]
  assert stops == sorted(stops) and stops[0] == 0 and stops[-1] == 1
  for item in loaded["gradient"]:
    assert set(item) <= {"stop", "bgColor", "textColor"}
    assert all(c[0] == "#" and len(c) == 7 for k, c in item.items() if k != "stop")  # hex only
  top = max(loaded["results"], key=lambda k: loaded["results"][k]["value"])
  assert _bad(top)
  for bad in (
    {**loaded, "colour": "red"},
    {"results": {top: {"value": "1.0"}}},
    {"gradient": loaded["gradient"]},
  ):  # unknown field, wrong type, no results
    with pytest.raises(dacite.DaciteError):
      model_explorer_schema.load_graph_node_data(bad)
  with pytest.raises(model_explorer.NodeDataError, match="unknown metric"):
    model_explorer.model_explorer_node_data(case["result"], "psnr", "forgotten")
