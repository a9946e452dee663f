r"""Pruned vs dense training step time on the same model, measured in one run.

  PYTHONPATH=. .venv/bin/python benchmarks/pruning_step_bench.py [--model=cifar_resnet20]

Configurations, interleaved round-robin so machine noise hits all of them alike:
  dense        the plain model;
  tfmot        `prune_low_magnitude(model)` out of the box: every layer tfmot supports is wrapped
               (ReLU, Add, BatchNorm, pooling, ... each get a step counter, an assertion and a
               conditional mask update on every step);
  tf_forget    `tf_forget.train.pruning.wrap`: only conv / dense layers are wrapped (tfmot's
               `PruningPolicy` hook). Same masks at the same steps (tests/train/pruning_test.py).
Prints img/s per configuration and the ratios of step time to dense (median over rounds).
"""

import statistics
import time

from absl import app
from absl import flags

from tf_forget.compat import cpu_kernels
from tf_forget.compat import keras2

_MODEL = flags.DEFINE_string("model", "cifar_resnet20", "Model registry name.")
_BATCH = flags.DEFINE_integer("batch_size", 128, "Batch size.")
_STEPS = flags.DEFINE_integer("steps", 40, "Timed steps per round.")
_ROUNDS = flags.DEFINE_integer("rounds", 3, "Round-robin rounds.")
_THREADS = flags.DEFINE_integer("threads", 0, "TF intra/inter-op threads (0: TF default).")


def main(argv):
  del argv
  keras2.enable()
  cpu_kernels.configure()
  import numpy as np
  import tensorflow as tf

  from tf_forget.models import model_registry
  from tf_forget.train import pruning

  keras = keras2.keras()
  if _THREADS.value:
    tf.config.threading.set_intra_op_parallelism_threads(_THREADS.value)
    tf.config.threading.set_inter_op_parallelism_threads(_THREADS.value)
  rng = np.random.default_rng(0)
  shape, classes, b = (32, 32, 3), 10, _BATCH.value
  x = rng.uniform(0, 255, (b * 8,) + shape).astype(np.float32)
  y = rng.integers(0, classes, b * 8)
  data = tf.data.Dataset.from_tensor_slices((x, y)).batch(b).repeat().prefetch(4)

  def build(kind):
    keras.utils.set_random_seed(0)
    model = model_registry.get(_MODEL.value, shape, classes, weight_decay=5e-4)
    if kind != "dense":
      model = pruning.wrap(
        model, 0.9, begin_step=0, end_step=100_000, frequency=500, wrap_all_layers=(kind == "tfmot")
      )
    model.compile(
      optimizer=keras.optimizers.SGD(0.1, momentum=0.9, nesterov=True),
      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    cbs = pruning.callbacks() if kind != "dense" else []
    model.fit(data, steps_per_epoch=5, epochs=1, verbose=0, callbacks=cbs)  # trace + warm up
    return model, cbs

  kinds = ("dense", "tfmot", "tf_forget")
  built = {k: build(k) for k in kinds}
  wrapped = {k: len(pruning.wrappers(built[k][0])) for k in kinds}
  times = {k: [] for k in kinds}
  for _ in range(_ROUNDS.value):
    for kind in kinds:
      model, cbs = built[kind]
      t0 = time.perf_counter()
      model.fit(data, steps_per_epoch=_STEPS.value, epochs=1, verbose=0, callbacks=cbs)
      times[kind].append((time.perf_counter() - t0) / _STEPS.value)
  dense = statistics.median(times["dense"])
  print(f"model {_MODEL.value}, batch {b}, {_STEPS.value} steps x {_ROUNDS.value} rounds")
  print(f"{'config':<10} {'wrappers':>8} {'img/s':>8} {'step ms':>8} {'vs dense':>9}")
  for kind in kinds:
    step = statistics.median(times[kind])
    print(
      f"{kind:<10} {wrapped[kind]:>8} {b / step:>8.0f} {1000 * step:>8.1f} {step / dense:>8.2f}x"
    )


if __name__ == "__main__":
  app.run(main)
