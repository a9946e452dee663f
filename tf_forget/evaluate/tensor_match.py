"""Where a `.tflite` file without its converter departs from the float file.

A file the user brings (`user_<NAME>`) has no float model beside it to quantize
again, so LiteRT's QuantizationDebugger (`tf_forget.export.layer_error`) cannot isolate each
layer's own error. What can be measured is the *accumulated* error: run the float32 file and
the user's file on the same examples with every intermediate tensor kept
(`experimental_preserve_all_tensors`, built-in kernels: a delegate's internal tensors are not
the interpreter's), and compare the tensors the two graphs share.

Matching (`match`), on the ops that compute (QUANTIZE / DEQUANTIZE only re-represent a tensor
and are skipped) and their non-constant output tensors, shapes equal but for the batch:
  1. by name: the same tensor name, or the float name followed by digits only (the converter
     uniquifies a name it re-uses: the int8 logits "StatefulPartitionedCall:01" before the
     output QUANTIZE, the float file's "StatefulPartitionedCall:0"), the op the same;
  2. by position, for what names left unmatched: the two op sequences aligned on (op, output
     shape) with `difflib.SequenceMatcher`; a pair in an equal block is matched.
  Plus the model input: the user file's (quantized) input against the float input, the input
  rounding. Files converted from one Keras model by TensorFlow's converter share their tensor
  names; a graph rewritten by another tool falls back on positions; what matches neither way
  is counted, not guessed (`unmatched`).

Values: int8 / uint8 / int16 tensors are dequantized with their own scale and zero point, and
compared with the float file's tensor with `layer_error.error_sums` / `layer_error.metrics` (MSE,
NMSE, SNR, cosine), the same definitions as the per-layer rows. Because the error is accumulated,
where it *grows* is what points at a layer: growth = NMSE of the op's output minus the largest NMSE
of its matched activation inputs (0 for an op reading constants only), and its ratio in decibels,
growth_db = 10 log10(NMSE out / max(NMSE in, NMSE_FLOOR)), on the forgotten examples. `rank_growth`
ranks by growth_db: the absolute growth favours the last layers, where error has piled
up (a head whose NMSE goes from 0.4 to 0.47 outranks a planted op going from 1e-4 to 0.05, +28 dB).
It approximates the layer's own contribution; it is not the isolated error of a QuantizationDebugger
row, and a per-tensor NMSE cannot see a range fault (the outlier channel holds the tensor's energy:
`tf_forget.evaluate.range_diagnosis` can). ai-edge-quantizer's `model_validator.compare_model`
compares the same tensors (by name only, one example per invoke); the tests check the MSEs against
it.
"""

import difflib
import math

import numpy as np

from tf_forget.artifacts import errors
from tf_forget.data import input_layout
from tf_forget.evaluate import interpreter
from tf_forget.export import flatbuffer_graph
from tf_forget.export import layer_error

METHOD = (
  "tensor match: the float32 file and the candidate run with every tensor kept "
  "(experimental_preserve_all_tensors); matched tensors (by name, else by position) "
  "compared after dequantizing; accumulated error, ranked by its growth"
)
SKIPPED_OPS = ("QUANTIZE", "DEQUANTIZE")
DEFAULT_BATCH_SIZE = 32
INPUT = "INPUT"
_QUANTIZED = ("int8", "uint8", "int16")
_VALUES = ("float32", "float16") + _QUANTIZED  # the dtypes of activations (not int32 shapes)


class TensorMatchError(errors.Error):
  """Files whose tensors cannot be compared (one line)."""


def activations(graph):
  """[(op index, output tensor index)] of the ops that compute, their non-constant outputs of
  activation values (float or quantized, with a batch axis): the int32 shape arithmetic of a
  runtime `Reshape` (Keras 3: SHAPE, STRIDED_SLICE, PACK) is not an activation."""
  out = []
  for index, op in enumerate(graph.ops):
    if op.name in SKIPPED_OPS:
      continue
    for t in op.outputs:
      tensor = graph.tensors[t] if t >= 0 else None
      if (
        tensor is not None
        and not tensor.constant
        and tensor.dtype in _VALUES
        and len(tensor.shape) >= 1
      ):
        out.append((index, t))
  return out


def _key(graph, op_index, tensor):
  return graph.ops[op_index].name, tuple(graph.tensors[tensor].shape[1:])


