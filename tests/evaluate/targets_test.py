"""Deployment targets: what XNNPACK took of each kind of file, quantization kinds, and which
files run on which target (with the reason when not)."""

import numpy as np
import pytest
import tensorflow as tf

from tf_forget.compat import keras2
from tf_forget.evaluate import interpreter
from tf_forget.evaluate import targets
from tf_forget.export import converter
from tf_forget.export import flatbuffer_graph

_IMAGES = np.random.default_rng(0).integers(0, 256, size=(16, 8, 8, 1)).astype(np.uint8)


def _model(cumsum=False):
  """8x8x1 -> Conv2D(4) -> Flatten -> [CUMSUM] -> Dense(10): the dense kernel has 1440
  weights, enough for dynamic-range quantization (>= 1024); CUMSUM is an op XNNPACK lacks."""
  keras = keras2.keras()
  keras.utils.set_random_seed(0)
  inp = keras.Input((8, 8, 1), name="image")
  x = keras.layers.Flatten()(keras.layers.Conv2D(4, 3, activation="relu")(inp))
  if cumsum:
    x = keras.layers.Lambda(lambda t: tf.math.cumsum(t, axis=1))(x)
  return keras.Model(inp, keras.layers.Dense(10)(x))


def _convert(model, int8_only=True, io_type=None):
  """Full-integer quantization with a chosen I/O type (float32 when `io_type` is None)."""
  conv = tf.lite.TFLiteConverter.from_keras_model(model)
  conv.optimizations = [tf.lite.Optimize.DEFAULT]
  conv.representative_dataset = converter.representative_dataset(_IMAGES)
  if int8_only:
    conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
  if io_type is not None:
    conv.inference_input_type = conv.inference_output_type = io_type
  return conv.convert()


@pytest.fixture(scope="module")
def files():
  model, mixed = _model(), _model(cumsum=True)
  out = {
    fmt: converter.convert(model, fmt, _IMAGES)
    for fmt in ("float32", "float16", "dynamic_int8", "full_int8", "full_int8~int16x8")
  }
  out["uint8_io"] = _convert(model, io_type=tf.uint8)
  out["float_io"] = _convert(model)
  out["cumsum_float32"] = tf.lite.TFLiteConverter.from_keras_model(mixed).convert()
  # No int8-only op set: CUMSUM has no int8 kernel and stays float between DEQUANTIZE and
  # QUANTIZE, inside an int8-I/O file.
  out["cumsum_int8"] = _convert(mixed, int8_only=False, io_type=tf.int8)
  sparse = _model()
  kernel, bias = sparse.layers[-1].get_weights()
  kernel[np.abs(kernel) < np.quantile(np.abs(kernel), 0.9)] = 0
  sparse.layers[-1].set_weights([kernel, bias])
  out["sparse_int8"] = converter.convert(sparse, "full_int8", _IMAGES, "sparse")
  return out


def _ops(data):
  return [op.name for op in flatbuffer_graph.graph(data).ops]


def test_quantization_kinds(files, tmp_path):
  kinds = {name: targets.quantization_kind(data) for name, data in files.items()}
  assert kinds == {
    "float32": "float32",
    "float16": "float16",
    "dynamic_int8": "dynamic_range_int8",
    "full_int8": "full_int8",
    "full_int8~int16x8": "int16x8",
    "uint8_io": "full_int8",
    "float_io": "full_int8",
    "cumsum_float32": "float32",
    "cumsum_int8": "full_int8",
    "sparse_int8": "full_int8",
  }
  path = tmp_path / "model.tflite"
  path.write_bytes(files["dynamic_int8"])
  assert targets.quantization_kind(str(path)) == "dynamic_range_int8"


@pytest.mark.parametrize("name", ["float32", "float16", "dynamic_int8", "full_int8", "float_io"])
def test_whole_file_delegated(files, name):
  result = targets.delegation(files[name])
  assert result.total_ops == len(_ops(files[name])) >= 3
  assert result.delegated_ops == result.total_ops
  assert result.builtin_ops == {} and result.runtime == "xnnpack"
  assert result.fallback_reason is None


def test_16x8_file_is_delegated_nowhere(files):
  """XNNPACK accepts the 16x8 file without error and takes none of its ops."""
  data = files["full_int8~int16x8"]
  _, device_runtime, _ = interpreter.create_for_device(data)
  assert device_runtime == "xnnpack"  # what the evaluation's runtime column says
  result = targets.delegation(data)
  assert (result.total_ops, result.delegated_ops, result.runtime) == (3, 0, "builtin")
  assert result.builtin_ops == {"CONV_2D": 1, "FULLY_CONNECTED": 1, "RESHAPE": 1}
  assert result.fallback_reason is None


