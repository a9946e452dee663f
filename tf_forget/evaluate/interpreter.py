"""The one TFLite interpreter factory of tf_forget, and the quantized I/O rules.

Every `.tflite` file is run through `create` (CONVENTIONS.md) from its bytes (`model_content`;
a path is read through `fileio`, so local and URL paths such as gs:// run alike): LiteRT's
interpreter (`ai_edge_litert.interpreter`; `tf.lite.Interpreter` is deprecated), `num_threads`
configurable, and the default delegate (XNNPACK) on: `OpResolverType.AUTO` applies it.
`runtime="builtin"` disables default delegates.

Device fallback: `create_for_device` runs a file as a phone app would: XNNPACK
first; if the delegate refuses the model, the built-in kernels. Measured on this stack
(TF 2.21, ai-edge-litert): XNNPACK accepts sparse-encoded float32 and float16 files, and refuses
sparse `dynamic_int8` and `full_int8` files at `allocate_tensors` ("failed to delegate
FULLY_CONNECTED node ... (TfLiteXNNPackDelegate) failed to prepare"); those run with
`OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES`. Which path produced the numbers is returned
and recorded in the predictions metadata (`runtime`).

Quantized I/O (docs/spec.md §1.2): an int8 / uint8 / int16 input is fed
`q = clamp(round(x / s) + z)` with the input tensor's own scale s and zero point z (round half
away from zero, as TFLite's `Quantize` kernel); such an output is dequantized `(q - z) * s`
before any metric. Because the data sets yield uint8 pixels, `InputQuantizer` precomputes the
256 possible input values once and quantizes a batch with one table lookup. The input's layout
(NHWC, grey NHW, channels-first NCHW, a fixed batch) is read by `input_layout_of`
(`tf_forget.data.input_layout`).
"""

import re

from ai_edge_litert import interpreter as litert
import numpy as np

from tf_forget.artifacts import errors
from tf_forget.artifacts import filesystem
from tf_forget.data import input_layout
from tf_forget.export import flatbuffer
from tf_forget.export import flatbuffer_graph

RUNTIMES = {
  "xnnpack": litert.OpResolverType.AUTO,  # built-in kernels + the default XNNPACK delegate
  "builtin": litert.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
}
DEFAULT_NUM_THREADS = 2
# A delegate that refuses a model: LiteRT's messages at allocate / invoke.
_DELEGATE_REFUSAL = re.compile(r"delegate|failed to prepare", re.IGNORECASE)


class TfliteError(errors.Error):
  """A `.tflite` file that cannot be read or run, or does not fit the data (one line)."""


def _one_line(e):
  return " ".join(str(e).split())[:300]


def read_model(path):
  """Reads and checks a `.tflite` file: returns its bytes.

  Raises:
    TfliteError: missing, unreadable, or not a TFLite flatbuffer.
  """
  try:
    with filesystem.open_file(path, "rb") as f:  # local or URL (gs://)
      data = f.read()
  except filesystem.io_errors() as e:
    reason = getattr(e, "strerror", None) or _one_line(getattr(e, "message", None) or e)
    raise TfliteError(f"cannot read {path}: {reason}") from e
  try:
    flatbuffer.check_identifier(data, what=path)
  except flatbuffer.TfliteFileError as e:
    raise TfliteError(str(e)) from e
  return data


def create(
  model,
  num_threads=DEFAULT_NUM_THREADS,
  runtime="xnnpack",
  batch_size=None,
  preserve_all_tensors=False,
):
  """Creates a LiteRT interpreter with tensors allocated.

  Args:
    model: path of a `.tflite` file, or its bytes.
    num_threads: CPU threads (>= 1).
    runtime: a key of `RUNTIMES`.
    batch_size: if set, the (single) input is resized to `batch_size` before allocation.
    preserve_all_tensors: keep every intermediate tensor readable after `invoke` (LiteRT's
      `experimental_preserve_all_tensors`; use with runtime "builtin": a delegate's internal
      tensors are not the interpreter's).

  Returns:
    An allocated `ai_edge_litert.interpreter.Interpreter`.

  Raises:
    TfliteError: an unreadable, truncated or non-TFLite file (the interpreter verifies the
      whole flatbuffer), or a runtime that cannot prepare the model.
  """
  if runtime not in RUNTIMES:
    raise TfliteError(f"unknown runtime {runtime!r} (known: {', '.join(RUNTIMES)})")
  if not isinstance(num_threads, int) or num_threads < 1:
    raise TfliteError(f"num_threads must be an int >= 1, got {num_threads!r}")
  name = "model bytes"
  if isinstance(model, (bytes, bytearray)):
    data = bytes(model)
    try:
      flatbuffer.check_identifier(data)
    except flatbuffer.TfliteFileError as e:
      raise TfliteError(str(e)) from e
  else:
    name = str(model)
    data = read_model(model)
  try:
    interp = litert.Interpreter(
      model_content=data,
      num_threads=num_threads,
      experimental_op_resolver_type=RUNTIMES[runtime],
      experimental_preserve_all_tensors=bool(preserve_all_tensors),
    )
    if batch_size is not None:
      inputs = interp.get_input_details()
      if len(inputs) != 1:
        raise TfliteError(f"{name} has {len(inputs)} inputs; expected one image input")
      shape = list(inputs[0]["shape"])
      if shape[0] != batch_size:
        interp.resize_tensor_input(inputs[0]["index"], [batch_size, *shape[1:]], strict=True)
    interp.allocate_tensors()
  except (ValueError, RuntimeError) as e:
    if isinstance(e, TfliteError):
      raise
    raise TfliteError(f"{name} is not a valid TFLite model: {_one_line(e)}") from e
  return interp