def _by_name(reference, candidate, ref_acts, cand_acts):
  """{candidate tensor: reference tensor} matched by name (module doc, rule 1)."""
  ref_by_name = {reference.tensors[t].name: (i, t) for i, t in ref_acts}
  found = {}
  for j, c in cand_acts:
    name = candidate.tensors[c].name
    hits = (
      [ref_by_name[name]]
      if name in ref_by_name
      else [v for n, v in ref_by_name.items() if name.startswith(n) and name[len(n) :].isdigit()]
    )
    hits = [
      (i, r)
      for i, r in hits
      if _key(reference, i, r) == _key(candidate, j, c) and r not in found.values()
    ]
    if len(hits) == 1:
      found[c] = hits[0][1]
  return found


def _by_position(reference, candidate, ref_acts, cand_acts, taken):
  """{candidate tensor: reference tensor} for the pairs left, aligned on (op, shape)."""
  ref_keys = [_key(reference, i, t) for i, t in ref_acts]
  cand_keys = [_key(candidate, j, c) for j, c in cand_acts]
  used = set(taken.values())
  found = {}
  matcher = difflib.SequenceMatcher(None, ref_keys, cand_keys, autojunk=False)
  for block in matcher.get_matching_blocks():
    for n in range(block.size):
      r, c = ref_acts[block.a + n][1], cand_acts[block.b + n][1]
      if c not in taken and r not in used:
        found[c] = r
        used.add(r)
  return found


def _source(graph, tensor, producers):
  """The tensor a QUANTIZE / DEQUANTIZE chain re-represents (itself if none)."""
  while tensor in producers and graph.ops[producers[tensor]].name in SKIPPED_OPS:
    tensor = graph.ops[producers[tensor]].inputs[0]
  return tensor


def _image_shape(tensor):
  """(H, W, C) of the images an input tensor takes, or None (`input_layout`)."""
  try:
    return input_layout.from_shape(tensor.shape).image_shape
  except input_layout.LayoutError:
    return None


def match(reference, candidate):
  """The tensors of `candidate` matched to tensors of `reference` (two `flatbuffer_graph.Graph`s).

  Returns:
    (matches, unmatched): matches [{"reference", "candidate": tensor indices, "op_index",
    "op_name": the candidate's op (None / "INPUT" for the model input), "how": "input",
    "name" or "position", "inputs": candidate tensor indices of the op's activation inputs
    (through QUANTIZE / DEQUANTIZE)}] in the candidate's op order; unmatched: the number of
    the candidate's computing ops' outputs left unmatched.

  Files whose inputs take the same images in two layouts (`tf_forget.data.input_layout`: a
  grey `[N, H, W]` file and an `[N, H, W, 1]` one, or channels first) are matched without the
  input row (each is fed in its own layout, `tensor_errors`).

  Raises:
    TensorMatchError: the files' inputs take different images (not one model's two files).
  """
  (ri,), (ci,) = reference.inputs[:1], candidate.inputs[:1]
  same_layout = reference.tensors[ri].shape[1:] == candidate.tensors[ci].shape[1:]
  if not same_layout and (
    _image_shape(reference.tensors[ri]) is None
    or _image_shape(reference.tensors[ri]) != _image_shape(candidate.tensors[ci])
  ):
    raise TensorMatchError(
      f"input shapes differ: {reference.tensors[ri].shape[1:]} and "
      f"{candidate.tensors[ci].shape[1:]}"
    )
  ref_acts, cand_acts = activations(reference), activations(candidate)
  pairs = _by_name(reference, candidate, ref_acts, cand_acts)
  how = dict.fromkeys(pairs, "name")
  by_position = _by_position(reference, candidate, ref_acts, cand_acts, pairs)
  pairs.update(by_position)
  how.update(dict.fromkeys(by_position, "position"))
  producers = {t: i for i, op in enumerate(candidate.ops) for t in op.outputs}
  matches = (
    [
      {
        "reference": ri,
        "candidate": ci,
        "op_index": None,
        "op_name": INPUT,
        "how": "input",
        "inputs": [],
      }
    ]
    if same_layout
    else []
  )
  for j, c in cand_acts:
    if c in pairs:
      op = candidate.ops[j]
      inputs = [
        _source(candidate, t, producers)
        for t in op.inputs
        if t >= 0 and not candidate.tensors[t].constant
      ]
      matches.append(
        {
          "reference": pairs[c],
          "candidate": c,
          "op_index": j,
          "op_name": op.name,
          "how": how[c],
          "inputs": inputs,
        }
      )
  return matches, len(cand_acts) - len(pairs)


def _dequantize(values, tensor):
  if tensor.dtype in _QUANTIZED and tensor.scale:
    return (values.astype(np.float64) - tensor.zero_point) * tensor.scale
  return values.astype(np.float64)


