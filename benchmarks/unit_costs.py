"""Measures the per-unit costs of the audit's stages on this machine (`tf_forget/pipeline/costs.py`
reads them).

For each paper model at its protocol's input shape (small_cnn 8x8x1 digits, lenet5 28x28x1 MNIST,
resnet18 218x178x3 CelebA native, wrn_28_10 32x32x3 CIFAR, resnet50 224x224x3 ImageNet):
  * seconds per training image: the real train step (tf_keras `train_on_batch` with the
    members' optimizer, loss and L2 weight decay; dense variant: the pruning wrapper's mask
    update is not included) at a small batch, after one warm-up step;
  * seconds per conversion of a trained-shape model to TFLite, float32 and full_int8
    (`tf_forget.export.converter.convert`; full_int8 calibrated on `--representative` random
    images); float16 / dynamic_int8 / sparse twins are not measured: `tf_forget/pipeline/costs.py`
    takes the float32 figure for them (their conversion does the same graph work);
  * seconds per TFLite inference per image, float32 and full_int8, through the project's LiteRT
    factory (`tf_forget.evaluate.interpreter.create`, XNNPACK, `--num_threads` threads) at a fixed
    batch;
  * seconds per corrupted image per resolution: `tf_forget.corruptions.corruption_registry.apply`,
    every corruption of the suite at severity 3 on a few random images, averaged over the suite.
Random weights and images: costs do not depend on the values (the int8 kernels neither).

    python benchmarks/unit_costs.py --output=tf_forget/pipeline/unit_costs/cpu_2core_avx512.json
    python benchmarks/unit_costs.py --models=lenet5 --merge   # one model into the existing file

Runs several minutes on 2 cores (resnet50's conversions take about a minute each).
"""

import datetime
import json
import os
import sys
import time

from absl import app
from absl import flags
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tf_forget.compat import cpu_kernels
from tf_forget.compat import keras2

SCHEMA = "tf_forget.unit_costs/1"
# model -> (input shape, classes, train batch, train steps, inference batch, inference invokes)
MODELS = {
  "small_cnn": ((8, 8, 1), 10, 32, 5, 64, 20),
  "lenet5": ((28, 28, 1), 10, 128, 5, 64, 20),
  "resnet18": ((218, 178, 3), 2, 8, 3, 8, 3),
  "wrn_28_10": ((32, 32, 3), 10, 8, 2, 16, 3),
  "resnet50": ((224, 224, 3), 1000, 4, 2, 8, 3),
}
CORRUPTION_SHAPES = {
  "8x8x1": (8, 8, 1, 16),
  "32x32x3": (32, 32, 3, 8),
  "218x178x3": (218, 178, 3, 2),
  "224x224x3": (224, 224, 3, 2),
}
MEASURED_FORMATS = ("float32", "full_int8")

_OUTPUT = flags.DEFINE_string(
  "output",
  "tf_forget/pipeline/unit_costs/cpu_2core_avx512.json",
  "Where to write the unit-cost JSON.",
)
_MODELS = flags.DEFINE_list("models", list(MODELS), "Models to measure.")
_MERGE = flags.DEFINE_bool(
  "merge",
  False,
  "Keep the other models (and the corruption costs) of an existing "
  "--output, measured on the same machine kind.",
)
_NUM_THREADS = flags.DEFINE_integer("num_threads", 2, "TFLite interpreter threads.", lower_bound=1)
_REPRESENTATIVE = flags.DEFINE_integer(
  "representative", 32, "Calibration images of full_int8 (the audit uses 100).", lower_bound=1
)


def _train_cost(model, shape, classes, batch, steps):
  """Seconds per training image: `steps` timed steps after one warm-up step."""
  keras = keras2.keras()
  model.compile(
    optimizer=keras.optimizers.SGD(0.01, momentum=0.9, nesterov=True),
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
  )
  rng = np.random.default_rng(0)
  x = rng.uniform(0, 255, (batch, *shape)).astype(np.float32)
  y = rng.integers(0, classes, batch)
  model.train_on_batch(x, y)
  start = time.perf_counter()
  for _ in range(steps):
    model.train_on_batch(x, y)
  return (time.perf_counter() - start) / (steps * batch)


def _inference_cost(tflite_bytes, shape, batch, invokes, threads):
  """Seconds per image of `invoke` at `batch` (after one warm-up invoke), input prepared."""
  from tf_forget.evaluate import interpreter

  interp = interpreter.create(tflite_bytes, num_threads=threads, batch_size=batch)
  detail = interp.get_input_details()[0]
  images = np.random.default_rng(1).integers(0, 256, (batch, *shape), dtype=np.uint8)
  interp.set_tensor(detail["index"], interpreter.InputQuantizer(detail)(images))
  interp.invoke()
  start = time.perf_counter()
  for _ in range(invokes):
    interp.set_tensor(detail["index"], interpreter.InputQuantizer(detail)(images))
    interp.invoke()
  return (time.perf_counter() - start) / (invokes * batch)


