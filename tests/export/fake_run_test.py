"""The test helper `fake_run.prune` leaves the model it prunes untouched.

`fake_run.trained_exports()` is built once per process and shared by the test files of a suite
(tools/pytest.bzl: py_pytest_suite), so a helper that trained the shared model's own layers
would change what every later file sees.
"""

import numpy as np

from tests.export import fake_run


def test_prune_trains_copies_of_the_layers():
  dataset = fake_run.SyntheticDataset()
  model = fake_run.tiny_cnn(0)
  before = [w.copy() for w in model.get_weights()]
  pruned = fake_run.prune(model, dataset, 0.75)
  for b, a in zip(before, model.get_weights()):
    np.testing.assert_array_equal(a, b)
  zeros, count = fake_run.kernel_zeros(pruned)
  assert zeros >= 0.7 * count