@pytest.mark.parametrize(
  "name,total,delegated,builtin",
  [
    # The QUANTIZE ops converting uint8 <-> int8 at both ends stay on the built-in kernels.
    ("uint8_io", 5, 3, {"QUANTIZE": 2}),
    # CUMSUM splits the graph into two DELEGATE partitions around it.
    ("cumsum_float32", 4, 3, {"CUMSUM": 1}),
    ("cumsum_int8", 6, 5, {"CUMSUM": 1}),
  ],
)
def test_partly_delegated_counts_exactly(files, name, total, delegated, builtin):
  result = targets.delegation(files[name])
  assert (result.total_ops, result.delegated_ops, result.builtin_ops) == (total, delegated, builtin)
  assert result.total_ops == len(_ops(files[name]))
  assert result.runtime == "xnnpack"


def test_refused_by_xnnpack_runs_builtin(files):
  result = targets.delegation(files["sparse_int8"], batch_size=4)
  assert result.delegated_ops == 0 and result.runtime == "builtin"
  assert sum(result.builtin_ops.values()) == result.total_ops
  assert "DENSIFY" in result.builtin_ops
  assert "failed to prepare" in result.fallback_reason


def test_unreadable_listing_is_one_line_error(files, monkeypatch):
  """A LiteRT listing that is not "original ops, then DELEGATE nodes" is refused."""
  real = interpreter.create_for_device

  class Listing:
    def __init__(self, interp):
      self._interp = interp

    def _get_ops_details(self):
      return self._interp._get_ops_details()[1:]

  monkeypatch.setattr(
    interpreter, "create_for_device", lambda *a, **k: (Listing(real(*a, **k)[0]), "xnnpack", None)
  )
  with pytest.raises(interpreter.TfliteError, match="DELEGATE nodes") as info:
    targets.delegation(files["float32"])
  assert "\n" not in str(info.value)


_FLOAT = "its activations are float"
_INT16_GPU = (
  "16x8: its activations are int16: the GPU delegate runs float and 8-bit quantized models"
)


@pytest.mark.parametrize(
  "name,integer_only,gpu",
  [
    ("float32", f"float32: {_FLOAT}", None),
    ("float16", f"float16: {_FLOAT}", None),
    ("dynamic_int8", f"dynamic-range int8: {_FLOAT}", None),
    ("full_int8", None, None),
    ("uint8_io", None, None),
    ("sparse_int8", None, None),
    ("float_io", "its input is float32: integer_only targets take int8/uint8 I/O", None),
    ("cumsum_int8", "op CUMSUM runs in float32: integer_only targets run integer ops only", None),
    (
      "full_int8~int16x8",
      "16x8: its activations are int16: integer_only targets run int8 ops",
      _INT16_GPU,
    ),
  ],
)
def test_runs_on(files, name, integer_only, gpu):
  data = files[name]
  assert targets.runs_on(data) == (True, None)  # cpu, the default
  assert targets.runs_on(data, "cpu") == (True, None)
  for target, reason in (("integer_only", integer_only), ("gpu", gpu)):
    assert targets.runs_on(data, target) == (reason is None, reason)


def test_output_type_is_checked(files):
  """A file with int8 input but float output does not run on integer_only targets."""
  data = files["full_int8"]
  io = flatbuffer_graph.io_details(data)
  assert io["inputs"][0]["dtype"] == io["outputs"][0]["dtype"] == "int8"
  assert targets._integer_io_problem(
    {"inputs": io["inputs"], "outputs": [dict(io["outputs"][0], dtype="float32")]}
  ) == ("its output is float32: integer_only targets take int8/uint8 I/O")


@pytest.mark.parametrize("content", [b"", b"garbage" * 20])
def test_bad_files_are_one_line_errors(tmp_path, files, content):
  truncated = files["float32"][: len(files["float32"]) // 2]
  path = tmp_path / "bad.tflite"
  path.write_bytes(content)
  for model, pattern in (
    (str(path), "no 'TFL3' identifier"),
    (truncated, "truncated or corrupt"),
    (str(tmp_path / "missing.tflite"), "cannot read"),
  ):
    for call in (targets.delegation, targets.quantization_kind, targets.runs_on):
      with pytest.raises(interpreter.TfliteError, match=pattern) as info:
        call(model)
      assert "\n" not in str(info.value)


def test_targets_and_latency():
  assert list(targets.TARGETS) == ["cpu", "integer_only", "gpu"]
  assert targets.DEFAULT_TARGET == "cpu"
  assert [targets.latency_measurable(t) for t in targets.TARGETS] == [True, False, False]
  assert "this machine" in targets.latency_label("cpu")
  assert targets.latency_label("integer_only").startswith("this machine's CPU latency, not ")
  for call in (
    targets.latency_measurable,
    targets.latency_label,
    lambda t: targets.runs_on(b"", t),
  ):
    with pytest.raises(targets.TargetError, match="unknown deployment target 'tpu'"):
      call("tpu")
