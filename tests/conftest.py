"""Test-suite set-up shared by pytest and the Bazel py_test wrapper (tools/pytest.bzl)."""

from tf_forget.compat import cpu_kernels
from tf_forget.compat import keras2

# Keras 2 and the portable CPU kernels must be selected before any test module imports
# TensorFlow (as the binaries do). A value set in the environment (e.g. TF_ENABLE_ONEDNN_OPTS=1
# to run the suite on oneDNN's kernels) is kept.
keras2.enable()
cpu_kernels.configure()

from absl import flags

# absl flags are parsed by app.run in binaries; tests that use flagsaver need them marked parsed.
if not flags.FLAGS.is_parsed():
  flags.FLAGS.mark_as_parsed()


def pytest_terminal_summary(terminalreporter):
  """Names the CPU kernels the suite ran on (tf_forget/compat/cpu_kernels.py) in every log."""
  terminalreporter.write_line(
    "cpu kernels: " + ", ".join(f"{k}={v}" for k, v in cpu_kernels.settings().items())
  )
