"""tfds-backed data sets under tfds.testing.mock_data: nothing is downloaded."""

import numpy as np
import pytest
import tensorflow_datasets as tfds

from tf_forget.data import base
from tf_forget.data import registry
from tf_forget.data import tfds_sets


@pytest.mark.parametrize("name, shape, classes", [
    ("cifar10", (32, 32, 3), 10),
    ("cifar100", (32, 32, 3), 100),
    ("mnist", (28, 28, 1), 10),
    ("fashion_mnist", (28, 28, 1), 10),
])
def test_image_sets_yield_uint8_labels_and_position_ids(name, shape, classes):
  with tfds.testing.mock_data(num_examples=9):
    data = registry.get(name)
    assert data.spec.num_classes == classes and data.spec.image_shape == shape
    parts = list(data.batches("test", 4))
    assert [len(p) for p in parts] == [4, 4, 1]
    whole = data.load("test")
    assert whole.images.dtype == np.uint8 and whole.images.shape == (9,) + shape
    np.testing.assert_array_equal(whole.ids, np.arange(9))
    assert whole.labels.min() >= 0 and whole.labels.max() < classes
    # Fixed order: reading twice gives the same examples.
    np.testing.assert_array_equal(whole.images, data.load("test").images)


def test_celeb_a_target_attributes_and_resize():
  with tfds.testing.mock_data(num_examples=6):
    data = registry.get("celeb_a", image_size=(64, 52))
    assert data.spec.splits == ("train", "validation", "test")
    assert data.spec.protected_attributes == ("Male", "Young")
    assert len(data.spec.attribute_names) == 40
    test = data.load("test")
    assert test.images.shape == (6, 64, 52, 3)
    assert set(test.attributes) == set(tfds_sets.CELEB_A_ATTRIBUTES)
    # The target is the Blond_Hair attribute (SPEC §2.4).
    np.testing.assert_array_equal(test.labels, test.attributes["Blond_Hair"].astype(np.int64))
    native = registry.get("celeb_a")
    assert native.spec.image_shape == (218, 178, 3)
    assert native.load("validation").images.shape[1:] == (218, 178, 3)


def test_imagenet_needs_manual_dir_to_download():
  with pytest.raises(base.DataError, match="needs manual_dir"):
    registry.get("imagenet2012", download=True, manual_dir="/nonexistent")


def test_imagenet_mock_is_cropped_and_resized():
  with tfds.testing.mock_data(num_examples=3):
    data = registry.get("imagenet2012", image_size=64)
    batch = data.load("validation")
    assert batch.images.shape == (3, 64, 64, 3)
    assert data.spec.eval_split == "validation"


def test_unprepared_data_is_a_one_line_error(tmp_path):
  data = registry.get("cifar10", data_dir=str(tmp_path))
  with pytest.raises(base.DataError, match="not prepared") as info:
    data.load("test")
  assert "\n" not in str(info.value)
