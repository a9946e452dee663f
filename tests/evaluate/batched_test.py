"""Batched runner: the last partial batch, no re-allocation per batch, batch-size invariance."""

import numpy as np
import pytest

from tests.export import fake_run
from tf_forget.artifacts import names
from tf_forget.evaluate import batched
from tf_forget.evaluate import interpreter


@pytest.fixture(scope="module")
def exports():
  return fake_run.trained_exports()


@pytest.mark.parametrize("tail", batched.TAIL_POLICIES)
@pytest.mark.parametrize("fmt", list(names.FORMAT_NAMES))
def test_partial_last_batch_equals_one_at_a_time(exports, fmt, tail):
  # 150 test images at B = 64: two full batches and a last batch of 22 (padded to 64 or run
  # at 22). Every row must equal the batch-1 result (rows do not interact, also for the hybrid
  # int8 kernels).
  _, dataset, files = exports
  images = dataset.load("test").images
  big = batched.BatchedRunner(files[fmt], batch_size=64, tail=tail)
  one = batched.BatchedRunner(files[fmt], batch_size=1)
  padded = big.run_raw(images)
  single = one.run_raw(images)
  assert padded.shape == (150, fake_run.NUM_CLASSES)
  if fmt == "dynamic_int8":  # per-row activation quantization: equal up to float rounding
    np.testing.assert_allclose(padded, single, rtol=0, atol=1e-4)
  else:
    np.testing.assert_array_equal(padded, single)


def test_no_reallocation_per_batch(exports):
  _, dataset, files = exports
  images = dataset.load("test").images
  pad = batched.BatchedRunner(files["float32"], batch_size=32, tail="pad")
  pad.run(images[:70])  # 32 + 32 + 6
  pad.run(images[:5])
  assert pad.reallocations == 0
  resize = batched.BatchedRunner(files["float32"], batch_size=32, tail="resize")
  resize.run(images[:128])  # whole batches only
  assert resize.reallocations == 0
  resize.run(images[:70])  # one resize to 6 for the tail ...
  assert resize.reallocations == 1
  resize.run(images[:70])  # ... and back to 32 once, then 6 again
  assert resize.reallocations == 3


def test_empty_and_shape_mismatch(exports):
  runner = batched.BatchedRunner(exports[2]["float32"], batch_size=8)
  assert runner.run(np.zeros((0, 8, 8, 1), np.uint8)).shape == (0, fake_run.NUM_CLASSES)
  with pytest.raises(
    interpreter.TfliteError,
    match=r"model input shape \(8, 8, 1\) does not "
    r"match the data's image shape \(9, 9, 1\)",
  ):
    runner.run(np.zeros((3, 9, 9, 1), np.uint8))
  with pytest.raises(interpreter.TfliteError, match="batch_size"):
    batched.BatchedRunner(exports[2]["float32"], batch_size=0)