def _output_rows(p):
  """Rows of the output after one invoke on zeros: a graph whose shapes are computed at run
  time (Keras 3's reshapes) reports its signature's batch of 1 until it runs."""
  details = p.get_input_details()[0]
  p.set_tensor(details["index"], np.zeros(details["shape"], details["dtype"]))
  try:
    p.invoke()
  except (RuntimeError, ValueError):
    return None
  return p.get_tensor(p.get_output_details()[0]["index"]).shape[0]


def interpreters(files, batch_size, num_threads):
  """(the interpreters of `files` (bytes) with every tensor kept, the batch size): at
  `batch_size`, or at 1 when a file fixes its batch (its input cannot be resized, or its output
  does not follow)."""
  for size in dict.fromkeys((batch_size, 1)):
    try:
      pair = [
        interpreter.create(data, num_threads, "builtin", size, preserve_all_tensors=True)
        for data in files
      ]
    except interpreter.TfliteError:
      if size == 1:
        raise
      continue
    if all(_output_rows(p) == size for p in pair):
      return pair, size
  raise TensorMatchError("the files do not run one example per batch row")


# Rows gathered per `layer_error.error_sums` call: a file run one example per invoke (a fixed
# batch of 1) would otherwise pay numpy's per-call overhead once per example and tensor.
_SUM_ROWS = 256


def _measure(pair, graphs, matches, images, size):
  """{candidate tensor: error sums} of the matches over `images`."""
  feeds = [interpreter.InputQuantizer(p.get_input_details()[0]) for p in pair]
  layouts = [input_layout.of_details(p.get_input_details()[0]) for p in pair]
  totals = {m["candidate"]: None for m in matches}
  pending = {m["candidate"]: ([], []) for m in matches}

  def flush():
    for m in matches:
      refs, values = pending[m["candidate"]]
      if not refs:
        continue
      sums = layer_error.error_sums(np.concatenate(refs), np.concatenate(values))
      old = totals[m["candidate"]]
      totals[m["candidate"]] = sums if old is None else {k: old[k] + v for k, v in sums.items()}
      refs.clear()
      values.clear()

  rows = 0
  for start in range(0, len(images), size):
    batch = np.asarray(images[start : start + size])
    n = len(batch)
    if n < size:  # pad with the last example; only the first n rows count
      batch = np.concatenate([batch, np.repeat(batch[-1:], size - n, axis=0)])
    for p, feed, fed in zip(pair, feeds, layouts):  # in each file's input layout
      p.set_tensor(p.get_input_details()[0]["index"], feed(fed.to_model(batch)))
      p.invoke()
    for m in matches:
      refs, values = pending[m["candidate"]]
      refs.append(
        _dequantize(pair[0].get_tensor(m["reference"]), graphs[0].tensors[m["reference"]])[:n]
      )
      values.append(
        _dequantize(pair[1].get_tensor(m["candidate"]), graphs[1].tensors[m["candidate"]])[:n]
      )
    rows += n
    if rows >= _SUM_ROWS:
      flush()
      rows = 0
  flush()
  return totals


