"""The published robustness suites as the audit reads them (tf_forget/corruptions/
published_suites.py, tfds_suites.py), under `tfds.testing.mock_data`: nothing is downloaded."""

import inspect
import types

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

from tf_forget.corruptions import corruption_registry
from tf_forget.corruptions import published_suites
from tf_forget.corruptions import tfds_suites
from tf_forget.data import dataset_api
from tf_forget.data import registry

N = 6


def _same_examples(reads):
  """An `as_dataset_fn` giving every builder the same N examples (image i filled with 40·i,
  label i % 10) and recording which builder / split was read into `reads`."""

  def as_dataset(self, split, decoders=None, read_config=None, **kwargs):
    del decoders, read_config, kwargs
    reads.append((self.info.full_name, split))
    images = np.stack([np.full((32, 32, 3), 40 * i, np.uint8) for i in range(N)])
    images[:, :16] //= 2  # not a flat image: a resize must treat both splits alike
    return tf.data.Dataset.from_tensor_slices(
      {"image": images, "label": np.arange(N, dtype=np.int64) % 10}
    )

  return as_dataset


@pytest.mark.parametrize(
  "name, options, split, shape, classes, n_splits",
  [
    ("cifar10_corrupted", {}, "glass_blur@3", (32, 32, 3), 10, 95),
    ("imagenet2012_corrupted", {}, "elastic_transform@5", (224, 224, 3), 1000, 95),
    ("cifar10_1", {}, "test", (32, 32, 3), 10, 1),
    ("imagenet_a", {"image_size": 64}, "test", (64, 64, 3), 1000, 1),
  ],
)
def test_every_suite_loads(name, options, split, shape, classes, n_splits):
  suite = tfds_suites.get(name, **options)
  assert len(suite.spec.splits) == n_splits and split in suite.spec.splits
  assert suite.spec.num_classes == classes
  with tfds.testing.mock_data(num_examples=3):
    batch = suite.load(split)
  assert batch.images.shape == (3,) + shape and batch.images.dtype == np.uint8
  np.testing.assert_array_equal(batch.ids, np.arange(3))
  assert batch.labels.dtype == np.int64 and 0 <= batch.labels.min() and batch.labels.max() < classes


def test_corrupted_split_names_are_ours_for_all_19_x_5():
  want = {
    corruption_registry.split_name(c, s)
    for c in corruption_registry.CORRUPTIONS
    for s in range(1, 6)
  }
  for name in ("cifar10_corrupted", "imagenet2012_corrupted"):
    assert set(tfds_suites.get(name).spec.splits) == want
  c = tfds_suites.get("cifar10_corrupted")
  assert c.tfds_builder_name("glass_blur@3") == "cifar10_corrupted/frosted_glass_blur_3"
  assert c.tfds_builder_name("elastic_transform@1") == "cifar10_corrupted/elastic_1"
  i = tfds_suites.get("imagenet2012_corrupted")
  assert i.tfds_builder_name("elastic_transform@1") == "imagenet2012_corrupted/elastic_transform_1"


def test_cifar10_c_aligns_with_cifar10_test_and_is_preprocessed_alike():
  # CIFAR-10-C holds CIFAR-10's test images in order: same ids, same labels, and (here, with
  # identical raw images) the same pixels after the audited data set's resize.
  reads = []
  cifar10 = registry.get("cifar10", image_size=(16, 16))
  suite = published_suites.PublishedSuite(cifar10, ["glass_blur@3", "cifar10_1"])
  with tfds.testing.mock_data(as_dataset_fn=_same_examples(reads)):
    clean = cifar10.load("test")
    corrupted = dataset_api.concatenate(suite.batches("glass_blur@3", 4))
    extra = dataset_api.concatenate(suite.batches("cifar10_1", 4))
  assert reads[1:] == [
    ("cifar10_corrupted/frosted_glass_blur_3/1.0.0", "test"),
    ("cifar10_1/v6/1.1.0", "test"),
  ]
  for other in (corrupted, extra):
    np.testing.assert_array_equal(other.ids, clean.ids)
    np.testing.assert_array_equal(other.labels, clean.labels)
    assert other.images.shape == (N, 16, 16, 3)
    np.testing.assert_array_equal(other.images, clean.images)
  assert suite.keeps_logits("cifar10_1") and not suite.keeps_logits("glass_blur@3")


