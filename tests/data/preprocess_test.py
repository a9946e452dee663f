"""The user's `--preprocess` transforms against Keras' own `preprocess_input`.

Keras' applications implement the three ImageNet conventions ("tf", "caffe", "torch"); each
named transform must give what they give on the same uint8 batch.
"""

import numpy as np
import pytest

from tf_forget.compat import keras2
from tf_forget.data import dataset_api
from tf_forget.data import preprocess

BATCH = np.random.default_rng(0).integers(0, 256, size=(4, 5, 6, 3), dtype=np.uint8)


def _keras(module):
  return getattr(keras2.keras().applications, module).preprocess_input


@pytest.mark.parametrize(
  "name, module",
  [("symmetric", "mobilenet_v2"), ("imagenet_caffe", "resnet50"), ("imagenet_torch", "densenet")],
)
def test_named_transforms_match_keras(name, module):
  want = _keras(module)(BATCH.astype(np.float32))
  got = preprocess.resolve(name)(BATCH)
  assert got.dtype == np.float32
  np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-5)


def test_unit_and_a_user_function(tmp_path, monkeypatch):
  np.testing.assert_allclose(preprocess.resolve("unit")(BATCH), BATCH / 255.0, rtol=1e-6)
  (tmp_path / "user_prep.py").write_text("import numpy as np\ndef root(x):\n  return np.sqrt(x)\n")
  monkeypatch.syspath_prepend(str(tmp_path))
  fn = preprocess.resolve("user_prep:root")  # an importable MODULE:FUNCTION, given the uint8 batch
  np.testing.assert_array_equal(fn(BATCH), np.sqrt(BATCH).astype(np.float32))


@pytest.mark.parametrize(
  "name, message",
  [
    ("os:system", "is a builtin_function_or_method, not a Python function"),
    ("numpy:sqrt", "is a ufunc, not a Python function"),
    ("shutil:rmtree", "function of Python's standard library"),
  ],
)
def test_what_is_not_a_users_python_function_is_refused_before_it_is_called(name, message):
  with pytest.raises(dataset_api.DataError, match=message):
    preprocess.resolve(name)


@pytest.mark.parametrize(
  "name, message",
  [
    ("nope", "unknown preprocess 'nope'"),
    ("numpy:no_such", "cannot be imported"),
    ("nosuchmodule:f", "cannot be imported"),
  ],
)
def test_bad_names_are_one_line(name, message):
  with pytest.raises(dataset_api.DataError, match=message):
    preprocess.resolve(name)


def test_rgb_conventions_refuse_grey_images():
  with pytest.raises(dataset_api.DataError, match="needs RGB images"):
    preprocess.resolve("imagenet_caffe")(BATCH[..., :1])
