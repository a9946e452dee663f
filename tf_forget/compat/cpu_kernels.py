"""The CPU-kernel switch: the one module that knows TF's CPU float kernels depend on the machine.

TensorFlow's CPU kernels give different floating-point results on different machines, and
magnitude pruning turns a 1-ulp weight difference into a different mask, so a population trained
on two machines differs (digits prune_0.9 top-1 measured 0.923-0.945 over seven settings). Two
things decide the kernels:

* oneDNN (`TF_ENABLE_ONEDNN_OPTS`, read when TensorFlow loads): its kernels are JIT-compiled for
  the CPU's best instruction set (AVX2, AVX-512, AMX; `ONEDNN_MAX_CPU_ISA` caps it), so results
  change with the CPU. With oneDNN off, TensorFlow uses its Eigen kernels, which the x86-64
  wheel compiles once for AVX (TensorFlow's start-up line "To enable the following instructions:
  AVX2 ... FMA, in other operations, rebuild" says so): the same code on every x86-64 CPU.
* The intra-op thread count (`TF_NUM_INTRAOP_THREADS`, read when the runtime starts): Eigen
  splits reductions by thread, so 1 and 2 threads give different sums. The number of cores the
  process may use does not matter once the count is fixed.

* The inter-op thread count (`TF_NUM_INTEROP_THREADS`) only decides which independent ops run
  side by side; each op's result is the same (op determinism). Measured (digits
  prune_0.9, 600 steps): 1 and 2 inter-op threads give bit-identical weights; with 1, two
  members trained at once in two worker processes take 19.7 s instead of 25.9 s (alone: 14.9 s
  vs 14.1 s), so the default is 1 — the executor runs several processes per machine.

`configure()` therefore chooses, unless the user's environment already chose: oneDNN off, 2
intra-op threads and 1 inter-op thread. Measured on digits (small CNN, prune_0.9, 300 steps, one
member): with these defaults the weights are bit-identical whether the process may use 1 or 2
cores; with oneDNN on they change with the ISA cap and the core count; a 2-thread Eigen run is
as fast as oneDNN on this model. What "same seed, same result" promises (docs/testing.md): on one
machine and stack, always; across x86-64 machines with these defaults, training is expected to
be identical (the same compiled kernels, the same thread split) but that cannot be proven on
one machine; every stage after training (TFLite export, evaluation, statistics, report) is
pinned exactly by the committed-fixture golden tests. `describe()` records the CPU, its ISA
and these settings in every member's metadata, so two runs can be compared.

Binaries call `configure()` first thing in `main`, next to `keras2.enable()`; so does the test
suite's conftest. Importing this module has no side effect.
"""

import os
import platform
import sys

# TensorFlow's own environment variables, and the portable defaults chosen for them.
DEFAULTS = {
  "TF_ENABLE_ONEDNN_OPTS": "0",
  "TF_NUM_INTRAOP_THREADS": "2",
  "TF_NUM_INTEROP_THREADS": "1",
}
# Also recorded (they change oneDNN's kernels when oneDNN is on).
RECORDED = ("ONEDNN_MAX_CPU_ISA",)
# The instruction-set extensions that select kernels on x86-64 (from /proc/cpuinfo flags).
ISA_FLAGS = ("avx", "avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "amx_tile")


def configure():
  """Chooses portable CPU kernels for this process, keeping any value the user set.

  Returns:
    {variable: value} in force afterwards.

  Raises:
    RuntimeError: if TensorFlow was already imported before a default could be set.
  """
  # Empty counts as unset (Bazel's `--test_env=NAME` may pass an unset variable as "").
  missing = [name for name in DEFAULTS if not os.environ.get(name)]
  if missing and "tensorflow" in sys.modules:
    raise RuntimeError(
      f"{', '.join(missing)} must be set before TensorFlow is imported; call "
      "tf_forget.compat.cpu_kernels.configure() before importing TensorFlow-using modules"
    )
  for name in missing:
    os.environ[name] = DEFAULTS[name]
  return settings()


def settings():
  """{variable: value or None} of the CPU-kernel environment of this process."""
  return {name: os.environ.get(name) for name in tuple(DEFAULTS) + RECORDED}


def _cpuinfo():
  """(model name, set of flags) from /proc/cpuinfo; ("", set()) where there is none."""
  model, flags = "", set()
  try:
    with open("/proc/cpuinfo") as f:
      for line in f:
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "model name" and not model:
          model = value.strip()
        elif key in ("flags", "Features") and not flags:
          flags = set(value.split())
  except OSError:
    pass
  return model, flags


def describe():
  """The machine facts that decide CPU float results (recorded in member metadata).

  Returns:
    {"cpu": model name, "machine": e.g. "x86_64", "isa": [ISA flags present], "cores":
     usable cores, "settings": `settings()`}.
  """
  model, flags = _cpuinfo()
  try:
    cores = len(os.sched_getaffinity(0))
  except AttributeError:  # not Linux
    cores = os.cpu_count()
  return {
    "cpu": model or platform.processor(),
    "machine": platform.machine(),
    "isa": [f for f in ISA_FLAGS if f in flags],
    "cores": cores,
    "settings": settings(),
  }
