"""Deployment targets of a `.tflite` file, and what ran it on this machine's CPU.

Two questions about a file, both read from the file itself:

  * `delegation`: of the ops of its main subgraph, how many the XNNPACK delegate took when
    LiteRT ran it here, and which stayed on the built-in kernels (by op name). A file counts
    as running on "xnnpack" when at least one op is delegated: a 16x8 file (int16
    activations) is delegated nowhere and runs entirely on the built-in kernels, although
    XNNPACK was on and accepted the model.
  * `runs_on`: whether a file can run on a deployment target of `TARGETS` at all, decided by
    its quantization kind (`quantization_kind`) and its tensor types (read from the
    flatbuffer, `tf_forget.export.flatbuffer_graph`), with a one-clause reason when it cannot.

The targets:

  * `cpu` (the default): LiteRT with XNNPACK on a CPU, as this machine runs it; every valid
    file runs (ops XNNPACK does not take run on the built-in kernels).
  * `integer_only`: accelerators and microcontrollers that run int8 ops only with int8 /
    uint8 input and output (Edge TPU, NPUs, TFLite Micro). A file runs there when its input
    and output are int8 / uint8 and every op's tensors are integer; float32, float16,
    dynamic-range (float activations, int8 weights) and 16x8 (int16 activations) files do
    not.
  * `gpu`: the LiteRT GPU delegate. Its documentation ("TensorFlow Lite on GPU", section
    "Running quantized models on GPU") says the GPU backend executes in floating point only
    and runs 8-bit quantized models through a floating-point view of them (constants
    dequantized once, 8-bit inputs and outputs converted on the CPU), naming quantization-aware
    training, post-training dynamic-range and post-training full-integer quantization; and that
    it runs ops in 16-bit and 32-bit float. So float32, float16, dynamic-range int8 and full
    int8 files run there; 16x8 files (int16 activations) and int16 weights do not. Which
    ops the GPU takes is not checked: the delegate leaves the ops it lacks to the CPU.

Latency (`latency_measurable`): only `cpu` is measured, since this machine has no GPU and no
accelerator. For the other targets a CPU figure of the file may still be shown, labelled as
this machine's CPU figure (`latency_label`), never as the target's.
"""

import collections
import dataclasses
from typing import Mapping, Optional

from tf_forget.artifacts import errors
from tf_forget.artifacts import names
from tf_forget.evaluate import interpreter
from tf_forget.export import candidates
from tf_forget.export import flatbuffer
from tf_forget.export import flatbuffer_graph

DELEGATE_OP = "DELEGATE"  # the node LiteRT lists for each partition a delegate took

