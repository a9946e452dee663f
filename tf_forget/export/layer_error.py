"""Per-layer quantization error on chosen examples (`layer_errors`, `rank_layers`).

Tool: TensorFlow's own `tf.lite.experimental.QuantizationDebugger` (TF 2.21,
`tensorflow/lite/tools/optimize/debugging/python/debugger.py`), facts read in that source and
checked on the graphs it builds:
  * `QuantizationDebugger(converter=...)` calibrates once (`_set_converter_options_for_calibration`
    sets `_experimental_calibrate_only`; `calibrated_model` is the float model with the
    calibration statistics), then `_get_quantized_model` / `_init_from_converter` call
    `convert.mlir_quantize(calibrated_model, fully_quantize=..., enable_numeric_verify=...,
    denylisted_ops=..., denylisted_nodes=...)`. `get_debug_quantized_model()` is the
    instrumented model, `get_nondebug_quantized_model()` the plain one: with
    `fully_quantize=True` (int8 in- and output) it has the same ops, tensors, weights and
    quantization as `converter.convert(model, "full_int8", ...)` (checked; only the bytes of
    CONVERSION_METADATA differ). One calibration serves every subset.
  * Matching (`enable_whole_model_verify` is never passed, so it is False, "per-layer" in
    `convert.mlir_quantize`'s docstring): in the debug model every quantized op is followed by
    a `NumericVerify` custom op with inputs (quantized output, float reference); the reference
    is the original float op, with the original float weights, run on `DEQUANTIZE` of the
    quantized op's own quantized inputs (with `fully_quantize=True`, which we use, the first
    layer too reads the dequantized int8 input; with the default False it reads the raw float
    input, so the input's rounding would count as its error). So each layer's error is that
    layer's own error (weight and output rounding) on the inputs the int8 file really feeds it,
    not the error accumulated from the layers before it.
  * `layer_direct_compare_metrics` functions get `(float value, quantized value, scale,
    zero_point)` of each NumericVerify op's two inputs (`_collect_layer_statistics`: `q_idx,
    f_idx = op_detail['inputs']`) after every invoke; the debugger keeps the per-invoke values
    and reports their `np.nanmean` over invokes (`layer_statistics[<NumericVerify output
    name>]`). The file-based constructor opens its interpreter with
    `experimental_preserve_all_tensors` when such metrics are given (the converter-based one
    does not), so we measure with `QuantizationDebugger(quant_debug_model_content=...)`.
  * `denylisted_nodes` are "op's output tensor names" (`QuantizationDebugOptions`); MLIR's
    quantize pattern compares them with the op's `NameLoc`, which is the op's output tensor
    name in `calibrated_model` (the whole name, fused parts joined by ";"). Checked: that name
    keeps the op in float; one fused part ("model/dense/MatMul") or the uniquified names of the
    debug / plain model ("...Relu1") are ignored silently, so
    `selective_quantizer.SelectiveQuantizer` refuses names `calibrated_model` does not have.
    The debug model names an op's float twin and its int8 output after that name plus digits
    ("X", "X1"), which is how rows find it (None if not found); rows carry exactly that name
    (`tensor_name`).

Metrics: our metric functions return sums over the examples of an invoke, so the debugger's mean
over invokes times their number is the subset's total (a smaller last batch gets its own run).
Inputs are fed as int8, rounded half away from zero and clamped as
`tf_forget.evaluate.interpreter.InputQuantizer` feeds the full_int8 file (the debugger's own
float->int8 rounding does not clamp). With e = dequantized int8 output - float reference f:
  mse = sum e^2 / (n * size); float_power = sum f^2 / (n * size); nmse = sum e^2 / sum f^2;
  snr_db = 10 log10(sum f^2 / sum e^2); cosine = mean over examples of cos(f_i, q_i)
  (1 when both are zero, 0 when one is). Undefined or infinite values (empty subset, zero
  float power, zero error) are None.
"""

import contextlib
import math
import warnings

import numpy as np
import tensorflow as tf

from tf_forget.artifacts import errors
from tf_forget.artifacts import tflite_formats
from tf_forget.export import converter
from tf_forget.export import flatbuffer_graph
from tf_forget.export import model_files

FORMAT = "full_int8"
DEFAULT_BATCH_SIZE = 16
METRICS = ("mse", "float_power", "nmse", "snr_db", "cosine")
_NUMERIC_VERIFY = "NumericVerify"


class LayerErrorError(errors.Error):
  """Bad input to the layer-error analysis (one line)."""


@contextlib.contextmanager
def quiet():
  """Silences the notices the debugger's own `tf.lite.Interpreter` emits each time."""
  with warnings.catch_warnings():
    warnings.filterwarnings(
      "ignore",
      message=r"\s*Warning: (tf.lite.Interpreter is deprecated|"
      r"Enabling `experimental_preserve_all_tensors)",
    )
    yield


