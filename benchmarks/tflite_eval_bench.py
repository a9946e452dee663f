"""Benchmark: TFLite evaluation throughput on a CIFAR-sized ResNet-20.

Measures in one run, on the same `.tflite` file and the same images:
  (a) a naive per-example loop: batch-1 interpreter, set_tensor / invoke / get_tensor per image;
  (b) the raw batched interpreter: input resized to B once, float32 batches prepared before the
      clock starts, set_tensor / invoke / get_tensor only (no bookkeeping, N a multiple of B);
  (c) the evaluator end to end (`tf_forget.evaluate.evaluate.evaluate_file`): uint8 `Examples`
      stream -> re-cut to B -> cast / quantize -> invoke -> dequantize -> top-k -> predictions file;
  (c') the evaluator with `tail="pad"` instead of the default `tail="resize"`;
  (r) what one re-allocation costs: `resize_tensor_input` + `allocate_tensors` to B - 1 and
      back, each followed by an invoke, minus two plain invokes at B, halved, best of 10 (this
      includes XNNPACK's re-preparation on the first invoke after a resize).
Reports img/s (median over `--repeats` rounds; each round runs a, b, c, c' once, interleaved, so
that load from other processes on a shared machine hits all of them alike) and the ratios c/b
and c/a (goal: c >= 0.8 b, c >= 1.4 a with 2 threads; reference on this machine
a ≈ 3.2k img/s, b ≈ 4.8k img/s).

    python benchmarks/tflite_eval_bench.py --num_threads=2 --batch_size=256
"""

import json
import os
import shutil
import statistics
import sys
import tempfile
import time

from absl import app
from absl import flags

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tf_forget.compat import cpu_kernels
from tf_forget.compat import keras2

_NUM_THREADS = flags.DEFINE_integer("num_threads", 2, "Interpreter threads.", lower_bound=1)
_BATCH_SIZE = flags.DEFINE_integer("batch_size", 256, "Batch size B.", lower_bound=1)
_NUM_IMAGES = flags.DEFINE_integer("num_images", 3000, "Images per measurement (N).", lower_bound=1)
_REPEATS = flags.DEFINE_integer(
  "repeats", 5, "Interleaved rounds (median per method).", lower_bound=1
)
_FORMAT = flags.DEFINE_string("format", "float32", "TFLite format of the model.")
_MODEL = flags.DEFINE_string("model", "cifar_resnet20", "Model registry name.")
_OUTPUT = flags.DEFINE_string("output", None, "Optional JSON file for the results.")


def _min_seconds(fn, repeats):
  best = float("inf")
  for _ in range(repeats):
    start = time.perf_counter()
    fn()
    best = min(best, time.perf_counter() - start)
  return best