# `candidates.reference_kind` (descriptive) -> quantization kind.
_KINDS = {
  None: "float32",
  "float16-weight": "float16",
  "dynamic-range int8": "dynamic_range_int8",
  "dynamic-range uint8": "dynamic_range_uint8",
  "dynamic-range int16": "dynamic_range_int16",
  "full-integer int8": "full_int8",
  "full-integer uint8": "full_int8",  # uint8 I/O around int8 activations, or legacy uint8
  "full-integer int16": "int16x8",
}
KINDS = tuple(dict.fromkeys(_KINDS.values()))
_LABELS = {
  "float32": "float32",
  "float16": "float16",
  "dynamic_range_int8": "dynamic-range int8",
  "dynamic_range_uint8": "dynamic-range uint8",
  "dynamic_range_int16": "dynamic-range int16",
  "full_int8": "full int8",
  "int16x8": "16x8",
}
_INTEGER_DTYPES = frozenset(
  {"int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "bool"}
)
_INTEGER_IO = ("int8", "uint8")
_FLOAT_ACTIVATIONS = "its activations are float"


class TargetError(errors.Error):
  """An unknown deployment target (one line)."""


@dataclasses.dataclass(frozen=True)
class Delegation:
  """What ran a file's main subgraph on this machine's CPU.

  Attributes:
    total_ops: ops of the main subgraph.
    delegated_ops: those the XNNPACK delegate took.
    builtin_ops: {op name: count} of the ops left on the built-in kernels, by name.
    runtime: "xnnpack" when at least one op is delegated, else "builtin".
    fallback_reason: why XNNPACK refused the whole model (the interpreter was then created
      without it, `interpreter.create_for_device`), or None.
  """

  total_ops: int
  delegated_ops: int
  builtin_ops: Mapping[str, int]
  runtime: str
  fallback_reason: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class Target:
  """A deployment target.

  Attributes:
    name: its key in `TARGETS`.
    title: what it is, for a reader.
    refuses: {quantization kind: the clause saying why a file of that kind cannot run}.
    integer_io: the input and output must be int8 / uint8.
    integer_ops: every tensor of every op must be integer.
    measured: its latency is measured on this machine (`latency_measurable`).
  """

  name: str
  title: str
  refuses: Mapping[str, str]
  integer_io: bool = False
  integer_ops: bool = False
  measured: bool = False


TARGETS = {
  "cpu": Target("cpu", names.TARGET_TITLES["cpu"], {}, measured=True),
  "integer_only": Target(
    "integer_only",
    names.TARGET_TITLES["integer_only"],
    {
      "float32": _FLOAT_ACTIVATIONS,
      "float16": _FLOAT_ACTIVATIONS,
      "dynamic_range_int8": _FLOAT_ACTIVATIONS,
      "dynamic_range_uint8": _FLOAT_ACTIVATIONS,
      "dynamic_range_int16": _FLOAT_ACTIVATIONS,
      "int16x8": "its activations are int16: integer_only targets run int8 ops",
    },
    integer_io=True,
    integer_ops=True,
  ),
  "gpu": Target(
    "gpu",
    names.TARGET_TITLES["gpu"],
    {
      "int16x8": "its activations are int16: the GPU delegate runs float and 8-bit "
      "quantized models",
      "dynamic_range_int16": "its weights are int16: the GPU delegate runs float and "
      "8-bit quantized models",
    },
  ),
}
DEFAULT_TARGET = "cpu"


def target_spec(name):
  """The `Target` called `name`.

  Raises:
    TargetError: an unknown name.
  """
  if name not in TARGETS:
    raise TargetError(f"unknown deployment target {name!r} (known: {', '.join(TARGETS)})")
  return TARGETS[name]


def _read(model):
  """(bytes, name) of a `.tflite` path or bytes, checked to be a complete flatbuffer."""
  if isinstance(model, (bytes, bytearray)):
    data, name = bytes(model), "model bytes"
  else:
    data, name = interpreter.read_model(model), str(model)
  try:
    flatbuffer.verify(data, name)
  except flatbuffer.TfliteFileError as e:
    raise interpreter.TfliteError(str(e)) from e
  return data, name


def _replaced(originals, node):
  """Indices of the original ops a DELEGATE node replaced: walked back from its output
  tensors through their producers until its input tensors."""
  producer = {int(t): i for i, op in enumerate(originals) for t in op["outputs"]}
  boundary = {int(t) for t in node["inputs"]}
  replaced, pending = set(), [int(t) for t in node["outputs"]]
  while pending:
    tensor = pending.pop()
    i = producer.get(tensor)
    if tensor in boundary or i is None or i in replaced:
      continue
    replaced.add(i)
    pending.extend(int(t) for t in originals[i]["inputs"] if t >= 0)
  return replaced


def delegation(model, num_threads=interpreter.DEFAULT_NUM_THREADS, batch_size=None):
  """Counts the ops of a file's main subgraph that XNNPACK took on this machine's CPU.

  The file is created as the evaluation runs it (`interpreter.create_for_device`: XNNPACK,
  else the built-in kernels). LiteRT lists the original ops, then one DELEGATE node per
  partition the delegate took; the ops a DELEGATE node replaced are found by walking back
  from its output tensors through the original ops to its input tensors. This is the one
  place that reads LiteRT's private `Interpreter._get_ops_details()` (verified on
  ai-edge-litert 2.3.0); a listing it cannot read is a one-line error, not a guess.

  Args:
    model: path of a `.tflite` file, or its bytes.
    num_threads: CPU threads (>= 1).
    batch_size: if set, the (single) input is resized to it first.

  Returns:
    A `Delegation`.

  Raises:
    interpreter.TfliteError: an unreadable, truncated or invalid file, or one LiteRT lists
      in a way this function does not know.
  """
  data, name = _read(model)
  ops = flatbuffer_graph.graph(data).ops
  interp, _, reason = interpreter.create_for_device(data, num_threads, batch_size)
  details = interp._get_ops_details()
  originals, nodes = details[: len(ops)], details[len(ops) :]
  if (
    any(d["op_name"] == DELEGATE_OP for d in originals)
    or any(d["op_name"] != DELEGATE_OP for d in nodes)
    or len(originals) != len(ops)
  ):
    raise interpreter.TfliteError(
      f"{name}: LiteRT lists {len(details)} nodes for {len(ops)} ops, not the original ops "
      "followed by DELEGATE nodes"
    )
  delegated = set()
  for node in nodes:
    delegated |= _replaced(originals, node)
  builtin = collections.Counter(op.name for i, op in enumerate(ops) if i not in delegated)
  return Delegation(
    total_ops=len(ops),
    delegated_ops=len(delegated),
    builtin_ops=dict(sorted(builtin.items())),
    runtime="xnnpack" if delegated else "builtin",
    fallback_reason=reason,
  )


def quantization_kind(model):
  """The quantization kind of a `.tflite` file, one of `KINDS`, from its tensor types.

  "float32"; "float16" (float16 constants or activations); "dynamic_range_int8" (int8
  constants, float activations; likewise `_uint8` / `_int16`); "full_int8" (int8 activations,
  or uint8 ones; the input and output may still be float: see `runs_on`); "int16x8" (int16
  activations, int8 weights). The rule is `candidates.reference_kind`'s.

  Args:
    model: path of a `.tflite` file, or its bytes.

  Raises:
    interpreter.TfliteError: an unreadable, truncated or invalid file.
  """
  data, _ = _read(model)
  return _KINDS[candidates.reference_kind(data)]


def _integer_io_problem(io):
  for side, entries in (("input", io["inputs"]), ("output", io["outputs"])):
    for entry in entries:
      if entry["dtype"] not in _INTEGER_IO:
        return f"its {side} is {entry['dtype']}: integer_only targets take int8/uint8 I/O"
  return None


def _float_op_problem(graph):
  """The ops with a non-integer tensor, named (conversions QUANTIZE / DEQUANTIZE only when
  no other op is)."""

  def dtypes(op):
    return {graph.tensors[t].dtype for t in op.inputs + op.outputs if t >= 0}

  odd = [op for op in graph.ops if dtypes(op) - _INTEGER_DTYPES]
  compute = [op for op in odd if op.name not in ("QUANTIZE", "DEQUANTIZE")] or odd
  if not compute:
    return None
  names = ", ".join(dict.fromkeys(op.name for op in compute))
  found = sorted(set().union(*(dtypes(op) - _INTEGER_DTYPES for op in compute)))
  return (
    f"{'op' if len(compute) == 1 else 'ops'} {names} "
    f"{'runs' if len(compute) == 1 else 'run'} in {'/'.join(found)}: integer_only "
    "targets run integer ops only"
  )


def runs_on(model, target=DEFAULT_TARGET):
  """Whether a `.tflite` file can run on a deployment target of `TARGETS`.

  Args:
    model: path of a `.tflite` file, or its bytes.
    target: a key of `TARGETS`.

  Returns:
    (True, None), or (False, one clause saying why, e.g. "dynamic-range int8: its activations
    are float" or "its input is float32: integer_only targets take int8/uint8 I/O").

  Raises:
    TargetError: an unknown target.
    interpreter.TfliteError: an unreadable, truncated or invalid file.
  """
  spec = target_spec(target)
  data, _ = _read(model)
  kind = _KINDS[candidates.reference_kind(data)]
  if kind in spec.refuses:
    return False, f"{_LABELS[kind]}: {spec.refuses[kind]}"
  if spec.integer_io:
    problem = _integer_io_problem(flatbuffer_graph.io_details(data))
    if problem:
      return False, problem
  if spec.integer_ops:
    problem = _float_op_problem(flatbuffer_graph.graph(data))
    if problem:
      return False, problem
  return True, None


def latency_measurable(target):
  """Whether latency on this target is measured on this machine: only `cpu` is (there is
  no GPU and no accelerator here). For the others, show at most this machine's CPU figure
  of the file, labelled by `latency_label`.

  Raises:
    TargetError: an unknown target.
  """
  return target_spec(target).measured


def latency_label(target):
  """How a latency figure measured on this machine is labelled for a target.

  Raises:
    TargetError: an unknown target.
  """
  spec = target_spec(target)
  if spec.measured:
    return "CPU latency (LiteRT with XNNPACK, this machine)"
  return f"this machine's CPU latency, not measured on {spec.title}"


def describe(model, num_threads=interpreter.DEFAULT_NUM_THREADS):
  """What the encodings artifact records of a shipped file: its quantization kind, the ops
  XNNPACK took (`delegation`) and whether each target of `TARGETS` runs it (`runs_on`).

  Returns:
    {"kind": str, "delegation": {"ops", "delegated_ops", "builtin_ops"}, "targets":
    {target: {"runs": bool, "reason": str}}} (JSON-ready).
  """
  d = delegation(model, num_threads)
  runs = {}
  for target in TARGETS:
    ok, reason = runs_on(model, target)
    runs[target] = {"runs": bool(ok), "reason": reason or ""}
  return {
    "kind": quantization_kind(model),
    "delegation": {
      "ops": d.total_ops,
      "delegated_ops": d.delegated_ops,
      "builtin_ops": dict(d.builtin_ops),
    },
    "targets": runs,
  }