def input_layout_of(data, name="model bytes"):
  """The `input_layout.InputLayout` of the one input of a `.tflite` file's bytes (its shape
  signature: a fixed batch is `batch`).

  Raises:
    TfliteError: not a complete flatbuffer, not one input, or an input no audit can feed (one
      line naming `name`).
  """
  try:
    inputs = flatbuffer_graph.io_details(data)["inputs"]
  except flatbuffer.TfliteFileError as e:
    raise TfliteError(f"{name} is not a valid TFLite model: {e}") from e
  if len(inputs) != 1:
    raise TfliteError(f"{name} has {len(inputs)} inputs; expected one image input")
  try:
    return input_layout.of_io(inputs[0])
  except input_layout.LayoutError as e:
    raise TfliteError(f"{name}: {e}") from e


def is_delegate_refusal(error):
  """Whether an interpreter error says a delegate refused (failed to prepare) the model."""
  return bool(_DELEGATE_REFUSAL.search(str(error)))


def _probe(interp):
  """Invokes once on zeros, so that a delegate failing only at invoke fails here."""
  details = interp.get_input_details()[0]
  interp.set_tensor(details["index"], np.zeros(details["shape"], details["dtype"]))
  interp.invoke()


def create_for_device(model, num_threads=DEFAULT_NUM_THREADS, batch_size=None, probe=True):
  """Creates an interpreter as a device would: XNNPACK, else the built-in kernels.

  The XNNPACK interpreter is allocated (and, with `probe`, invoked once on zeros); if that
  fails with a delegate refusal (`is_delegate_refusal`), the model is created again with
  `runtime="builtin"`. Any other failure (a corrupt or truncated file) is raised as it is.

  Args:
    model: path of a `.tflite` file, or its bytes.
    num_threads: CPU threads (>= 1).
    batch_size: if set, the (single) input is resized to `batch_size` before allocation.
    probe: also invoke once, catching delegates that refuse only at invoke.

  Returns:
    (allocated interpreter, runtime name "xnnpack" or "builtin", one-line reason of the
    fallback or None).

  Raises:
    TfliteError: an unreadable or invalid file, or one that no runtime can prepare.
  """
  try:
    interp = create(model, num_threads, "xnnpack", batch_size)
    if probe:
      _probe(interp)
    return interp, "xnnpack", None
  except (TfliteError, ValueError, RuntimeError) as e:
    if not is_delegate_refusal(e):
      if isinstance(e, TfliteError):
        raise
      raise TfliteError(f"cannot run the model: {_one_line(e)}") from e
    reason = f"XNNPACK refused the model: {_one_line(e)}"
  interp = create(model, num_threads, "builtin", batch_size)
  return interp, "builtin", reason


def _quantization(details):
  scale, zero = details["quantization"]
  return float(scale), int(zero)


class InputQuantizer:
  """Maps uint8 images (or float raw pixel values) to what an input tensor takes.

  float32 inputs get the raw pixel values as float32; int8/uint8 inputs get
  `clamp(round_half_away(x / scale) + zero_point)` with the tensor's own quantization.
  """

  def __init__(self, details):
    self.dtype = np.dtype(details["dtype"])
    self.quantized = self.dtype in (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16))
    if self.quantized:
      self.scale, self.zero_point = _quantization(details)
      if self.scale <= 0:
        raise TfliteError(f"input {details['name']!r} is {self.dtype} without quantization")
    elif self.dtype != np.dtype(np.float32):
      raise TfliteError(
        f"unsupported input dtype {self.dtype} (expected float32, uint8, int8 or int16)"
      )
    self._table = self.quantize(np.arange(256, dtype=np.float32))

  def quantize(self, values):
    """Quantizes float raw pixel values (any shape) to the input dtype."""
    values = np.asarray(values, np.float32)
    if not self.quantized:
      return values
    info = np.iinfo(self.dtype)
    scaled = values.astype(np.float64) / self.scale
    rounded = np.sign(scaled) * np.floor(np.abs(scaled) + 0.5)  # half away from zero
    return np.clip(rounded + self.zero_point, info.min, info.max).astype(self.dtype)

  def __call__(self, images, out=None):
    """Converts uint8 `[N, ...]` images (table lookup) or float ones, optionally into `out`."""
    images = np.asarray(images)
    if images.dtype == np.uint8 and not self.quantized:  # the pixel values, exactly
      out = np.empty(images.shape, np.float32) if out is None else out
      np.copyto(out, images, casting="unsafe")
      return out
    if images.dtype == np.uint8:
      return np.take(self._table, images, out=out)
    result = self.quantize(images)
    if out is not None:
      out[...] = result
      return out
    return result


class OutputDequantizer:
  """Maps an output tensor's values to float32 scores (`(q - zero_point) * scale`)."""

  def __init__(self, details):
    self.dtype = np.dtype(details["dtype"])
    self.quantized = np.issubdtype(self.dtype, np.integer)
    if self.quantized:
      self.scale, self.zero_point = _quantization(details)
      if self.scale <= 0:
        raise TfliteError(f"output {details['name']!r} is {self.dtype} without quantization")

  def __call__(self, values):
    if not self.quantized:
      return np.asarray(values, np.float32)
    return (values.astype(np.float32) - np.float32(self.zero_point)) * np.float32(self.scale)