def _interleaved_rates(jobs, repeats):
  """{name: n / median seconds} for jobs {name: (fn, n)}, run round-robin `repeats` times."""
  times = {name: [] for name in jobs}
  for _ in range(repeats):
    for name, (fn, _) in jobs.items():
      start = time.perf_counter()
      fn()
      times[name].append(time.perf_counter() - start)
  return {name: n / statistics.median(times[name]) for name, (_, n) in jobs.items()}


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
  keras2.enable()
  cpu_kernels.configure()
  import numpy as np

  from tf_forget.data import dataset_api
  from tf_forget.evaluate import batched
  from tf_forget.evaluate import evaluate
  from tf_forget.evaluate import interpreter
  from tf_forget.export import converter
  from tf_forget.models import model_registry

  shape, classes, n, b = (32, 32, 3), 10, _NUM_IMAGES.value, _BATCH_SIZE.value
  keras2.keras().utils.set_random_seed(0)
  model = model_registry.get(_MODEL.value, shape, classes)
  rng = np.random.default_rng(0)
  images = rng.integers(0, 256, (n, *shape), dtype=np.uint8)  # CIFAR-shaped uint8 pixels
  data = converter.convert(model, _FORMAT.value, images[:100])
  threads = _NUM_THREADS.value

  # (a) naive per-example loop.
  naive = interpreter.create(data, threads)
  n_in, n_out = naive.get_input_details()[0], naive.get_output_details()[0]
  quant = interpreter.InputQuantizer(n_in)

  def run_naive():
    for i in range(n):
      naive.set_tensor(n_in["index"], quant(images[i : i + 1]))
      naive.invoke()
      naive.get_tensor(n_out["index"])

  # (b) raw batched interpreter, inputs prepared outside the clock.
  raw = interpreter.create(data, threads, batch_size=b)
  r_in, r_out = raw.get_input_details()[0]["index"], raw.get_output_details()[0]["index"]
  full = (n // b) * b
  prepared = [quant(images[s : s + b]) for s in range(0, full, b)]

  def run_raw():
    for x in prepared:
      raw.set_tensor(r_in, x)
      raw.invoke()
      raw.get_tensor(r_out)

  # (c) the evaluator end to end (a fresh predictions file each time).
  examples = dataset_api.Examples(
    images=images, labels=rng.integers(0, classes, n), ids=np.arange(n, dtype=np.int64)
  )
  tmp = tempfile.mkdtemp(prefix="tflite_eval_bench_")
  model_path = os.path.join(tmp, "model.tflite")
  with open(model_path, "wb") as f:
    f.write(data)
  counter = [0]

  def evaluator(tail):
    def run_evaluator():
      counter[0] += 1
      evaluate.evaluate_file(
        model_path,
        lambda: (examples.take(slice(s, s + 1000)) for s in range(0, n, 1000)),
        os.path.join(tmp, f"p{counter[0]}.npz"),
        "bench",
        batch_size=b,
        num_threads=threads,
        overwrite=True,
        tail=tail,
      )

    return run_evaluator

  # (r) cost of one re-allocation (resize + allocate + re-prepare on the next invoke).
  realloc = interpreter.create(data, threads, batch_size=b)
  ri = realloc.get_input_details()[0]["index"]
  full_batch = prepared[0] if prepared else quant(images[:b])

  def invoke_twice():
    for _ in range(2):
      realloc.set_tensor(ri, full_batch)
      realloc.invoke()

  def reallocate_twice():
    for size in (b - 1, b):
      realloc.resize_tensor_input(ri, [size, *shape])
      realloc.allocate_tensors()
      realloc.set_tensor(ri, full_batch[:size])
      realloc.invoke()

  for fn in (run_raw, reallocate_twice):  # warm up
    fn()
  runner = batched.BatchedRunner(data, b, threads)
  runner.run(images[:b])
  naive.set_tensor(n_in["index"], quant(images[:1]))
  naive.invoke()

  results = _interleaved_rates(
    {
      "a_naive_img_s": (run_naive, n),
      "b_raw_batched_img_s": (run_raw, full),
      "c_evaluator_img_s": (evaluator("resize"), n),
      "c_evaluator_pad_img_s": (evaluator("pad"), n),
    },
    _REPEATS.value,
  )
  # Best of 10 (a difference of two noisy timings): the cost without other processes' noise.
  results["realloc_ms"] = 500 * (
    _min_seconds(reallocate_twice, 10) - _min_seconds(invoke_twice, 10)
  )
  results["batch_ms"] = 1000 * b / results["b_raw_batched_img_s"]
  results["c_over_b"] = results["c_evaluator_img_s"] / results["b_raw_batched_img_s"]
  results["c_over_a"] = results["c_evaluator_img_s"] / results["a_naive_img_s"]
  results.update(
    model=_MODEL.value,
    format=_FORMAT.value,
    num_threads=threads,
    batch_size=b,
    num_images=n,
    repeats=_REPEATS.value,
    tflite_bytes=len(data),
  )
  print(json.dumps(results, indent=2))
  print(f"(a) naive per-example : {results['a_naive_img_s']:8.0f} img/s")
  print(f"(b) raw batched       : {results['b_raw_batched_img_s']:8.0f} img/s")
  print(
    f"(c) evaluator         : {results['c_evaluator_img_s']:8.0f} img/s   "
    f"c/b = {results['c_over_b']:.2f} (goal >= 0.8), c/a = {results['c_over_a']:.2f} "
    f"(goal >= 1.4)"
  )
  print(f"(c') evaluator, pad   : {results['c_evaluator_pad_img_s']:8.0f} img/s")
  print(
    f"one re-allocation (resize + allocate + re-prepare): {results['realloc_ms']:.1f} ms vs "
    f"{results['batch_ms']:.1f} ms per batch of {b}"
  )
  if _OUTPUT.value:
    with open(_OUTPUT.value, "w") as f:
      json.dump(results, f, indent=2)
  shutil.rmtree(tmp, ignore_errors=True)
  return 0


if __name__ == "__main__":
  app.run(main)