def _full_int8_converter(model, representative_images):
  """A `TFLiteConverter` set up as `converter.convert(model, "full_int8", ...)` sets it up."""
  options = tflite_formats.get(FORMAT).options
  spec = converter.input_signature(model)
  if representative_images is None or len(representative_images) == 0:
    raise converter.ConversionError(
      f"format {FORMAT!r} needs representative images (docs/spec.md §2.5)"
    )
  representative_images = converter.model_inputs(model, representative_images)
  if tuple(np.shape(representative_images)[1:]) != tuple(spec.shape[1:]):
    raise converter.ConversionError(
      f"representative images have shape {tuple(np.shape(representative_images)[1:])}, "
      f"model input {tuple(spec.shape[1:])}"
    )
  concrete, trackable = model_files.trace(model, spec)  # tf_keras, Keras 3, SavedModel
  conv = tf.lite.TFLiteConverter.from_concrete_functions([concrete], trackable)
  conv.optimizations = [tf.lite.Optimize.DEFAULT]
  conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
  conv.inference_input_type = tf.as_dtype(options["io_type"])
  conv.inference_output_type = tf.as_dtype(options["io_type"])
  conv.representative_dataset = converter.representative_dataset(representative_images)
  return conv


def make_debugger(model, representative_images, float_nodes=None):
  """A QuantizationDebugger calibrated once; int8 in- and outputs (`fully_quantize=True`)."""
  options = tf.lite.experimental.QuantizationDebugOptions(
    fully_quantize=True, denylisted_nodes=float_nodes or None
  )
  conv = _full_int8_converter(model, representative_images)
  try:
    with quiet():
      return tf.lite.experimental.QuantizationDebugger(converter=conv, debug_options=options)
  except Exception as e:
    raise converter.ConversionError(
      f"quantization debugger failed: {' '.join(str(e).split())[:300]}"
    ) from e


def _graph(data):
  """Ops [(op name, [input tensor], [output tensor])], tensors [(name, scale, zero point)] and
  the input tensor of a model's first subgraph (`flatbuffer_graph.graph`)."""
  g = flatbuffer_graph.graph(data)
  return (
    [(op.name, list(op.inputs), list(op.outputs)) for op in g.ops],
    [(t.name, t.scale, t.zero_point) for t in g.tensors],
    g.inputs[0],
  )


def _base(names, candidates):
  """The longest candidate c such that every name is c followed by digits only, or None."""
  fits = [
    c
    for c in candidates
    if all(n.startswith(c) and (n[len(c) :] == "" or n[len(c) :].isdigit()) for n in names)
  ]
  return max(fits, key=len) if fits else None


def op_outputs(data):
  """{op name: [(op index, output tensor name)]} of a model's first subgraph."""
  ops, tensors, _ = _graph(data)
  found = {}
  for index, (name, _, outs) in enumerate(ops):
    for out in outs:
      found.setdefault(name, []).append((index, tensors[out][0]))
  return found


def _layers(debug_model, calibrated_model, plain_model):
  """One dict per NumericVerify op of `debug_model`: names, op, quantization (see module doc)."""
  ops, tensors, _ = _graph(debug_model)
  producer = {out: (i, name) for i, (name, _, outs) in enumerate(ops) for out in outs}
  calibrated, plain = op_outputs(calibrated_model), op_outputs(plain_model)
  layers = []
  for name, inputs, outs in ops:
    if name != _NUMERIC_VERIFY:
      continue
    q_index, f_index = inputs[:2]
    op_name = producer[q_index][1]
    q_name, scale, zero = tensors[q_index]
    base = _base([q_name, tensors[f_index][0]], [n for _, n in calibrated.get(op_name, [])])
    in_plain = [
      (i, n)
      for i, n in plain.get(op_name, [])
      if base is not None and (n == base or _base([n], [base]) == base)
    ]
    in_plain.sort(key=lambda x: (x[1] != base, x[0]))  # the exact name first
    layers.append(
      {
        "key": tensors[outs[0]][0],
        "tensor_name": base,
        "op_name": op_name,
        "op_index": in_plain[0][0] if in_plain else None,
        "file_tensor_name": in_plain[0][1] if in_plain else None,
        "scale": scale,
        "zero_point": zero,
      }
    )
  return layers


def _pair(float_values, quant, scale, zero_point):
  """float64 [examples, elements] of the float reference and of the dequantized int8 output."""
  f = np.asarray(float_values, np.float64).reshape(len(float_values), -1)
  return f, ((np.asarray(quant, np.float64) - zero_point) * scale).reshape(f.shape)


def _sum_sq_error(f, q):
  return float(np.sum((q - f) ** 2))


