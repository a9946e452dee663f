"""`tf_forget.data.train_view`: the user's `--train` data as the "train" split one-shot pruning
reads (issue #28).

Every file is written here, in a tmp dir. Expected values are computed here from the pixels
written: the model's input under `--preprocess=symmetric` is x / 127.5 − 1
(`tf_forget.data.preprocess`), labels index the audited data set's classes in its order.
"""

import os

import numpy as np
import pytest
import tensorflow as tf

from tf_forget.data import base
from tf_forget.data import registry
from tf_forget.data import train_view


def _write(root, files):
  """Writes {relative path: pixels uint8 [4, 4, 1]} as PNGs under `root`."""
  for rel, pixels in files.items():
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tf.io.write_file(path, tf.io.encode_png(pixels))


def _pixels(seed):
  return np.random.default_rng(seed).integers(0, 256, (4, 4, 1), dtype=np.uint8)


@pytest.fixture
def folders(tmp_path):
  """test/ with classes a, b, c; train/ (another folder) with images of c and a only."""
  test = {f"{c}/{i}.png": _pixels(10 * j + i) for j, c in enumerate("abc") for i in range(2)}
  train = {"c/0.png": _pixels(100), "c/1.png": _pixels(101), "a/0.png": _pixels(102)}
  _write(tmp_path / "test", test)
  _write(tmp_path / "train", train)
  return tmp_path, train


def _audited(root, **options):
  return registry.get("folder", path=str(root / "test"), train_data={
      "name": "folder", "options": {"path": str(root / "train")}}, **options)


def test_a_registered_data_set_is_read_as_it_is():
  digits = registry.get("digits")
  assert train_view.of(digits) is digits
  assert train_view.fingerprint(digits) is None
  assert train_view.fingerprint_of("digits", {}) is None


def test_train_is_the_train_data_labelled_in_the_audited_classes(folders):
  root, train = folders
  view = train_view.of(_audited(root))
  assert view.split == "test"  # a folder without train/: its only split
  assert view.spec.splits == ("train", "test") and view.spec.class_names == ("a", "b", "c")
  assert view.num_examples("train") == 3 and view.num_examples("test") == 6
  # Sorted paths a/0, c/0, c/1; a = 0, c = 2 in the audited order (train/ alone has no b).
  got = [(x.numpy(), int(y)) for x, y in view.tf_dataset("train")]
  assert [y for _, y in got] == [0, 2, 2]
  for (x, _), rel in zip(got, ["a/0.png", "c/0.png", "c/1.png"]):
    np.testing.assert_array_equal(x, train[rel])
  decoded = [view.decode_record(r) for r in view.train_records("train")]
  assert [int(y) for _, y in decoded] == [0, 2, 2]
  with pytest.raises(base.DataError, match="training records"):
    view.train_records("test")
  assert view.describe() == {"source": {"name": "folder", "options": {"path": str(root / "train")}},
                             "split": "test", "examples": 3}


def test_every_split_is_fed_as_the_model_takes_it(folders):
  root, train = folders
  view = train_view.of(_audited(root, preprocess="symmetric"))
  (image, label), *_ = list(view.tf_dataset("train"))
  assert image.dtype == tf.float32 and int(label) == 0
  np.testing.assert_allclose(image.numpy(), train["a/0.png"] / 127.5 - 1, rtol=1e-6)
  record = next(iter(view.train_records("train")))
  np.testing.assert_allclose(view.decode_record(record)[0].numpy(),
                             train["a/0.png"] / 127.5 - 1, rtol=1e-6)
  test_image, _ = next(iter(view.tf_dataset("test")))
  assert float(tf.reduce_max(test_image)) <= 1.0


def test_the_fingerprint_follows_the_files_not_their_pixels(folders):
  root, _ = folders
  before = train_view.fingerprint_of("folder", dict(_audited(root).spec.options))
  assert before == train_view.fingerprint(train_view.of(_audited(root)))
  _write(root / "train", {"c/0.png": _pixels(999)})  # pixels edited in place: not detected
  assert train_view.fingerprint_of("folder", dict(_audited(root).spec.options)) == before
  os.rename(root / "train" / "c" / "1.png", root / "train" / "a" / "1.png")  # another class
  assert train_view.fingerprint_of("folder", dict(_audited(root).spec.options)) != before


def test_train_data_of_a_class_the_model_does_not_have_is_refused(folders):
  root, _ = folders
  _write(root / "train", {"d/0.png": _pixels(7)})
  with pytest.raises(base.DataError, match="is not a class of class_names"):
    train_view.of(_audited(root))
