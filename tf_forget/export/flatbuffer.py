"""Reads weights out of a `.tflite` file: zeros per kernel, sizes raw and gzipped.

Sparsity is counted from the bytes of the file itself (the zeros must survive in
the flatbuffer's weight tensors), by parsing the flatbuffer with the LiteRT schema bindings
(`ai_edge_litert.schema_py_generated`, generated from `tensorflow/lite/schema/schema.fbs`). No
interpreter and no TensorFlow: the interpreter's `get_tensor` cannot read every constant once a
delegate has taken the graph, and `tf.lite.experimental.Analyzer` prints text only.

Counting rules (docs/spec.md §1.4):
  * *kernels* are the prunable weights: the weight input (index 1) of CONV_2D,
    DEPTHWISE_CONV_2D, CONV_3D, FULLY_CONNECTED and TRANSPOSE_CONV, followed back through
    DEQUANTIZE / DENSIFY ops to the constant stored in the file (float16 files store the kernel
    as a float16 constant feeding a DEQUANTIZE op);
  * *constants* are every constant tensor of the file (kernels, biases, folded BatchNorm, shape
    constants), i.e. a superset of "all parameters";
  * a stored value is zero when it represents the real number 0: `q == zero_point` for quantized
    tensors (per-channel zero points along the quantized dimension), `x == 0` for float tensors;
  * a tensor's element count is the product of its shape, so a sparse-encoded tensor
    (`Tensor.sparsity` set, fewer values stored) counts its missing elements as zeros.

The reading steps (`verify`, `parse`, `opcode`, `buffer_bytes`, `DTYPES`) also serve
`flatbuffer_graph`, which reads the main subgraph's ops, tensors, inputs and outputs.
"""

import gzip
import struct

from ai_edge_litert import schema_py_generated as schema
import numpy as np

from tf_forget.artifacts import errors
from tf_forget.export import flatbuffer_verify

TFLITE_IDENTIFIER = b"TFL3"

_OP = schema.BuiltinOperator
# op code -> index of its weight (kernel) input.
_KERNEL_INPUT = {
  _OP.CONV_2D: 1,
  _OP.DEPTHWISE_CONV_2D: 1,
  _OP.CONV_3D: 1,
  _OP.FULLY_CONNECTED: 1,
  _OP.TRANSPOSE_CONV: 1,
}
# Ops that only re-represent a constant (followed back to the stored tensor).
_PASS_THROUGH = (_OP.DEQUANTIZE, _OP.DENSIFY)

_T = schema.TensorType
# TFLite tensor type -> numpy dtype of its stored values (other types are not decoded).
DTYPES = {
  _T.FLOAT32: np.float32,
  _T.FLOAT16: np.float16,
  _T.FLOAT64: np.float64,
  _T.INT8: np.int8,
  _T.UINT8: np.uint8,
  _T.INT16: np.int16,
  _T.UINT16: np.uint16,
  _T.INT32: np.int32,
  _T.UINT32: np.uint32,
  _T.INT64: np.int64,
  _T.UINT64: np.uint64,
  _T.BOOL: np.bool_,
}


class TfliteFileError(errors.Error):
  """Bytes that are not a (complete) TFLite flatbuffer."""


def check_identifier(data, what="file"):
  """Raises `TfliteFileError` unless `data` carries the TFLite file identifier "TFL3".

  A truncated file keeps its identifier: `verify` checks the whole flatbuffer.
  """
  if len(data) < 8 or bytes(data[4:8]) != TFLITE_IDENTIFIER:
    raise TfliteFileError(f"{what} is not a TFLite flatbuffer (no 'TFL3' identifier)")


def verify(data, what="file"):
  """Raises `TfliteFileError` unless `data` is a complete TFLite flatbuffer.

  Every offset and index this module reads is bounds-checked first (`flatbuffer_verify`), so
  a truncated or corrupt file is refused in one line instead of failing (or reading garbage)
  inside the parser. A file shorter than the 8-byte header counts as truncated; 8 bytes or
  more without the "TFL3" identifier is not a TFLite file (`check_identifier`).

  Args:
    data: the bytes of a `.tflite` file.
    what: the file's name, for the message.
  """
  if len(data) < 8:
    raise TfliteFileError(
      f"{what} is not a complete TFLite flatbuffer (truncated or corrupt: "
      f"{len(data)} bytes, shorter than the 8-byte header)"
    )
  check_identifier(data, what)
  reason = flatbuffer_verify.problem(data)
  if reason is not None:
    raise TfliteFileError(
      f"{what} is not a complete TFLite flatbuffer (truncated or corrupt: {reason})"
    )


