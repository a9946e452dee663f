"""compat.gpu: memory growth on every GPU, a no-op on CPU, descriptions."""

import collections

import tensorflow as tf

from tf_forget.compat import gpu

_Device = collections.namedtuple("_Device", "name device_type")


def test_cpu_machine_is_a_no_op():
  assert tf.config.list_physical_devices("GPU") == []  # the test suite runs on CPU
  assert gpu.configure() == []
  assert gpu.describe() == "none"
  assert tf.config.list_physical_devices("CPU")  # nothing hid the CPU


def test_memory_growth_on_every_gpu(monkeypatch):
  devices = [_Device("/physical_device:GPU:0", "GPU"), _Device("/physical_device:GPU:1", "GPU")]
  growth = {}
  monkeypatch.setattr(gpu, "_gpus", lambda: devices)
  monkeypatch.setattr(
    tf.config.experimental,
    "set_memory_growth",
    lambda device, on: growth.__setitem__(device.name, on),
  )
  assert gpu.configure() == [d.name for d in devices]
  assert growth == {d.name: True for d in devices}


def test_already_initialized_gpu_keeps_its_setting(monkeypatch):
  devices = [_Device("/physical_device:GPU:0", "GPU")]

  def refuse(device, on):
    raise RuntimeError("Physical devices cannot be modified after being initialized")

  monkeypatch.setattr(gpu, "_gpus", lambda: devices)
  monkeypatch.setattr(tf.config.experimental, "set_memory_growth", refuse)
  monkeypatch.setattr(tf.config.experimental, "get_memory_growth", lambda device: False)
  assert gpu.configure() == []


def test_describe_names_the_gpus(monkeypatch):
  devices = [_Device("/physical_device:GPU:0", "GPU")]
  monkeypatch.setattr(gpu, "_gpus", lambda: devices)
  monkeypatch.setattr(
    tf.config.experimental,
    "get_device_details",
    lambda device: {"device_name": "NVIDIA A100", "compute_capability": (8, 0)},
  )
  assert gpu.describe() == "/physical_device:GPU:0 (NVIDIA A100, compute 8.0)"