def _sum_cosine(f, q):
  nf, nq = np.linalg.norm(f, axis=1), np.linalg.norm(q, axis=1)
  cos = np.where(nf * nq > 0, np.sum(f * q, axis=1) / np.maximum(nf * nq, 1e-300), 0.0)
  return float(np.sum(np.where((nf == 0) & (nq == 0), 1.0, cos)))


def error_sums(reference, values):
  """The sums `metrics` is made of, for float64 `[examples, elements]` reference values and
  the values compared with them (summed over more batches by adding them key by key)."""
  f = np.asarray(reference, np.float64).reshape(len(reference), -1)
  q = np.asarray(values, np.float64).reshape(f.shape)
  return {
    "sum_sq_error": _sum_sq_error(f, q),
    "sum_sq_float": float(np.sum(f**2)),
    "sum_cosine": _sum_cosine(f, q),
    "examples": float(len(f)),
    "elements": float(f.size),
  }


# layer_direct_compare_metrics: (float value, int8 value, scale, zero point) -> a sum over the
# examples of one invoke (the keys of `error_sums`).
_SUMS = {
  "sum_sq_error": lambda *args: _sum_sq_error(*_pair(*args)),
  "sum_sq_float": lambda f, *_: float(np.sum(np.asarray(f, np.float64) ** 2)),
  "sum_cosine": lambda *args: _sum_cosine(*_pair(*args)),
  "examples": lambda f, *_: float(len(f)),
  "elements": lambda f, *_: float(np.size(f)),
}


def _quantize_input(images, scale, zero_point):
  x = np.asarray(images, np.float64) / scale
  rounded = np.sign(x) * np.floor(np.abs(x) + 0.5)  # half away from zero, as TFLite
  return np.clip(rounded + zero_point, -128, 127).astype(np.int8)


def _measure(debug_model, images, batch_size):
  """{NumericVerify output name: {sum name: total over `images`}}."""
  _, tensors, image = _graph(debug_model)
  _, in_scale, in_zero = tensors[image]
  options = tf.lite.experimental.QuantizationDebugOptions(layer_direct_compare_metrics=_SUMS)
  n = len(images)
  full = n - n % batch_size
  totals = {}
  for lo, hi, size in ((0, full, batch_size), (full, n, n - full)):
    if hi <= lo:
      continue

    def dataset(lo=lo, hi=hi, size=size):
      for start in range(lo, hi, size):
        yield [_quantize_input(images[start : start + size], in_scale, in_zero)]

    with quiet():
      debugger = tf.lite.experimental.QuantizationDebugger(
        quant_debug_model_content=debug_model, debug_dataset=dataset, debug_options=options
      )
      debugger.run()
    invokes = (hi - lo) // size
    for name, stats in debugger.layer_statistics.items():
      out = totals.setdefault(name, dict.fromkeys(_SUMS, 0.0))
      for key in _SUMS:
        out[key] += float(stats[key]) * invokes
  return totals


def metrics(sums):
  """The metrics of one layer on one subset from its sums (module doc; `error_sums`); None
  where undefined (no example, zero float power, zero error for the SNR)."""
  count = int(round(sums.get("examples", 0)))
  if not count:
    return {"count": 0, **dict.fromkeys(METRICS)}
  err, power, elements = sums["sum_sq_error"], sums["sum_sq_float"], sums["elements"]
  snr = None if power == 0 or err == 0 else 10.0 * math.log10(power / err)  # +-inf: None
  return {
    "count": count,
    "mse": err / elements,
    "float_power": power / elements,
    "nmse": err / power if power > 0 else None,
    "snr_db": snr,
    "cosine": sums["sum_cosine"] / count,
  }


