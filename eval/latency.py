"""Median inference latency of `.tflite` files, run as on a device (issue #10).

Issue #10 asks, per format and encoding, for the median batch-1 and batch-64 latency with 2
threads, measured in the same run as the plain twin. `measure` times several files in one
run, interleaved in blocks: for every batch size, each round invokes every file `block` times
in turn (after one untimed invoke), so that a slow-down of the machine (2 shared cores) hits
plain and sparse alike and their ratio stays meaningful. Blocks rather than single invokes:
alternating invokes of an XNNPACK and a built-in-kernel interpreter one by one lets their
thread pools disturb each other (measured: batch-1 medians of the same file moved 4x between
runs), a block re-warms the pool first. Files run through the one interpreter factory
(`interpreter.create_for_device`: XNNPACK, else the built-in kernels), and the runtime path
that was timed is returned with the numbers.

Only `invoke` is timed (the input is set before); the inputs are fixed pseudo-random pixels
(the sparse kernels' work does not depend on the data). The first `warmup` invocations per
file and batch size are not timed (XNNPACK packs weights at the first invoke).
"""

import time

import numpy as np

from eval import interpreter
from tf_forget.artifacts import errors

DEFAULT_BATCH_SIZES = (1, 64)
DEFAULT_REPEATS = 30
DEFAULT_WARMUP = 3
DEFAULT_BLOCK = 10


class LatencyError(errors.Error):
  """Bad latency-measurement options (one line)."""


def _prepare(model, batch_size, num_threads, runtime, seed):
  """(interpreter, runtime, fallback reason) with a fixed input set at `batch_size`."""
  if runtime == "auto":
    interp, used, reason = interpreter.create_for_device(model, num_threads, batch_size)
  else:
    interp = interpreter.create(model, num_threads, runtime, batch_size)
    used, reason = runtime, None
  details = interp.get_input_details()[0]
  images = np.random.default_rng(seed).integers(
      0, 256, size=details["shape"], dtype=np.uint8)
  interp.set_tensor(details["index"], interpreter.InputQuantizer(details)(images))
  return interp, used, reason


def measure(models, batch_sizes=DEFAULT_BATCH_SIZES,
            num_threads=interpreter.DEFAULT_NUM_THREADS, repeats=DEFAULT_REPEATS,
            warmup=DEFAULT_WARMUP, runtime="auto", seed=0, block=DEFAULT_BLOCK):
  """Median latency of several files, measured interleaved in one run.

  Args:
    models: {name: path or bytes of a `.tflite` file} (e.g. a plain file and its sparse twin).
    batch_sizes: input batch sizes to time.
    num_threads: interpreter threads.
    repeats: timed invocations per file and batch size (>= 1).
    warmup: untimed invocations before (>= 0).
    runtime: "auto" (as on a device), "xnnpack" or "builtin".
    seed: seed of the input pixels.
    block: timed invocations of one file in a row within a round (>= 1).

  Returns:
    {name: {"runtime": path timed, "fallback_reason": str or None,
            "batch_<b>": {"median_s", "p10_s", "p90_s", "repeats"}}}.

  Raises:
    LatencyError: bad options.
    interpreter.TfliteError: a file that cannot be run.
  """
  if not models:
    raise LatencyError("no file to time")
  if not isinstance(repeats, int) or repeats < 1:
    raise LatencyError(f"repeats must be an int >= 1, got {repeats!r}")
  if not isinstance(warmup, int) or warmup < 0:
    raise LatencyError(f"warmup must be an int >= 0, got {warmup!r}")
  if not isinstance(block, int) or block < 1:
    raise LatencyError(f"block must be an int >= 1, got {block!r}")
  if not batch_sizes or any(not isinstance(b, int) or b < 1 for b in batch_sizes):
    raise LatencyError(f"batch sizes must be ints >= 1, got {batch_sizes!r}")
  results = {name: {} for name in models}
  for b in batch_sizes:
    prepared = {name: _prepare(model, b, num_threads, runtime, seed)
                for name, model in models.items()}
    for name, (_, used, reason) in prepared.items():
      results[name].setdefault("runtime", used)
      results[name].setdefault("fallback_reason", reason)
    for interp, _, _ in prepared.values():
      for _ in range(warmup):
        interp.invoke()
    times = {name: [] for name in models}
    while len(next(iter(times.values()))) < repeats:
      n = min(block, repeats - len(next(iter(times.values()))))
      for name, (interp, _, _) in prepared.items():
        interp.invoke()  # untimed: re-warms this interpreter's thread pool
        for _ in range(n):
          start = time.perf_counter()
          interp.invoke()
          times[name].append(time.perf_counter() - start)
    for name, t in times.items():
      t = np.asarray(t)
      results[name][f"batch_{b}"] = {
          "median_s": float(np.median(t)), "p10_s": float(np.percentile(t, 10)),
          "p90_s": float(np.percentile(t, 90)), "repeats": int(t.size)}
  return results


def ratio(result, reference, batch_size):
  """Median latency ratio `result / reference` at `batch_size` (e.g. sparse vs plain)."""
  key = f"batch_{batch_size}"
  return result[key]["median_s"] / reference[key]["median_s"]