def tensor_errors(reference, candidate, subsets, batch_size=DEFAULT_BATCH_SIZE, num_threads=1):
  """Accumulated error of every matched tensor of `candidate` against `reference`, per subset.

  Args:
    reference: bytes of the float32 `.tflite` file.
    candidate: bytes of the compared `.tflite` file (the user's), same input and classes.
    subsets: dict name -> uint8 images `[n, H, W, C]` (n may be 0), fed in the files' input
      layout (`tf_forget.data.input_layout`).
    batch_size: examples per invoke (1 if a file's graph fixes its batch).
    num_threads: interpreter threads.

  Returns:
    (rows, facts): rows in the candidate's op order, the model input first (none when the
    files take their images in two layouts, `match`; JSON-able):
    {"tensor_name", "file_tensor_name": the candidate's tensor name, "reference_tensor_name",
    "op_name", "op_index", "match": "input" / "name" / "position", "inputs": indices of the
    rows of the op's matched activation inputs, "scale", "zero_point" (the candidate tensor's;
    None if float), "size": elements per example, "subsets": {name: `layer_error.metrics`}};
    facts {"matched": {"name", "position"}: counts, "unmatched": count, "batch_size"}.

  Raises:
    TensorMatchError, flatbuffer.TfliteFileError: files that cannot be read, run or matched.
  """
  graphs = (flatbuffer_graph.graph(reference), flatbuffer_graph.graph(candidate))
  matches, unmatched = match(*graphs)
  try:
    pair, size = interpreters((reference, candidate), batch_size, num_threads)
    measured = {
      name: _measure(pair, graphs, matches, images, size) if len(images) else {}
      for name, images in subsets.items()
    }
  except (interpreter.TfliteError, RuntimeError, ValueError) as e:
    raise TensorMatchError(
      f"cannot run the files with every tensor kept: {errors.one_line(e, 200)}"
    ) from e
  row_of = {m["candidate"]: i for i, m in enumerate(matches)}
  rows = []
  for m in matches:
    tensor = graphs[1].tensors[m["candidate"]]
    rows.append(
      {
        "tensor_name": tensor.name,
        "file_tensor_name": tensor.name,
        "reference_tensor_name": graphs[0].tensors[m["reference"]].name,
        "op_name": m["op_name"],
        "op_index": m["op_index"],
        "match": m["how"],
        "inputs": [row_of[t] for t in m["inputs"] if t in row_of],
        "scale": tensor.scale,
        "zero_point": tensor.zero_point,
        "size": int(np.prod(tensor.shape[1:], dtype=np.int64)),
        "subsets": {
          name: layer_error.metrics(measured[name].get(m["candidate"]) or {}) for name in subsets
        },
      }
    )
  hows = [m["how"] for m in matches]
  return rows, {
    "matched": {h: hows.count(h) for h in ("name", "position")},
    "unmatched": unmatched,
    "batch_size": size,
  }


# growth_db's smallest denominator: about the NMSE of rounding one tensor to int8 (-40 dB; a
# uniform tensor over its whole range gets 1 / 255^2 ~ 1.5e-5, peaked ones more), so an op
# reading an (almost) exact input is not credited with an infinite ratio for its own rounding.
NMSE_FLOOR = 1e-4


def _growth(rows, subset):
  """(NMSE growth, growth in dB) of each row on `subset` (None where its NMSE is undefined)."""
  out = []
  for row in rows:
    nmse = row["subsets"][subset]["nmse"]
    before = max(
      [b for b in (rows[i]["subsets"][subset]["nmse"] for i in row["inputs"]) if b is not None],
      default=0.0,
    )
    if nmse is None:
      out.append((None, None))
    else:
      out.append(
        (nmse - before, 10.0 * math.log10(max(nmse, NMSE_FLOOR) / max(before, NMSE_FLOOR)))
      )
  return out


def rank_growth(rows, forgotten="forgotten", stable="stable"):
  """Matched tensors ranked by how much the accumulated error grows there on `forgotten`.

  Order: growth_db[forgotten] (module doc), largest first; ties by the lower op index; the model
  input and rows without an NMSE last. Each row has the fields of `layer_error.rank_layers`
  (nmse and SNR on both subsets, excess = nmse[forgotten] − nmse[stable]) plus
  "growth_forgotten", "growth_stable", "growth_db_forgotten", "growth_db_stable" and "match".

  Raises:
    TensorMatchError: a subset name the rows do not have.
  """
  for name in (forgotten, stable):
    if rows and name not in rows[0]["subsets"]:
      raise TensorMatchError(f"tensor errors have no subset {name!r}")
  growth_f, growth_s = _growth(rows, forgotten), _growth(rows, stable)
  ranked = []
  for row, (gf, df), (gs, ds) in zip(rows, growth_f, growth_s):
    f, s = row["subsets"][forgotten], row["subsets"][stable]
    ranked.append(
      {
        "tensor_name": row["tensor_name"],
        "op_name": row["op_name"],
        "op_index": row["op_index"],
        "match": row["match"],
        "nmse_forgotten": f["nmse"],
        "nmse_stable": s["nmse"],
        "excess": None if f["nmse"] is None or s["nmse"] is None else f["nmse"] - s["nmse"],
        "growth_forgotten": gf,
        "growth_stable": gs,
        "growth_db_forgotten": df,
        "growth_db_stable": ds,
        "snr_db_forgotten": f["snr_db"],
        "snr_db_stable": s["snr_db"],
        "snr_drop_db": (
          None if f["snr_db"] is None or s["snr_db"] is None else s["snr_db"] - f["snr_db"]
        ),
      }
    )
  ranked.sort(
    key=lambda r: (
      r["op_index"] is None,
      r["growth_db_forgotten"] is None,
      -(r["growth_db_forgotten"] or 0.0),
      r["op_index"] or 0,
    )
  )
  for i, r in enumerate(ranked):
    r["rank"] = i + 1
  return ranked
