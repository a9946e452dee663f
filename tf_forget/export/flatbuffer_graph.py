"""What the main subgraph of a `.tflite` file is made of: its ops, tensors, inputs and outputs.

Read from the bytes of the file with the LiteRT schema bindings
(`ai_edge_litert.schema_py_generated`), as `flatbuffer` reads its weights: no interpreter and
no TensorFlow. `graph` gives the ops in execution order with their tensors (`Graph`, `Op`,
`Tensor`: what the tensor-by-tensor comparison of two files and the per-op costs walk);
`io_details` the model's interface, each input and output with its shape signature, dtype and
quantization. A file that is not a complete TFLite flatbuffer raises
`flatbuffer.TfliteFileError` (`flatbuffer.verify` runs first).
"""

import dataclasses
from typing import Optional, Tuple

from ai_edge_litert import schema_py_generated as schema
import numpy as np

from tf_forget.export import flatbuffer

_OP_NAMES = {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}


def _io_tensor(graph, index):
  tensor = graph.Tensors(index)
  quant = tensor.Quantization()
  scale = quant.ScaleAsNumpy().tolist() if quant is not None and quant.ScaleLength() else []
  zero = quant.ZeroPointAsNumpy().tolist() if quant is not None and quant.ZeroPointLength() else []
  signature = (
    tensor.ShapeSignatureAsNumpy().tolist()
    if tensor.ShapeSignatureLength()
    else tensor.ShapeAsNumpy().tolist()
  )
  dtype = flatbuffer.DTYPES.get(tensor.Type())
  return {
    "name": tensor.Name().decode("utf-8", "replace"),
    "shape": signature,  # -1: dynamic (the batch dimension of our exports)
    "dtype": np.dtype(dtype).name if dtype is not None else str(tensor.Type()),
    "scale": scale,
    "zero_point": zero,
  }


def io_details(data):
  """Inputs and outputs of the main subgraph: name, shape signature, dtype, quantization.

  Returns:
    {"inputs": [...], "outputs": [...]}, each entry {name, shape, dtype, scale, zero_point}
    (scale / zero_point empty for float tensors).

  Raises:
    flatbuffer.TfliteFileError: not a complete TFLite flatbuffer (`flatbuffer.verify`).
  """

  def read(model):
    graph = model.Subgraphs(0)
    return {
      "inputs": [_io_tensor(graph, graph.Inputs(i)) for i in range(graph.InputsLength())],
      "outputs": [_io_tensor(graph, graph.Outputs(i)) for i in range(graph.OutputsLength())],
    }

  return flatbuffer.parse(data, read)


@dataclasses.dataclass(frozen=True)
class Tensor:
  """A tensor of the main subgraph: its shape (the stored one; batch 1 in our exports), dtype
  name, per-tensor quantization (None for float tensors and per-channel weights) and whether
  the file stores its values (a constant)."""

  name: str
  shape: Tuple[int, ...]
  dtype: str
  scale: Optional[float]
  zero_point: Optional[int]
  constant: bool


@dataclasses.dataclass(frozen=True)
class Op:
  """An op of the main subgraph: builtin name ("CONV_2D") or custom code ("NumericVerify"),
  input and output tensor indices (-1: an omitted optional input)."""

  name: str
  inputs: Tuple[int, ...]
  outputs: Tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class Graph:
  """The main subgraph of a `.tflite` file: ops in execution order, tensors, inputs, outputs."""

  ops: Tuple[Op, ...]
  tensors: Tuple[Tensor, ...]
  inputs: Tuple[int, ...]
  outputs: Tuple[int, ...]


def _tensor(model, data, tensor):
  quant = tensor.Quantization()
  per_tensor = quant is not None and quant.ScaleLength() == 1 and quant.ZeroPointLength() == 1
  dtype = flatbuffer.DTYPES.get(tensor.Type())
  return Tensor(
    name=tensor.Name().decode("utf-8", "replace"),
    shape=tuple(int(d) for d in tensor.ShapeAsNumpy()) if tensor.ShapeLength() else (),
    dtype=np.dtype(dtype).name if dtype is not None else str(tensor.Type()),
    scale=float(quant.Scale(0)) if per_tensor else None,
    zero_point=int(quant.ZeroPoint(0)) if per_tensor else None,
    constant=flatbuffer.buffer_bytes(model, data, tensor) is not None,
  )


def graph(data):
  """The main subgraph of a `.tflite` file, read with the LiteRT schema (no interpreter).

  Raises:
    flatbuffer.TfliteFileError: not a complete TFLite flatbuffer (`flatbuffer.verify`).
  """

  def read(model):
    sub = model.Subgraphs(0)
    ops = []
    for op in map(sub.Operators, range(sub.OperatorsLength())):
      code = flatbuffer.opcode(model, op)
      name = (
        model.OperatorCodes(op.OpcodeIndex()).CustomCode().decode("utf-8", "replace")
        if code == schema.BuiltinOperator.CUSTOM
        else _OP_NAMES.get(code, str(code))
      )
      ops.append(
        Op(
          name,
          tuple(int(i) for i in op.InputsAsNumpy()) if op.InputsLength() else (),
          tuple(int(i) for i in op.OutputsAsNumpy()) if op.OutputsLength() else (),
        )
      )
    return Graph(
      ops=tuple(ops),
      tensors=tuple(_tensor(model, data, sub.Tensors(i)) for i in range(sub.TensorsLength())),
      inputs=tuple(sub.Inputs(i) for i in range(sub.InputsLength())),
      outputs=tuple(sub.Outputs(i) for i in range(sub.OutputsLength())),
    )

  return flatbuffer.parse(data, read)
