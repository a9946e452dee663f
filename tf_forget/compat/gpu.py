"""GPU set-up: memory growth on every visible GPU, and a one-line description for metadata.

TensorFlow maps almost all of a GPU's memory when it first initializes the device; with memory
growth it allocates as needed, so several processes (population members, the evaluator) can
share a GPU. Memory growth can only be set before the GPUs are initialized (the first op or
tensor placed on one): `configure()` is called at the top of `train.member.train_member`,
before any model is built; if the runtime is already initialized it leaves the setting as it
is. On a machine without GPUs (the CPU-only test suite) both functions do nothing but list the
(empty) physical GPU devices, which does not initialize any device.
"""

import tensorflow as tf


def _gpus():
  return tf.config.list_physical_devices("GPU")


def configure():
  """Enables memory growth on every visible GPU (no-op without GPUs).

  Returns:
    The names of the GPUs whose memory growth is on (empty on CPU-only machines).
  """
  configured = []
  for gpu in _gpus():
    try:
      tf.config.experimental.set_memory_growth(gpu, True)
    except (RuntimeError, ValueError):
      # Already initialized (growth can no longer change) or a virtual device configuration:
      # keep TensorFlow's setting.
      if not tf.config.experimental.get_memory_growth(gpu):
        continue
    configured.append(gpu.name)
  return configured


def describe():
  """The visible GPUs as one string ("none" without GPUs), e.g. for member metadata.

  Returns:
    "none", or "; "-joined "<device name> (<model>, compute <major.minor>)" entries.
  """
  gpus = _gpus()
  if not gpus:
    return "none"
  parts = []
  for gpu in gpus:
    try:
      details = tf.config.experimental.get_device_details(gpu)
    except (RuntimeError, ValueError):
      details = {}
    model = details.get("device_name", "unknown model")
    capability = details.get("compute_capability")
    extra = f", compute {capability[0]}.{capability[1]}" if capability else ""
    parts.append(f"{gpu.name} ({model}{extra})")
  return "; ".join(parts)
