"""Test-suite set-up shared by pytest and the Bazel py_test wrapper (tools/pytest.bzl)."""

from tf_forget.compat import keras2

# Keras 2 must be selected before any test module imports TensorFlow (as the binaries do).
keras2.enable()

from absl import flags  # pylint: disable=g-import-not-at-top

# absl flags are parsed by app.run in binaries; tests that use flagsaver need them marked parsed.
if not flags.FLAGS.is_parsed():
  flags.FLAGS.mark_as_parsed()
