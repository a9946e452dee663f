r"""Robust training's stream vs the plain training stream: images/s, same run (docs/spec.md §6.8).

  PYTHONPATH=. .venv/bin/python benchmarks/robust_stream_bench.py [--sizes=digits,32x32x3]

For each data set ("digits": the embedded 8x8x1 digits; "HxWxC": synthetic in-memory uint8 noise
images of that shape, e.g. 32x32x3 for CIFAR-10's size), builds `tf_forget.train.inputs.
train_stream` under the `digits` preset (batch 64, shift augmentation) twice: plain, and with
`train_corruptions` = docs/spec.md §6.8's nine options at severity 3 (`tf_forget.corruptions.
robust_training`; one `tf.numpy_function` per image in the parallel, deterministic map). After a
warm-up of `--warmup` batches, times `--batches` batches of each, interleaved round-robin over
`--rounds` rounds so machine noise hits both alike, and prints a markdown table of images/s
(median over rounds) and the robust / plain ratio. Nothing trains: this is the input pipeline's
ceiling, which `model.fit` overlaps with the training step (prefetch).
"""

import statistics
import time

from absl import app
from absl import flags
import numpy as np

_SIZES = flags.DEFINE_list(
  "sizes", ["digits", "32x32x3"], "Data sets: 'digits' or HxWxC synthetic images."
)
_BATCHES = flags.DEFINE_integer("batches", 40, "Timed batches per round.", lower_bound=1)
_WARMUP = flags.DEFINE_integer("warmup", 5, "Untimed batches first.", lower_bound=0)
_ROUNDS = flags.DEFINE_integer("rounds", 3, "Round-robin rounds.", lower_bound=1)
_SYNTHETIC_EXAMPLES = 2048


def _synthetic(text):
  """An in-memory data set of `_SYNTHETIC_EXAMPLES` uint8 noise images of shape HxWxC."""
  from tf_forget.data import dataset_api
  from tf_forget.data import digits

  try:
    shape = tuple(int(v) for v in text.lower().split("x"))
    if len(shape) != 3 or shape[2] not in (1, 3) or min(shape) < 1:
      raise ValueError(text)
  except ValueError as e:
    raise app.UsageError(f"--sizes entries are 'digits' or HxWxC (C 1 or 3), got {text!r}") from e
  rng = np.random.default_rng(0)
  n = _SYNTHETIC_EXAMPLES
  examples = dataset_api.Examples(
    images=rng.integers(0, 256, (n,) + shape, dtype=np.uint8),
    labels=rng.integers(0, 10, n).astype(np.int64),
    ids=np.arange(n, dtype=np.int64),
    attributes={},
  )
  spec = dataset_api.DatasetSpec(
    name=f"synthetic_{text}",
    num_classes=10,
    image_shape=shape,
    splits=("train",),
    eval_split="train",
  )
  return digits.InMemoryDataset(spec, {"train": examples})


def _images_per_second(iterator, batches, batch_size):
  start = time.perf_counter()
  for _ in range(batches):
    next(iterator)
  return batches * batch_size / (time.perf_counter() - start)


def bench(dataset, rounds, batches, warmup):
  """(plain images/s, robust images/s), medians over `rounds` interleaved rounds."""
  from tf_forget.corruptions import robust_training
  from tf_forget.train import inputs
  from tf_forget.train import presets

  configs = {
    "plain": presets.get("digits"),
    "robust": presets.get("digits", train_corruptions=robust_training.ROBUST_TRAIN_CORRUPTIONS),
  }
  iterators = {k: iter(inputs.train_stream(dataset, p, seed=0)) for k, p in configs.items()}
  rates = {k: [] for k in configs}
  try:
    for k, it in iterators.items():
      for _ in range(warmup):
        next(it)
    for _ in range(rounds):
      for k, it in iterators.items():
        rates[k].append(_images_per_second(it, batches, configs[k].batch_size))
  finally:
    # A tf.data iterator whose map calls Python must not outlive the interpreter.
    iterators.clear()
  return statistics.median(rates["plain"]), statistics.median(rates["robust"])


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
  from tf_forget.compat import cpu_kernels
  from tf_forget.compat import keras2

  keras2.enable()
  cpu_kernels.configure()
  from tf_forget.data import registry

  datasets = [registry.get("digits") if s == "digits" else _synthetic(s) for s in _SIZES.value]
  print("| data set | image | plain img/s | robust img/s | robust / plain |")
  print("|---|---|---:|---:|---:|")
  for dataset in datasets:
    plain, robust = bench(dataset, _ROUNDS.value, _BATCHES.value, _WARMUP.value)
    shape = "x".join(str(v) for v in dataset.spec.image_shape)
    print(
      f"| {dataset.spec.name} | {shape} | {plain:,.0f} | {robust:,.0f} | {robust / plain:.3f} |",
      flush=True,
    )


if __name__ == "__main__":
  app.run(main)
