"""Bounds-checks a TFLite flatbuffer before `tf_forget.export.flatbuffer` parses it.

The Python flatbuffer bindings (`ai_edge_litert.schema_py_generated`) follow offsets without
checking them: a truncated file raises `struct.error` from deep inside, and a corrupt offset
reads some other part of the file, or loops over a length read from garbage. `problem` walks
every table, vector and string that `tf_forget.export.flatbuffer` reads, in the layout of
`tensorflow/lite/schema/schema.fbs` (Model, OperatorCode, Buffer, SubGraph, Tensor,
QuantizationParameters, Operator), as flatbuffers' C++ `Verifier` does when the LiteRT
interpreter loads a file:

  * the root offset, each table's vtable and the table itself lie inside the file, and every
    field read lies inside its table;
  * every offset field points inside the file, and a vector's or string's length (a string's
    terminating zero too) fits before the end of the file — checked before anything loops
    over it, so the walk is linear in the file's size;
  * the indices the parser follows are in range: operator code of each operator, tensors of
    each operator (-1: an omitted optional input) and of the subgraph's inputs and outputs,
    each tensor's buffer, and a large model's buffers stored after the flatbuffer
    (`Buffer.offset`, `size`).

Builtin options, metadata and signatures are not read by the parser; the LiteRT interpreter
checks them (`tf_forget.evaluate.interpreter`).
"""

import struct

import numpy as np

# Byte offsets in a table's vtable of the fields read (schema.fbs field i: 4 + 2 i, as
# `self._tab.Offset(n)` in `ai_edge_litert.schema_py_generated`).
_MODEL_CODES, _MODEL_SUBGRAPHS, _MODEL_DESCRIPTION, _MODEL_BUFFERS = 6, 8, 10, 12
_CODE_DEPRECATED, _CODE_CUSTOM, _CODE_VERSION, _CODE_BUILTIN = 4, 6, 8, 10
_BUFFER_DATA, _BUFFER_OFFSET, _BUFFER_SIZE = 4, 6, 8
_GRAPH_TENSORS, _GRAPH_INPUTS, _GRAPH_OUTPUTS, _GRAPH_OPS, _GRAPH_NAME = 4, 6, 8, 10, 12
_TENSOR_SHAPE, _TENSOR_TYPE, _TENSOR_BUFFER, _TENSOR_NAME = 4, 6, 8, 10
_TENSOR_QUANT, _TENSOR_SPARSITY, _TENSOR_SIGNATURE = 12, 16, 18
_QUANT_MIN, _QUANT_MAX, _QUANT_SCALE, _QUANT_ZERO, _QUANT_DIM = 4, 6, 8, 10, 16
_OP_CODE, _OP_INPUTS, _OP_OUTPUTS = 4, 6, 8


class _Corrupt(Exception):
  """The first problem found; `problem` returns its text (never raised out of this module)."""


class _Table:
  """One flatbuffer table whose vtable and extent have been checked."""

  def __init__(self, data, pos, what):
    self.data, self.pos, self.what = data, pos, what
    soffset = _scalar(data, "<i", pos, what)
    vtable = pos - soffset
    self.vsize = _scalar(data, "<H", vtable, f"{what}: vtable")
    size = _scalar(data, "<H", vtable + 2, f"{what}: vtable")
    if self.vsize < 4 or self.vsize % 2 or size < 4:
      raise _Corrupt(f"{what}: vtable at byte {vtable} has sizes {self.vsize}, {size}")
    _span(data, vtable, self.vsize, f"{what}: vtable")
    _span(data, pos, size, what)
    self.vtable, self.size = vtable, size

  def field(self, slot, nbytes):
    """Absolute position of the field at vtable offset `slot`, or None when absent."""
    if slot >= self.vsize:
      return None
    offset = struct.unpack_from("<H", self.data, self.vtable + slot)[0]
    if offset == 0:
      return None
    if offset + nbytes > self.size:
      raise _Corrupt(f"{self.what}: field {slot // 2 - 2} lies outside its table")
    return self.pos + offset

  def scalar(self, slot, fmt):
    pos = self.field(slot, struct.calcsize(fmt))
    return 0 if pos is None else struct.unpack_from(fmt, self.data, pos)[0]

  def target(self, slot, what):
    """Where the offset field at `slot` points (checked to be inside the file), or None."""
    pos = self.field(slot, 4)
    return None if pos is None else _follow(self.data, pos, f"{self.what}: {what}")

  def vector(self, slot, elem, what, terminator=0):
    """(start, length) of the vector at `slot` of `elem`-byte elements; (0, 0) when absent."""
    pos = self.target(slot, what)
    if pos is None:
      return 0, 0
    length = _scalar(self.data, "<I", pos, f"{self.what}: {what}")
    _span(self.data, pos + 4, length * elem + terminator, f"{self.what}: {what}")
    return pos + 4, length

  def ints(self, slot, what):
    start, length = self.vector(slot, 4, what)
    return np.frombuffer(self.data, "<i4", count=length, offset=start)

  def string(self, slot, what):
    self.vector(slot, 1, what, terminator=1)

  def table(self, slot, what):
    pos = self.target(slot, what)
    return None if pos is None else _Table(self.data, pos, f"{self.what}: {what}")

  def tables(self, slot, what):
    """The tables of the vector of tables at `slot`, the i-th named f"{what} {i}"."""
    start, length = self.vector(slot, 4, f"{what}s")
    prefix = "" if self.what == "model" else f"{self.what}: "
    return [
      _Table(
        self.data, _follow(self.data, start + 4 * i, f"{prefix}{what} {i}"), f"{prefix}{what} {i}"
      )
      for i in range(length)
    ]