def test_imagenet_suites_take_the_audited_input_size():
  imagenet = registry.get("imagenet2012", image_size=64)
  suite = published_suites.PublishedSuite(imagenet, ["fog@2", "imagenet_a"])
  with tfds.testing.mock_data(num_examples=2):
    for split in suite.splits:
      batch = next(iter(suite.batches(split, 2)))
      assert batch.images.shape == (2, 64, 64, 3), split
  assert suite.tfds_builder_name("fog@2") == "imagenet2012_corrupted/fog_2"
  assert suite.tfds_builder_name("imagenet_a") == "imagenet_a"


def test_identity_names_builder_version_split_and_options():
  cifar10 = registry.get("cifar10")
  suite = published_suites.PublishedSuite(cifar10, ["fog@1", "fog@2", "cifar10_1"])
  ids = {s: suite.identity(s) for s in suite.splits}
  assert len(set(ids.values())) == 3
  assert published_suites.PublishedSuite(cifar10, ["fog@1"]).identity("fog@1") == ids["fog@1"]
  resized = published_suites.PublishedSuite(registry.get("cifar10", image_size=16), ["fog@1"])
  assert resized.identity("fog@1") != ids["fog@1"]
  # Another version of the tfds builder: another identity (predictions made from it are stale).
  loader, source = suite.loader("fog@1")
  name = loader.tfds_builder_name(source)
  loader._builders[name] = types.SimpleNamespace(
    info=types.SimpleNamespace(full_name=f"{name}/9.9.9")
  )
  assert suite.identity("fog@1") != ids["fog@1"]


def _genuine_as_dataset():
  """tfds' own `DatasetBuilder.as_dataset`, past any `mock_data` patch a test left behind.

  (tests/data/tfds_sets_test.py's spies monkeypatch `as_dataset` inside `mock_data`, so their
  teardown re-installs the mock after `mock_data` has removed it; in one pytest session the
  data set files then read as mocked.)
  """
  fn = tfds.core.DatasetBuilder.as_dataset
  while fn.__name__ != "as_dataset":
    fn = inspect.getclosurevars(fn).nonlocals["original_as_dataset_fn"]
  return fn


def test_not_prepared_is_one_line_naming_the_tfds_builder_and_data_dir(tmp_path, monkeypatch):
  monkeypatch.setattr(tfds.core.DatasetBuilder, "as_dataset", _genuine_as_dataset())
  suite = published_suites.PublishedSuite(
    registry.get("cifar10", data_dir=str(tmp_path)), ["gaussian_noise@3"]
  )
  with pytest.raises(dataset_api.DataError) as e:
    suite.check_readable()
  message = str(e.value)
  assert "\n" not in message
  assert "'cifar10_corrupted/gaussian_noise_3'" in message and str(tmp_path) in message


def test_data_sets_without_a_published_suite():
  with pytest.raises(published_suites.PublishedError) as e:
    published_suites.PublishedSuite(registry.get("digits"), ["gaussian_noise@3"])
  assert str(e.value) == (
    "data set 'digits' has no published robustness suite: "
    "--robustness=published applies to cifar10, imagenet2012; use "
    "--robustness=generated"
  )
  assert published_suites.with_published() == ["cifar10", "imagenet2012"]
  with pytest.raises(published_suites.PublishedError, match="'train' is not a published split"):
    published_suites.PublishedSuite(registry.get("cifar10"), ["train"])
  with pytest.raises(corruption_registry.CorruptionError, match="unknown corruption 'nope'"):
    published_suites.PublishedSuite(registry.get("cifar10"), ["nope@3"])
  with pytest.raises(dataset_api.DataError, match="unknown published suite 'nope'"):
    tfds_suites.get("nope")
  with pytest.raises(dataset_api.DataError, match="takes no option 'version'"):
    tfds_suites.get("imagenet_a", version="v6")
