"""Batched TFLite inference: resize once to batch B, feed whole batches, one tail per stream.

The interpreter's input is resized to `[B, H, W, C]` and allocated once (`interpreter.create`).
Every batch of B examples is quantized (one table lookup for uint8 pixels) straight into a
preallocated input buffer and run. A last partial batch of m < B examples is handled by the
`tail` policy, never by a re-allocation per batch:

  * "pad": the m examples go into the first m rows of the B buffer, the other rows are zeros,
    and only the first m output rows are kept: (B - m) rows of wasted compute;
  * "resize" (default): the input is resized to m once for that batch; the next full batch
    resizes back to B. Measured on ResNet-20 / CIFAR shapes, 2 threads, B = 256: a
    resize + allocate (+ XNNPACK re-prepare on the next invoke) costs 0-4 ms, below the
    timing noise of one ~250 ms batch, so re-allocating once per stream beats padding unless
    m is within a few rows of B; end to end the evaluator ran 4-8% faster with "resize" than
    with "pad" on 3000-5000 images (benchmarks/tflite_eval_bench.py reports both).

Both are correct only because rows do not interact: a Keras model in inference mode (BatchNorm
folded) and per-row dynamic quantization of activations in the hybrid (`dynamic_int8`) kernels.
tests/evaluate/batched_test.py checks that every format gives the same outputs at batch 1 and at
batch B under both policies.

The images are `[N, H, W, C]` as a data set yields them; the file's input layout
(`tf_forget.data.input_layout`: `[B, H, W, C]`, grey `[B, H, W]`, channels-first
`[B, C, H, W]`) decides how they are fed. A file whose input cannot be resized (a fixed batch
in its shape signature, e.g. `[1, H, W]`) runs at its own batch size with the "pad" policy.

`runtime="auto"` runs the file as a device would (`interpreter.create_for_device`):
XNNPACK, or the built-in kernels if the delegate refuses the model at allocation or at the
first invoke; `runtime` then names the path that produced the outputs and `fallback_reason`
says why.
"""

import numpy as np

from tf_forget.evaluate import interpreter

DEFAULT_BATCH_SIZE = 256
TAIL_POLICIES = ("resize", "pad")