def sizes(data):
  """Raw and gzipped size in bytes (gzip level 9, mtime 0: reproducible)."""
  return {"raw": len(data), "gzip": len(gzip.compress(bytes(data), compresslevel=9, mtime=0))}


def opcode(model, op):
  """The builtin operator code of `op` (`schema.BuiltinOperator`)."""
  code = model.OperatorCodes(op.OpcodeIndex())
  return max(code.BuiltinCode(), code.DeprecatedBuiltinCode())


def buffer_bytes(model, data, tensor):
  """The stored bytes of a constant tensor, or None for an activation / input tensor."""
  index = tensor.Buffer()
  if index <= 0 or index >= model.BuffersLength():
    return None
  buf = model.Buffers(index)
  if buf.Offset() > 1:  # Large models (> 2 GB) keep buffers after the flatbuffer.
    return bytes(data[buf.Offset() : buf.Offset() + buf.Size()])
  if buf.DataLength() == 0:
    return None
  return buf.DataAsNumpy().tobytes()


def _is_zero(tensor, values):
  """Boolean mask of the stored values that represent the real number 0."""
  quant = tensor.Quantization()
  if quant is not None and quant.ZeroPointLength() > 0 and np.issubdtype(values.dtype, np.integer):
    zero_points = quant.ZeroPointAsNumpy().astype(np.int64)
    if zero_points.size == 1 or tensor.Sparsity() is not None:
      return values.astype(np.int64) == zero_points.reshape(-1)[0]
    shape = tensor.ShapeAsNumpy()
    axis = quant.QuantizedDimension()
    bshape = [1] * len(shape)
    bshape[axis] = zero_points.size
    return values.reshape(shape).astype(np.int64) == zero_points.reshape(bshape)
  return values == 0


def _tensor_stats(model, data, tensor):
  raw = buffer_bytes(model, data, tensor)
  if raw is None:
    return None
  dtype = DTYPES.get(tensor.Type())
  shape = tensor.ShapeAsNumpy() if tensor.ShapeLength() else np.zeros([0], np.int32)
  count = int(np.prod(shape, dtype=np.int64))
  if dtype is None:  # int4, string, ...: counted, zeros not decoded.
    return {"count": count, "zeros": None, "dtype": int(tensor.Type())}
  values = np.frombuffer(raw, dtype=dtype)
  if tensor.Sparsity() is None and values.size != count:
    raise TfliteFileError(
      f"tensor {tensor.Name().decode()!r} stores {values.size} values for shape {list(shape)}"
    )
  nonzero = int(np.count_nonzero(~_is_zero(tensor, values)))
  return {"count": count, "zeros": count - nonzero, "dtype": np.dtype(dtype).name}


def _fraction(zeros, count):
  return float(zeros) / count if count else float("nan")


def _kernel_tensors(model):
  """[(subgraph index, tensor index)] of the stored kernels of conv / dense ops, in op order."""
  kernel_tensors = []
  for s in range(model.SubgraphsLength()):
    graph = model.Subgraphs(s)
    producer = {}
    for o in range(graph.OperatorsLength()):
      op = graph.Operators(o)
      for j in range(op.OutputsLength()):
        producer[op.Outputs(j)] = op
    for o in range(graph.OperatorsLength()):
      op = graph.Operators(o)
      position = _KERNEL_INPUT.get(opcode(model, op))
      if position is None or position >= op.InputsLength():
        continue
      t = op.Inputs(position)
      while t in producer and opcode(model, producer[t]) in _PASS_THROUGH:
        t = producer[t].Inputs(0)
      if t >= 0 and (s, t) not in kernel_tensors:
        kernel_tensors.append((s, t))
  return kernel_tensors


