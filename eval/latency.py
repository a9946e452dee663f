"""Median inference latency of `.tflite` files, run as on a device (issue #10).

Issue #10 asks, per format and encoding, for the median batch-1 and batch-64 latency with 2
threads, measured in the same run as the plain twin. `measure` times several files in one
run, interleaved: for every batch size, each repetition invokes every file once in turn, so
that a slow-down of the machine (2 shared cores) hits plain and sparse alike and their ratio
stays meaningful. Files run through the one interpreter factory
(`interpreter.create_for_device`: XNNPACK, else the built-in kernels), and the runtime path
that was timed is returned with the numbers.

Only `invoke` is timed (the input is set before); the inputs are fixed pseudo-random pixels
(the sparse kernels' work does not depend on the data). The first `warmup` invocations per
file and batch size are not timed (XNNPACK packs weights at the first invoke).
"""

import time

import numpy as np

from eval import interpreter

DEFAULT_BATCH_SIZES = (1, 64)
DEFAULT_REPEATS = 30
DEFAULT_WARMUP = 3


class LatencyError(ValueError):
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
            warmup=DEFAULT_WARMUP, runtime="auto", seed=0):
  """Median latency of several files, measured interleaved in one run.

  Args:
    models: {name: path or bytes of a `.tflite` file} (e.g. a plain file and its sparse twin).
    batch_sizes: input batch sizes to time.
    num_threads: interpreter threads.
    repeats: timed invocations per file and batch size (>= 1).
    warmup: untimed invocations before (>= 0).
    runtime: "auto" (as on a device), "xnnpack" or "builtin".
    seed: seed of the input pixels.

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
  if not batch_sizes or any(not isinstance(b, int) or b < 1 for b in batch_sizes):
    raise LatencyError(f"batch sizes must be ints >= 1, got {batch_sizes!r}")
  results = {name: {} for name in models}
  for b in batch_sizes:
    prepared = {name: _prepare(model, b, num_threads, runtime, seed)
                for name, model in models.items()}
    for name, (_, used, reason) in prepared.items():
      results[name].setdefault("runtime", used)
      results[name].setdefault("fallback_reason", reason)
    times = {name: [] for name in models}
    for r in range(warmup + repeats):
      for name, (interp, _, _) in prepared.items():
        start = time.perf_counter()
        interp.invoke()
        elapsed = time.perf_counter() - start
        if r >= warmup:
          times[name].append(elapsed)
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
