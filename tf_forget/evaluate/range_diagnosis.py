"""Range diagnosis: the channels whose range sets a per-tensor int8 scale.

A full-integer TFLite file quantizes every activation tensor per tensor — one scale for all of
its channels (weights are per channel; the TFLite 8-bit quantization specification): the
tensor's calibrated range [min(0, lo), max(0, hi)] is cut into 255 steps,

    scale = (max(0, hi) - min(0, lo)) / 255.

A channel c whose own calibrated span hi_c - lo_c is a small part of that range is left
(hi_c - lo_c) / scale levels. When one channel spans far more than the others (a channel of a
layer's weights scaled up, its consumer's scaled down: the same float function), the other
channels are left a few levels and the file forgets — which a per-tensor error statistic cannot
see, since the outlier channel holds most of the tensor's energy.

`channel_ranges` runs a file (float or quantized; quantized tensors are dequantized) with every
tensor kept over the calibration images and records each activation tensor's per-channel
minimum and maximum (the channel axis is the last: NHWC, [N, C]); `dominant` names the tensors
where one channel spans at least `DOMINANCE` times the median channel, with the levels the
other channels keep (`levels_left`), `ops_touching` the ops that write or read them (the
report says it in words: `tf_forget.report.words.why_forgot.range_sentence`), and `origins`
where each fault starts: a wide channel passed on (through pooling: the same channel of the next tensor)
is one fault, made by the op writing its first tensor — the op the causal ranking names first
among the ops around it (`tf_forget.evaluate.causal_attribution.rank`).
"""

import numpy as np

from tf_forget.data import input_layout
from tf_forget.evaluate import interpreter
from tf_forget.evaluate import tensor_match
from tf_forget.export import flatbuffer_graph

DOMINANCE = 10.0  # a channel spanning at least this many times the median channel is named
LEVELS = 255  # int8 steps of a per-tensor scale


def channel_ranges(data, images, batch_size=tensor_match.DEFAULT_BATCH_SIZE, num_threads=1):
  """Per-channel ranges of every activation tensor of a `.tflite` file over `images`.

  Args:
    data: the file's bytes.
    images: uint8 (or float raw pixel) images `[n, H, W, C]`, fed in the file's input layout.
    batch_size: examples per invoke (1 if the file fixes its batch).
    num_threads: interpreter threads.

  Returns:
    [{"tensor": index, "tensor_name", "op_index", "op_name", "low": [C], "high": [C]}] in op
    order (JSON-able lists), for the tensors with a channel axis of at least 2 channels.

  Raises:
    tensor_match.TensorMatchError, flatbuffer.TfliteFileError: a file that cannot be run.
  """
  graph = flatbuffer_graph.graph(data)
  acts = [
    (i, t)
    for i, t in tensor_match.activations(graph)
    if len(graph.tensors[t].shape) >= 2 and graph.tensors[t].shape[-1] >= 2
  ]
  (runner,), size = tensor_match.interpreters((data,), batch_size, num_threads)
  details = runner.get_input_details()[0]
  feed, layout = interpreter.InputQuantizer(details), input_layout.of_details(details)
  low, high = {}, {}
  for start in range(0, len(images), size):
    batch = np.asarray(images[start : start + size])
    n = len(batch)
    if n < size:  # pad with the last example; only the first n rows count
      batch = np.concatenate([batch, np.repeat(batch[-1:], size - n, axis=0)])
    runner.set_tensor(details["index"], feed(layout.to_model(batch)))
    runner.invoke()
    for _, t in acts:
      tensor = graph.tensors[t]
      values = runner.get_tensor(t)[:n].astype(np.float64)
      if tensor.dtype != "float32" and tensor.dtype != "float16" and tensor.scale:
        values = (values - tensor.zero_point) * tensor.scale
      values = values.reshape(-1, values.shape[-1])
      lo, hi = values.min(axis=0), values.max(axis=0)
      low[t] = lo if t not in low else np.minimum(low[t], lo)
      high[t] = hi if t not in high else np.maximum(high[t], hi)
  return [
    {
      "tensor": int(t),
      "tensor_name": graph.tensors[t].name,
      "op_index": int(i),
      "op_name": graph.ops[i].name,
      "low": low[t].tolist(),
      "high": high[t].tolist(),
    }
    for i, t in acts
    if t in low
  ]


def levels_left(low, high):
  """(per-channel spans, the tensor's per-tensor int8 scale, the levels each channel keeps)."""
  low, high = np.asarray(low, np.float64), np.asarray(high, np.float64)
  span = high - low
  full = max(float(high.max()), 0.0) - min(float(low.min()), 0.0)
  scale = full / LEVELS if full > 0 else 0.0
  return span, scale, (span / scale if scale > 0 else np.zeros_like(span))


def dominant(rows, dominance=DOMINANCE):
  """The tensors of `channel_ranges` rows where one channel dominates the range.

  Returns:
    [{"tensor", "tensor_name", "op_index", "op_name", "channel", "channels", "ratio": its span
    over the median channel's, "levels_others": the median level count of the other
    channels, "levels_channel": the dominant channel's}] in op order.
  """
  found = []
  for row in rows:
    span, _, levels = levels_left(row["low"], row["high"])
    median = float(np.median(span))
    top = int(np.argmax(span))
    if median <= 0 or span[top] < dominance * median:
      continue
    others = np.delete(levels, top)
    found.append(
      {
        "tensor": row["tensor"],
        "tensor_name": row["tensor_name"],
        "op_index": row["op_index"],
        "op_name": row["op_name"],
        "channel": top,
        "channels": int(span.size),
        "ratio": float(span[top] / median),
        "levels_others": float(np.median(others)),
        "levels_channel": float(levels[top]),
      }
    )
  return found


def ops_touching(graph, found):
  """{op index: the `dominant` row} of the ops of `graph` (a `flatbuffer_graph.Graph`, the file
  `found` was measured on) that write or read a tensor with a dominant channel: the op whose
  output range is wide, and its consumers, which read that tensor at one scale for all
  channels."""
  by_tensor = {row["tensor"]: row for row in found}
  out = {}
  for index, op in enumerate(graph.ops):
    hit = next((by_tensor[t] for t in tuple(op.outputs) + tuple(op.inputs) if t in by_tensor), None)
    if hit is not None:
      out[index] = hit
  return out


def origins(graph, found):
  """{tensor: the index of the op where its range fault starts} of the `dominant` rows `found`
  on `graph` (a `flatbuffer_graph.Graph`): a tensor written by an op that reads a dominated
  tensor with the same dominant channel (pooling passes the wide channel on) continues that
  tensor's fault; any other starts one, at the op writing it."""
  by_tensor = {row["tensor"]: row for row in found}
  out = {}
  for row in sorted(found, key=lambda r: r["op_index"]):
    source = next(
      (
        t
        for t in graph.ops[row["op_index"]].inputs
        if t in out and by_tensor[t]["channel"] == row["channel"]
      ),
      None,
    )
    out[row["tensor"]] = out[source] if source is not None else row["op_index"]
  return out