def _span(data, pos, nbytes, what):
  if pos < 0 or pos + nbytes > len(data):
    raise _Corrupt(f"{what}: bytes {pos}-{pos + nbytes} past the end of the {len(data)}-byte file")


def _scalar(data, fmt, pos, what):
  _span(data, pos, struct.calcsize(fmt), what)
  return struct.unpack_from(fmt, data, pos)[0]


def _follow(data, pos, what):
  """The position an unsigned 32-bit offset stored at `pos` points to."""
  target = pos + _scalar(data, "<I", pos, what)
  _span(data, target, 4, what)
  return target


def _indices(values, count, what, optional=False):
  """Raises unless every tensor index is in [0, count) (-1 too when `optional`)."""
  bad = values[(values < (-1 if optional else 0)) | (values >= count)]
  if bad.size:
    raise _Corrupt(f"{what} names tensor {int(bad[0])} of {count}")


def _tensor(tensor, buffers):
  tensor.ints(_TENSOR_SHAPE, "shape")
  tensor.scalar(_TENSOR_TYPE, "<b")
  buffer = tensor.scalar(_TENSOR_BUFFER, "<I")
  if buffer and buffer >= buffers:
    raise _Corrupt(f"{tensor.what} stores its values in buffer {buffer} of {buffers}")
  tensor.string(_TENSOR_NAME, "name")
  quant = tensor.table(_TENSOR_QUANT, "quantization")
  if quant is not None:
    for slot, elem, what in (
      (_QUANT_MIN, 4, "min"),
      (_QUANT_MAX, 4, "max"),
      (_QUANT_SCALE, 4, "scale"),
      (_QUANT_ZERO, 8, "zero point"),
    ):
      quant.vector(slot, elem, what)
    quant.scalar(_QUANT_DIM, "<i")
  tensor.table(_TENSOR_SPARSITY, "sparsity")
  tensor.ints(_TENSOR_SIGNATURE, "shape signature")


def _subgraph(graph, codes, buffers):
  tensors = graph.tables(_GRAPH_TENSORS, "tensor")
  for tensor in tensors:
    _tensor(tensor, buffers)
  for slot, what in ((_GRAPH_INPUTS, "inputs"), (_GRAPH_OUTPUTS, "outputs")):
    _indices(graph.ints(slot, what), len(tensors), f"{graph.what}: {what}")
  for op in graph.tables(_GRAPH_OPS, "operator"):
    code = op.scalar(_OP_CODE, "<I")
    if code >= codes:
      raise _Corrupt(f"{op.what} has operator code {code} of {codes}")
    _indices(op.ints(_OP_INPUTS, "inputs"), len(tensors), f"{op.what}: inputs", optional=True)
    _indices(op.ints(_OP_OUTPUTS, "outputs"), len(tensors), f"{op.what}: outputs")
  graph.string(_GRAPH_NAME, "name")


def _model(data):
  model = _Table(data, _follow(data, 0, "root offset"), "model")
  codes = model.tables(_MODEL_CODES, "operator code")
  for code in codes:
    code.scalar(_CODE_DEPRECATED, "<b")
    code.string(_CODE_CUSTOM, "custom code")
    code.scalar(_CODE_VERSION, "<i")
    code.scalar(_CODE_BUILTIN, "<i")
  buffers = model.tables(_MODEL_BUFFERS, "buffer")
  for buffer in buffers:
    buffer.vector(_BUFFER_DATA, 1, "data")
    offset, size = buffer.scalar(_BUFFER_OFFSET, "<Q"), buffer.scalar(_BUFFER_SIZE, "<Q")
    if offset > 1:  # a large model's data, stored after the flatbuffer
      _span(data, offset, size, f"{buffer.what}: data")
  model.string(_MODEL_DESCRIPTION, "description")
  graphs = model.tables(_MODEL_SUBGRAPHS, "subgraph")
  if not graphs:
    raise _Corrupt("the model has no subgraph")
  for graph in graphs:
    _subgraph(graph, len(codes), len(buffers))


def problem(data):
  """The first out-of-bounds offset or index of a TFLite flatbuffer, or None when all are in.

  Args:
    data: the bytes of a `.tflite` file (its 8-byte header, "TFL3" identifier included, is
      checked by `flatbuffer.verify`).

  Returns:
    One line saying what is wrong and where (e.g. "subgraph 0: tensor 3: name: bytes
    5600-5720 past the end of the 5612-byte file"), or None.
  """
  try:
    _model(bytes(data))
  except _Corrupt as e:
    return str(e)
  return None
