"""digits and digits_biased: real offline data, balanced seeded split, planted subgroup."""

import gzip
import sys

import numpy as np
import pytest

from tf_forget.data import dataset_api
from tf_forget.data import digits
from tf_forget.data import registry


def test_digits_split_is_balanced_stratified_and_disjoint():
  data = registry.get("digits")
  train, test = data.load("train"), data.load("test")
  assert len(train) + len(test) == 1797  # sklearn load_digits size
  np.testing.assert_array_equal(np.bincount(test.labels), [50] * 10)  # docs/spec.md §2.7
  assert not set(train.ids) & set(test.ids)
  assert train.images.dtype == np.uint8 and train.images.shape[1:] == (8, 8, 1)
  assert train.images.max() == 255 and train.images.min() == 0


def test_digits_ids_are_source_rows():
  from sklearn import datasets

  raw = datasets.load_digits()
  test = registry.get("digits").load("test")
  np.testing.assert_array_equal(test.labels, raw.target[test.ids])
  np.testing.assert_array_equal(
    test.images[..., 0], np.rint(raw.images[test.ids] * 255 / 16).astype(np.uint8)
  )


def _load_digits_source():
  """The source as scikit-learn's `load_digits` gives it, mapped to uint8 as docs say."""
  from sklearn import datasets

  raw = datasets.load_digits()
  return np.rint(raw.images * 255 / 16).astype(np.uint8)[..., None], raw.target


def test_the_shipped_file_is_read_without_importing_scikit_learn(monkeypatch):
  want_images, want_labels = _load_digits_source()
  assert digits.shipped_file() is not None
  for name in [m for m in sys.modules if m == "sklearn" or m.startswith("sklearn.")]:
    monkeypatch.delitem(sys.modules, name)
  monkeypatch.setitem(sys.modules, "sklearn", None)  # importing it now raises ImportError
  images, labels = digits.load_source()
  np.testing.assert_array_equal(images, want_images)
  np.testing.assert_array_equal(labels, want_labels)
  assert labels.dtype == np.int64


def test_without_the_file_load_digits_gives_the_same_source(monkeypatch):
  want_images, want_labels = _load_digits_source()
  monkeypatch.setattr(digits, "shipped_file", lambda: None)
  images, labels = digits.load_source()
  np.testing.assert_array_equal(images, want_images)
  np.testing.assert_array_equal(labels, want_labels)


def test_a_digits_file_of_other_columns_is_one_line(tmp_path):
  path = tmp_path / "digits.csv.gz"
  with gzip.open(path, "wt") as f:
    f.write("0,1,2\n3,4,5\n")
  with pytest.raises(dataset_api.DataError, match="has 3 columns, not 65"):
    digits.read_shipped(str(path))
  path.write_bytes(b"not gzip")
  with pytest.raises(dataset_api.DataError, match="cannot read scikit-learn's digits file"):
    digits.read_shipped(str(path))


def test_digits_split_is_seeded():
  a = registry.get("digits").load("test").ids
  b = registry.get("digits").load("test").ids
  c = registry.get("digits", split_seed=7).load("test").ids
  np.testing.assert_array_equal(a, b)
  assert not np.array_equal(a, c)


def test_batches_cover_split_in_order():
  data = registry.get("digits")
  parts = list(data.batches("test", 128))
  assert [len(p) for p in parts] == [128, 128, 128, 116]
  np.testing.assert_array_equal(np.concatenate([p.ids for p in parts]), data.load("test").ids)
  np.testing.assert_array_equal(data.take("train", 100).ids, data.load("train").ids[:100])


def test_digits_biased_plants_rare_subgroup():
  data = registry.get("digits_biased")
  train, test = data.load("train"), data.load("test")
  inv, pos = train.attributes["Inverted"], train.labels == 1
  # Positives are digits 0 and 1: about 20% of the train split.
  assert 0.18 < pos.mean() < 0.22
  # The planted intersection is exactly round(1% of train) = 13 examples.
  assert (inv & pos).sum() == round(0.01 * len(train))
  # Negatives are inverted about half of the time; the test split is balanced on Inverted.
  assert 0.4 < inv[~pos].mean() < 0.6
  assert (test.attributes["Inverted"] & (test.labels == 1)).sum() >= 30
  # Inverted images really are inverted: white background (corners are 255 or faint-inverted).
  corners = train.images[inv][:, 0, 0, 0]
  assert corners.min() >= 255 - 1
  faint = train.attributes["Faint"] & ~inv
  assert train.images[faint].max() <= round(255 * 0.55)


def test_digits_biased_attributes_are_deterministic():
  a = registry.get("digits_biased").load("train")
  b = registry.get("digits_biased").load("train")
  np.testing.assert_array_equal(a.images, b.images)
  np.testing.assert_array_equal(a.attributes["Inverted"], b.attributes["Inverted"])


@pytest.mark.parametrize(
  "name, options, message",
  [
    ("nope", {}, "unknown data set 'nope'"),
    ("digits", {"colour": 1}, "takes no option 'colour'"),
    ("digits_biased", {"rare_rate": 0.5}, "rare_rate must be in"),
  ],
)
def test_bad_names_and_options(name, options, message):
  with pytest.raises(dataset_api.DataError, match=message):
    registry.get(name, **options)


def test_unknown_split_and_attribute():
  data = registry.get("digits_biased")
  with pytest.raises(dataset_api.DataError, match="no split 'validation'"):
    data.load("validation")
  with pytest.raises(dataset_api.DataError, match="no attribute 'Male'"):
    data.check_attributes(["Male"])


@pytest.mark.parametrize("name", ["digits", "digits_biased"])
def test_annotation_batches_match_the_split_without_images(name):
  data = registry.get(name)
  whole = data.load("train")
  parts = list(data.annotation_batches("train", 500))
  assert [len(p) for p in parts] == [500, 500, 297]
  assert not any(hasattr(p, "images") for p in parts)
  np.testing.assert_array_equal(np.concatenate([p.ids for p in parts]), whole.ids)
  np.testing.assert_array_equal(np.concatenate([p.labels for p in parts]), whole.labels)
  for key, values in whole.attributes.items():
    np.testing.assert_array_equal(np.concatenate([p.attributes[key] for p in parts]), values)
  assert set(parts[0].attributes) == set(data.spec.attribute_names)
  assert data.num_examples("train") == 1297