def layer_errors(
  model, representative_images, subsets, batch_size=DEFAULT_BATCH_SIZE, quantizer=None
):
  """Per-layer float-vs-int8 error of the `full_int8` quantization, per subset of examples.

  Args:
    model: a tf_keras model taking float32 `[batch, H, W, C]` raw pixels, returning logits.
    representative_images: uint8 `[N, H, W, C]`, the calibration set (docs/spec.md §2.5); the same
      quantized model is measured on every subset.
    subsets: dict name -> images `[n, H, W, C]` (uint8 or float raw pixels; n may be 0), e.g.
      "forgotten" (the examples the int8 file flips), "stable".
    batch_size: examples per invoke (the debug interpreter keeps every intermediate tensor
      of a batch, float twins included: memory grows with it).
    quantizer: a `selective_quantizer.SelectiveQuantizer` of the same model and images not called yet, whose
      calibration to use instead of calibrating again (one calibration for the
      errors and the ablations).

  Returns:
    A list of rows, one per quantized op with a float reference, in op order (JSON-able):
    {"tensor_name": the `denylisted_nodes` name, "op_name": e.g. "CONV_2D", "op_index" and
    "file_tensor_name": the op's index and output tensor name in the plain full_int8 file,
    "scale", "zero_point": of its int8 output, "size": elements per example,
    "subsets": {name: {"count", "mse", "float_power", "nmse", "snr_db", "cosine"}}}.

  Raises:
    converter.ConversionError: missing / mis-shaped representative data or a converter failure.
    LayerErrorError: a subset whose image shape is not the model's, or a bad batch size.
  """
  shape = tuple(converter.input_signature(model).shape[1:])
  subsets = {
    name: converter.model_inputs(model, images) if len(images) else images
    for name, images in subsets.items()
  }  # in the model's input layout
  for name, images in subsets.items():
    if len(images) and tuple(np.shape(images)[1:]) != shape:
      raise LayerErrorError(
        f"subset {name!r} has images of shape {tuple(np.shape(images)[1:])}, model input {shape}"
      )
  if not isinstance(batch_size, int) or batch_size < 1:
    raise LayerErrorError(f"batch_size must be an int >= 1, got {batch_size!r}")
  debugger = (
    quantizer.debugger if quantizer is not None else make_debugger(model, representative_images)
  )
  debug_model = debugger.get_debug_quantized_model()
  layers = _layers(debug_model, debugger.calibrated_model, debugger.get_nondebug_quantized_model())
  measured = {
    name: _measure(debug_model, np.asarray(images), batch_size) if len(images) else {}
    for name, images in subsets.items()
  }
  rows = []
  for layer in layers:
    key = layer.pop("key")
    per_subset = {name: metrics(measured[name].get(key, {})) for name in subsets}
    size = next(
      (
        measured[name][key]["elements"] / measured[name][key]["examples"]
        for name in subsets
        if key in measured[name]
      ),
      None,
    )
    rows.append(dict(layer, size=None if size is None else int(round(size)), subsets=per_subset))
  return rows


def rank_layers(result, forgotten="forgotten", stable="stable"):
  """Layers ranked by their own error on the forgotten examples, with its excess over the rest.

  Order: nmse[forgotten] (squared error over the float tensor's power on the forgotten
  examples), largest first — the layer whose int8 twin distorts most where the file forgot;
  ties by the excess, then lower op index, then tensor name; rows without an nmse (an empty
  subset, a zero float tensor) last. Each row also has excess = nmse[forgotten] − nmse[stable]:
  how much larger that error is on the forgotten examples than on the stable rest (> 0: the
  error concentrates where the file forgot).

  Why not order by the excess: when the culprit breaks nearly every example, the few stable
  ones are survivors by luck on which it errs as much, and its excess falls to 0 or below
  (measured on a digits CNN whose int8 file broke 335 of 360 examples: the culprit's excess
  was the lowest of 9 layers, its nmse on the forgotten examples the highest, 1.9 against
  <= 0.16 for every other layer; keeping it alone in float recovered 333 of 335;
  examples/repair/NOTES.md). A ratio or SNR difference would put lossless ops (RESHAPE, pooling:
  nmse ~1e-16) anywhere.

  Args:
    result: rows of `layer_errors`.
    forgotten, stable: names of two of its subsets.

  Returns:
    [{"rank", "tensor_name" (the `denylisted_nodes` name: pass it to `selective_quantizer.SelectiveQuantizer`),
      "op_name", "op_index", "nmse_forgotten", "nmse_stable", "excess", "snr_db_forgotten",
      "snr_db_stable", "snr_drop_db" (stable minus forgotten SNR)}], best first.

  Raises:
    LayerErrorError: a subset name the result does not have.
  """
  ranked = []
  for row in result:
    for name in (forgotten, stable):
      if name not in row["subsets"]:
        raise LayerErrorError(
          f"layer errors have no subset {name!r} (have {', '.join(sorted(row['subsets']))})"
        )
    f, s = row["subsets"][forgotten], row["subsets"][stable]
    excess = (f["nmse"] - s["nmse"]) if f["nmse"] is not None and s["nmse"] is not None else None
    drop = (
      s["snr_db"] - f["snr_db"] if f["snr_db"] is not None and s["snr_db"] is not None else None
    )
    ranked.append(
      {
        "tensor_name": row["tensor_name"],
        "op_name": row["op_name"],
        "op_index": row["op_index"],
        "nmse_forgotten": f["nmse"],
        "nmse_stable": s["nmse"],
        "excess": excess,
        "snr_db_forgotten": f["snr_db"],
        "snr_db_stable": s["snr_db"],
        "snr_drop_db": drop,
      }
    )
  ranked.sort(
    key=lambda r: (
      r["nmse_forgotten"] is None,
      -(r["nmse_forgotten"] or 0.0),
      -(r["excess"] or 0.0),
      r["op_index"] if r["op_index"] is not None else math.inf,
      r["tensor_name"] or "",
    )
  )
  for i, r in enumerate(ranked):
    r["rank"] = i + 1
  return ranked