def measure_model(name, log):
  """The unit costs of one model (dict)."""
  from tf_forget.export import converter
  from tf_forget.models import model_registry

  shape, classes, batch, steps, infer_batch, invokes = MODELS[name]
  model = model_registry.get(name, input_shape=shape, num_classes=classes, weight_decay=1e-4)
  out = {
    "image_shape": list(shape),
    "num_classes": classes,
    "parameters": model.count_params(),
    "train_batch": batch,
    "train_steps": steps,
  }
  out["train_seconds_per_image"] = _train_cost(model, shape, classes, batch, steps)
  log(f"{name}: train {out['train_seconds_per_image'] * 1e3:.2f} ms/img")
  rep = np.random.default_rng(2).integers(0, 256, (_REPRESENTATIVE.value, *shape), dtype=np.uint8)
  out["convert_seconds"], out["infer_seconds_per_image"] = {}, {}
  for fmt in MEASURED_FORMATS:
    start = time.perf_counter()
    data = converter.convert(model, fmt, rep)
    out["convert_seconds"][fmt] = time.perf_counter() - start
    out["infer_seconds_per_image"][fmt] = _inference_cost(
      data, shape, infer_batch, invokes, _NUM_THREADS.value
    )
    log(
      f"{name}: {fmt} convert {out['convert_seconds'][fmt]:.1f} s, infer "
      f"{out['infer_seconds_per_image'][fmt] * 1e3:.3f} ms/img"
    )
  out.update(
    infer_batch=infer_batch, infer_invokes=invokes, representative_images=_REPRESENTATIVE.value
  )
  return out


def measure_corruptions(log):
  """{"HxWxC": seconds per corrupted image, averaged over the suite at severity 3}."""
  from tf_forget.corruptions import corruption_registry

  out = {}
  for key, (h, w, c, n) in CORRUPTION_SHAPES.items():
    images = np.random.default_rng(3).integers(0, 256, (n, h, w, c), dtype=np.uint8)
    seeds = np.arange(n, dtype=np.uint32)
    per_image = []
    for name in corruption_registry.CORRUPTIONS:
      corruption_registry.apply(name, images[:1], 3, seeds[:1])  # warm-up (numba, tables)
      start = time.perf_counter()
      corruption_registry.apply(name, images, 3, seeds)
      per_image.append((time.perf_counter() - start) / n)
    out[key] = float(np.mean(per_image))
    log(f"corruptions {key}: {out[key] * 1e3:.2f} ms/img (suite mean)")
  return out


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
  keras2.enable()
  cpu_kernels.configure()
  from tf_forget.export import converter

  log = lambda line: print(line, flush=True)
  result = {
    "schema": SCHEMA,
    "hardware": "cpu",
    "machine": cpu_kernels.describe(),
    "versions": converter.versions(),
    "num_threads": _NUM_THREADS.value,
    "date": datetime.date.today().isoformat(),
    "how": (
      "benchmarks/unit_costs.py: train = tf_keras train_on_batch (SGD Nesterov, "
      "sparse CE, L2 1e-4), dense model, random data, after one warm-up step; "
      "convert = tf_forget.export.converter.convert of a random-weight model; infer = "
      "tf_forget.evaluate.interpreter.create (XNNPACK) invoke at a fixed batch incl. input "
      "quantization, after one warm-up invoke; corruptions = registry.apply, suite "
      "mean at severity 3. Unmeasured formats (float16, dynamic_int8) and sparse "
      "twins are costed as float32 by tf_forget/pipeline/costs.py."
    ),
    "models": {},
  }
  if _MERGE.value and os.path.exists(_OUTPUT.value):
    with open(_OUTPUT.value) as f:
      old = json.load(f)
    result["models"] = dict(old["models"])
    result["corruption_seconds_per_image"] = old["corruption_seconds_per_image"]
  else:
    result["corruption_seconds_per_image"] = measure_corruptions(log)
  for name in _MODELS.value:
    result["models"][name] = measure_model(name, log)
    os.makedirs(os.path.dirname(os.path.abspath(_OUTPUT.value)), exist_ok=True)
    with open(_OUTPUT.value, "w") as f:  # after every model: a partial run still helps
      json.dump(result, f, indent=1, sort_keys=True)
      f.write("\n")
  log(f"wrote {_OUTPUT.value}")


if __name__ == "__main__":
  app.run(main)