class BatchedRunner:
  """Runs one `.tflite` file over uint8 image batches of any size.

  Attributes:
    batch_size: B, the interpreter's fixed input batch size (the file's own when its input
      cannot be resized).
    layout: the file's `input_layout.InputLayout`.
    input_shape: (H, W, C) of the images the model takes (in `layout`).
    num_classes: number of output scores.
    input_dtype, output_dtype: the file's I/O dtypes (int8 for `full_int8`).
  """

  def __init__(
    self,
    model,
    batch_size=DEFAULT_BATCH_SIZE,
    num_threads=interpreter.DEFAULT_NUM_THREADS,
    runtime="xnnpack",
    tail="resize",
    output_index=None,
  ):
    """Creates the interpreter (via the factory) at batch size `batch_size`.

    Args:
      model: path of a `.tflite` file, or its bytes.
      batch_size: B >= 1.
      num_threads: interpreter threads.
      runtime: a key of `interpreter.RUNTIMES`, or "auto" (XNNPACK, falling back to the
        built-in kernels when the delegate refuses the model).
      tail: how a last partial batch is run, one of `TAIL_POLICIES` (see module doc).
      output_index: the output that holds the class scores, for a file with several (in the
        file's own output order; `--output_index`); None: the file must have one.

    Raises:
      interpreter.TfliteError: unreadable / invalid file, or not a one-input, one-output
        image classifier.
    """
    if not isinstance(batch_size, int) or batch_size < 1:
      raise interpreter.TfliteError(f"batch_size must be an int >= 1, got {batch_size!r}")
    if tail not in TAIL_POLICIES:
      raise interpreter.TfliteError(f"unknown tail policy {tail!r} ({', '.join(TAIL_POLICIES)})")
    named = not isinstance(model, (bytes, bytearray))
    self.layout = interpreter.input_layout_of(
      interpreter.read_model(model) if named else model, str(model) if named else "model bytes"
    )
    if self.layout.batch is not None:  # its input cannot be resized: run it at its own batch
      batch_size, tail = self.layout.batch, "pad"
    self.batch_size = batch_size
    self.tail = tail
    self.reallocations = 0  # resize + allocate calls after creation (tail batches only)
    self.fallback_reason = None
    self._model, self._num_threads = model, num_threads
    self._output_index = output_index
    self._auto = runtime == "auto"
    self._invoked = False
    if self._auto:
      self.interpreter, self.runtime, self.fallback_reason = interpreter.create_for_device(
        model, num_threads, batch_size, probe=False
      )
    else:
      self.interpreter = interpreter.create(model, num_threads, runtime, batch_size)
      self.runtime = runtime
    self._setup()

  def _setup(self):
    """Reads the I/O details of `self.interpreter`, allocated at `self.batch_size`."""
    batch_size = self.batch_size
    inputs = self.interpreter.get_input_details()
    outputs = self.interpreter.get_output_details()
    index = self._output_index or 0
    if (
      (self._output_index is None and len(outputs) != 1)
      or not 0 <= index < len(outputs)
      or len(outputs[index]["shape"]) != 2
    ):
      raise interpreter.TfliteError(
        f"expected one [batch, classes] output{'' if self._output_index is None else ' at '}"
        f"{'' if self._output_index is None else f'output_index {index}'}, got "
        f"{[list(o['shape']) for o in outputs]}"
      )
    output = outputs[index]
    self._in, self._out = inputs[0]["index"], output["index"]
    self.input_shape = self.layout.image_shape
    self.num_classes = int(output["shape"][1])
    self.input_dtype = np.dtype(inputs[0]["dtype"])
    self.output_dtype = np.dtype(output["dtype"])
    self.quantize = interpreter.InputQuantizer(inputs[0])
    self.dequantize = interpreter.OutputDequantizer(output)
    self._buffer = np.zeros([batch_size, *self.layout.model_shape], self.input_dtype)
    self._allocated = batch_size

  def _allocate(self, size):
    if size != self._allocated:
      self.interpreter.resize_tensor_input(self._in, [size, *self.layout.model_shape], strict=True)
      self.interpreter.allocate_tensors()
      self._allocated = size
      self.reallocations += 1

  def check_images(self, images):
    """Raises `TfliteError` unless `images` are `[N, H, W, C]` with the model's (H, W, C)."""
    shape = tuple(np.shape(images)[1:])
    if shape != self.input_shape:
      raise interpreter.TfliteError(
        f"model input shape {self.input_shape} does not match the data's image shape {shape}"
      )

  def run_raw(self, images, out=None):
    """Returns the raw (possibly int8) outputs `[N, num_classes]` for images `[N, H, W, C]`
    (fed in the file's layout).

    Args:
      images: uint8 (or float32 raw pixel) images, any N >= 0.
      out: optional preallocated `[N, num_classes]` array of the output dtype.
    """
    self.check_images(images)
    n = len(images)
    if out is None:
      out = np.empty([n, self.num_classes], self.output_dtype)
    b = self.batch_size
    for start in range(0, n, b):
      chunk = images[start : start + b]
      m = len(chunk)
      if m < b and self.tail == "pad":
        self._buffer[m:] = 0
        feed = self._buffer
      else:
        feed = self._buffer[:m]
      self._allocate(len(feed))
      self.quantize(self.layout.to_model(chunk), out=self._buffer[:m])
      self._invoke(feed)
      out[start : start + m] = self.interpreter.get_tensor(self._out)[:m]
    return out

  def _invoke(self, feed):
    """Invokes; under "auto", a delegate refusing the first invoke switches to "builtin"."""
    try:
      self.interpreter.set_tensor(self._in, feed)
      self.interpreter.invoke()
    except (RuntimeError, ValueError) as e:
      if not (
        self._auto
        and not self._invoked
        and self.runtime == "xnnpack"
        and interpreter.is_delegate_refusal(e)
      ):
        raise interpreter.TfliteError(f"invoke failed: {' '.join(str(e).split())[:300]}") from e
      self.fallback_reason = f"XNNPACK refused the model: {' '.join(str(e).split())[:300]}"
      self.runtime = "builtin"
      self.interpreter = interpreter.create(self._model, self._num_threads, "builtin", len(feed))
      self._allocated = len(feed)
      self.interpreter.set_tensor(self._in, feed)
      self.interpreter.invoke()
    self._invoked = True

  def run(self, images):
    """Returns float32 scores `[N, num_classes]`, int8 outputs dequantized (docs/spec.md §1.2)."""
    return self.dequantize(self.run_raw(images))
