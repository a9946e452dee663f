"""Published suites through tfds loaders, under tfds.testing.mock_data: nothing is downloaded."""

import numpy as np
import pytest
import tensorflow_datasets as tfds

from tf_forget.corruptions import tfds_suites
from tf_forget.data import dataset_api


def test_cifar10_corrupted_splits_are_corruption_at_severity():
  data = tfds_suites.Cifar10Corrupted()
  assert len(data.spec.splits) == 95 and "glass_blur@3" in data.spec.splits
  assert data._builder_name("glass_blur@3") == "cifar10_corrupted/frosted_glass_blur_3"
  assert data._builder_name("elastic_transform@5") == "cifar10_corrupted/elastic_5"
  assert data._builder_name("fog@1") == "cifar10_corrupted/fog_1"
  with tfds.testing.mock_data(num_examples=5):
    batch = data.load("glass_blur@3")
  assert batch.images.shape == (5, 32, 32, 3) and batch.images.dtype == np.uint8
  np.testing.assert_array_equal(batch.ids, np.arange(5))
  assert batch.labels.dtype == np.int64 and batch.labels.max() < 10
  with pytest.raises(dataset_api.DataError):
    list(data.batches("test", 2))


def test_imagenet2012_corrupted_is_labelled_a_regeneration():
  data = tfds_suites.Imagenet2012Corrupted()
  assert "not the published ImageNet-C" in data.spec.options["source"]
  assert data._builder_name("glass_blur@3") == "imagenet2012_corrupted/glass_blur_3"
  with tfds.testing.mock_data(num_examples=2):
    batch = data.load("fog@2")
  assert batch.images.shape == (2, 224, 224, 3)


def test_cifar10_1_and_imagenet_a():
  with tfds.testing.mock_data(num_examples=3):
    c = tfds_suites.Cifar10_1().load("test")
    a = tfds_suites.ImagenetA(image_size=64).load("test")
  assert c.images.shape == (3, 32, 32, 3)
  assert a.images.shape == (3, 64, 64, 3) and a.labels.max() < 1000
  with pytest.raises(dataset_api.DataError):
    tfds_suites.Cifar10_1(version="v5")