def zero_filters(data):
  """Whole output channels stored as zeros, per kernel (filter pruning shows here).

  TFLite stores conv kernels `[out, H, W, in]` and fully-connected weights `[out, in]`: a filter
  removed by filter thresholding is an all-zero slice along axis 0.

  Args:
    data: the bytes of a `.tflite` file.

  Returns:
    {kernel tensor name: [all-zero output channels, output channels]}, in op order; kernels
    stored sparse-encoded or in an undecoded type are left out.

  Raises:
    TfliteFileError: not a complete TFLite flatbuffer (`verify`).
  """
  verify(data)
  data = bytes(data)
  out = {}
  try:
    model = schema.Model.GetRootAs(data, 0)
    for s, t in _kernel_tensors(model):
      tensor = model.Subgraphs(s).Tensors(t)
      raw = buffer_bytes(model, data, tensor)
      dtype = DTYPES.get(tensor.Type())
      if raw is None or dtype is None or tensor.Sparsity() is not None or tensor.ShapeLength() < 2:
        continue
      shape = tensor.ShapeAsNumpy()
      zero = _is_zero(tensor, np.frombuffer(raw, dtype=dtype)).reshape(shape[0], -1)
      out[tensor.Name().decode("utf-8", "replace")] = [int(zero.all(axis=1).sum()), int(shape[0])]
  except (IndexError, TypeError, ValueError, struct.error) as e:
    raise TfliteFileError(f"cannot parse the TFLite flatbuffer: {e}") from e
  return out


def weight_stats(data):
  """Counts zeros in the constant tensors stored in a TFLite flatbuffer.

  Args:
    data: the bytes of a `.tflite` file (verify it first, e.g. with
    `tf_forget.evaluate.interpreter`).

  Returns:
    A JSON-ready dict:
      `kernels`: {count, zeros, fraction} over the prunable kernels (docs/spec.md §1.4);
      `constants`: {count, zeros, fraction} over every constant tensor;
      `per_kernel`: {tensor name: {count, zeros, fraction, dtype}} in file order.

  Raises:
    TfliteFileError: not a complete TFLite flatbuffer (`verify`), or a tensor whose stored size
      contradicts its shape.
  """
  verify(data)
  data = bytes(data)
  try:
    model = schema.Model.GetRootAs(data, 0)
    kernel_tensors = _kernel_tensors(model)  # (subgraph index, tensor index)
    stats = {}
    for s in range(model.SubgraphsLength()):
      graph = model.Subgraphs(s)
      for t in range(graph.TensorsLength()):
        st = _tensor_stats(model, data, graph.Tensors(t))
        if st is not None:
          stats[(s, t)] = st
  except (IndexError, TypeError, ValueError, struct.error) as e:
    if isinstance(e, TfliteFileError):
      raise
    raise TfliteFileError(f"cannot parse the TFLite flatbuffer: {e}") from e

  def total(keys):
    keys = [k for k in keys if k in stats and stats[k]["zeros"] is not None]
    count = sum(stats[k]["count"] for k in keys)
    zeros = sum(stats[k]["zeros"] for k in keys)
    return {"count": count, "zeros": zeros, "fraction": _fraction(zeros, count)}

  per_kernel = {}
  for key in kernel_tensors:
    if key in stats:
      st = stats[key]
      name = model.Subgraphs(key[0]).Tensors(key[1]).Name().decode("utf-8", "replace")
      per_kernel[name] = dict(st, fraction=_fraction(st["zeros"] or 0, st["count"]))
  return {
    "kernels": total([k for k in kernel_tensors if k in stats]),
    "constants": total(stats),
    "per_kernel": per_kernel,
  }


def parse(data, read):
  """`read(model)` on the file's flatbuffer root (`schema.Model`), after `verify`; a malformed
  file raises TfliteFileError."""
  verify(data)
  try:
    return read(schema.Model.GetRootAs(bytes(data), 0))
  except (IndexError, TypeError, ValueError, AttributeError, struct.error) as e:
    raise TfliteFileError(f"cannot parse the TFLite flatbuffer: {e}") from e


def sparse_tensors(data):
  """Names of the tensors stored sparse-encoded (`Tensor.sparsity` set).

  Raises:
    TfliteFileError: not a complete TFLite flatbuffer (`verify`).
  """

  def read(model):
    names = []
    for s in range(model.SubgraphsLength()):
      graph = model.Subgraphs(s)
      for t in range(graph.TensorsLength()):
        tensor = graph.Tensors(t)
        if tensor.Sparsity() is not None:
          names.append(tensor.Name().decode("utf-8", "replace"))
    return names

  return parse(data, read)
