"""Zeros counted from the flatbuffer: hand-set kernels, a tfmot-pruned model, bad bytes; truncated
and corrupt files refused by `verify` before any parser (`flatbuffer`,
`flatbuffer_graph`) reads them."""

from ai_edge_litert import schema_py_generated as schema
import flatbuffers
import numpy as np
import pytest

from tests.export import fake_run
from tf_forget.artifacts import names
from tf_forget.compat import keras2
from tf_forget.export import converter
from tf_forget.export import flatbuffer
from tf_forget.export import flatbuffer_graph


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


@pytest.mark.parametrize("fmt", list(names.FORMAT_NAMES))
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
  model = fake_run.prune(
    fake_run.train(fake_run.tiny_cnn(1), dataset, epochs=1), dataset, sparsity=0.8, epochs=1
  )
  return model, dataset


@pytest.mark.parametrize("fmt", list(names.FORMAT_NAMES))
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
  io = flatbuffer_graph.io_details(
    converter.convert(model, "full_int8", dataset.take("train", 20).images)
  )
  (inp,), (out,) = io["inputs"], io["outputs"]
  assert inp["shape"] == [-1, 8, 8, 1] and inp["dtype"] == "int8" and len(inp["scale"]) == 1
  assert out["shape"] == [-1, fake_run.NUM_CLASSES] and out["dtype"] == "int8"


@pytest.mark.parametrize("data", [b"not a tflite file at all", b"\0" * 64])
def test_not_tflite(data):
  with pytest.raises(flatbuffer.TfliteFileError, match="not a TFLite flatbuffer"):
    flatbuffer.weight_stats(data)


# Every entry point that parses a file (each runs `verify` first).
PARSERS = (
  flatbuffer.weight_stats,
  flatbuffer.zero_filters,
  flatbuffer.sparse_tensors,
  flatbuffer_graph.io_details,
  flatbuffer_graph.graph,
)
INCOMPLETE = r"^f\.tflite is not a complete TFLite flatbuffer \(truncated or corrupt: .+\)$"


@pytest.fixture(scope="module")
def small_files():
  """{format: bytes} of the known-zeros model in float32 and full int8."""
  rep = np.random.default_rng(0).integers(0, 256, (10, 6, 6, 1)).astype(np.uint8)
  model = model_with_known_zeros()
  return {fmt: converter.convert(model, fmt, rep) for fmt in ("float32", "full_int8")}


@pytest.mark.parametrize("fmt", ["float32", "full_int8"])
def test_every_cut_is_refused(small_files, fmt):
  # The converter's file ends with its last table or string: no cut leaves a complete file.
  data = small_files[fmt]
  flatbuffer.verify(data, "f.tflite")
  for cut in range(len(data)):
    with pytest.raises(flatbuffer.TfliteFileError, match=INCOMPLETE):
      flatbuffer.verify(data[:cut], "f.tflite")
  for cut in (0, 7, 8, 100, len(data) // 2, len(data) - 100, len(data) - 1):
    for parse in PARSERS:
      with pytest.raises(flatbuffer.TfliteFileError, match="not a complete TFLite flatbuffer"):
        parse(data[:cut])


@pytest.mark.parametrize("fmt", ["float32", "full_int8"])
def test_overwritten_bytes_never_escape_the_parser(small_files, fmt):
  # Random bytes over random places: refused by `verify`, or (weights, names, options
  # overwritten: still a well-formed flatbuffer) every parser returns or raises its own error.
  data, rng = small_files[fmt], np.random.default_rng(35)
  refused = 0
  for _ in range(300):
    corrupt = bytearray(data)
    pos = int(rng.integers(8, len(data) - 8))
    corrupt[pos : pos + 8] = rng.integers(0, 256, 8, dtype=np.uint8).tobytes()
    try:
      flatbuffer.verify(bytes(corrupt))
    except flatbuffer.TfliteFileError:
      refused += 1
      continue
    for parse in PARSERS:
      try:
        parse(bytes(corrupt))
      except flatbuffer.TfliteFileError:
        pass
  assert refused >= 30  # offsets are a good share of a small file's bytes


def _repacked(data, change):
  """`data` unpacked with the schema's object API, `change(model)`, packed again."""
  model = schema.ModelT.InitFromObj(schema.Model.GetRootAs(data, 0))
  change(model)
  builder = flatbuffers.Builder(1024)
  builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
  return bytes(builder.Output())


def _set_op_input(model):
  op = model.subgraphs[0].operators[0]
  op.inputs = [99, *op.inputs[1:]]


def _set_opcode(model):
  model.subgraphs[0].operators[0].opcodeIndex = len(model.operatorCodes)


def _set_buffer(model):
  model.subgraphs[0].tensors[0].buffer = len(model.buffers) + 5


def _set_graph_output(model):
  model.subgraphs[0].outputs = [-1]


def _set_large_buffer(model):  # data "after the flatbuffer" (> 2 GB models), past the end
  model.buffers[-1].data, model.buffers[-1].offset, model.buffers[-1].size = None, 1 << 20, 64


def _drop_subgraphs(model):
  model.subgraphs = []


@pytest.mark.parametrize(
  "change, reason",
  [
    (_set_op_input, r"subgraph 0: operator 0: inputs names tensor 99 of \d+"),
    (_set_opcode, r"subgraph 0: operator 0 has operator code \d+ of \d+"),
    (_set_buffer, r"subgraph 0: tensor 0 stores its values in buffer \d+ of \d+"),
    (_set_graph_output, r"subgraph 0: outputs names tensor -1 of \d+"),
    (_set_large_buffer, r"buffer \d+: data: bytes 1048576-1048640 past the end"),
    (_drop_subgraphs, r"the model has no subgraph"),
  ],
)
def test_indices_the_parser_follows_are_checked(small_files, change, reason):
  # Well-formed flatbuffers (packed by the schema's own builder) whose indices are wrong.
  data = small_files["float32"]
  flatbuffer.verify(_repacked(data, lambda model: None))  # repacked as it is: accepted
  with pytest.raises(flatbuffer.TfliteFileError, match=reason):
    flatbuffer.verify(_repacked(data, change), "f.tflite")
