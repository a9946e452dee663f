"""tools/setup.sh picks the requirements TF_DEVICE selects (`--print-requirements`)."""

import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _print(device):
  env = dict(os.environ)
  env.pop("TF_DEVICE", None)
  if device is not None:
    env["TF_DEVICE"] = device
  return subprocess.run(
    ["bash", os.path.join(ROOT, "tools", "setup.sh"), "--print-requirements"],
    env=env,
    capture_output=True,
    text=True,
    timeout=60,
  )


def _requirements():
  with open(os.path.join(ROOT, "requirements.txt")) as f:
    return f.read()


@pytest.mark.parametrize("device", [None, "cpu"])
def test_cpu_is_requirements_txt(device):
  done = _print(device)
  assert done.returncode == 0, done.stderr
  assert done.stdout == _requirements()


def test_gpu_swaps_only_tensorflow_cpu_for_and_cuda():
  done = _print("gpu")
  assert done.returncode == 0, done.stderr
  cpu, gpu = _requirements().splitlines(), done.stdout.splitlines()
  assert len(cpu) == len(gpu)
  changed = [(a, b) for a, b in zip(cpu, gpu) if a != b]
  version = next(line for line in cpu if line.startswith("tensorflow-cpu==")).split("==")[1]
  assert changed == [(f"tensorflow-cpu=={version}", f"tensorflow[and-cuda]=={version}")]


def test_unknown_device_is_refused():
  done = _print("tpu")
  assert done.returncode == 2 and "TF_DEVICE must be cpu or gpu" in done.stderr
