"""tfds-backed data sets under tfds.testing.mock_data: nothing is downloaded."""

import numpy as np
import pytest
import tensorflow_datasets as tfds

from tf_forget.data import dataset_api
from tf_forget.data import registry
from tf_forget.data import tfds_sets


@pytest.mark.parametrize(
  "name, shape, classes",
  [
    ("cifar10", (32, 32, 3), 10),
    ("cifar100", (32, 32, 3), 100),
    ("mnist", (28, 28, 1), 10),
    ("fashion_mnist", (28, 28, 1), 10),
  ],
)
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
    # The target is the Blond_Hair attribute (docs/spec.md §2.4).
    np.testing.assert_array_equal(test.labels, test.attributes["Blond_Hair"].astype(np.int64))
    native = registry.get("celeb_a")
    assert native.spec.image_shape == (218, 178, 3)
    assert native.load("validation").images.shape[1:] == (218, 178, 3)


def test_imagenet_needs_manual_dir_to_download():
  with pytest.raises(dataset_api.DataError, match="needs manual_dir"):
    registry.get("imagenet2012", download=True, manual_dir="/nonexistent")


def test_imagenet_mock_is_cropped_and_resized():
  with tfds.testing.mock_data(num_examples=3):
    data = registry.get("imagenet2012", image_size=64)
    batch = data.load("validation")
    assert batch.images.shape == (3, 64, 64, 3)
    assert data.spec.eval_split == "validation"


def test_unprepared_data_is_a_one_line_error(tmp_path):
  data = registry.get("cifar10", data_dir=str(tmp_path))
  with pytest.raises(dataset_api.DataError, match="not prepared") as info:
    data.load("test")
  assert "\n" not in str(info.value)


class _Spy:
  """Records the `decoders` of every tfds `as_dataset` call and every image decode (trace)."""

  def __init__(self, monkeypatch):
    self.decoders = []
    self.decodes = 0
    original_as_dataset = tfds.core.DatasetBuilder.as_dataset
    original_decode = tfds.features.Image.decode_example
    spy = self

    def as_dataset(builder, *args, **kwargs):
      spy.decoders.append(kwargs.get("decoders"))
      return original_as_dataset(builder, *args, **kwargs)

    def decode_example(feature, *args, **kwargs):
      spy.decodes += 1
      return original_decode(feature, *args, **kwargs)

    monkeypatch.setattr(tfds.core.DatasetBuilder, "as_dataset", as_dataset)
    monkeypatch.setattr(tfds.features.Image, "decode_example", decode_example)

  def images_skipped(self):
    """Whether every read left the image encoded (tfds' mock decodes nothing without decoders,
    so the decoders passed are what tells a decoding read from a skipping one)."""
    return all(isinstance((d or {}).get("image"), tfds.decode.SkipDecoding) for d in self.decoders)


def test_num_examples_from_metadata_reads_no_data(monkeypatch):
  with tfds.testing.mock_data(num_examples=9):
    data = registry.get("cifar10")
    builder = data._builder()
    builder.info.set_splits(
      tfds.core.SplitDict(
        [
          tfds.core.SplitInfo(
            name="train", shard_lengths=[600, 400], num_bytes=0, filename_template=None
          )
        ]
      )
    )
    spy = _Spy(monkeypatch)
    assert data.num_examples("train") == 1000
    assert data.num_examples("train[:90%]") == 900  # tfds slicing, from the same metadata
    assert data.num_examples("train[10:20]") == 10
    assert spy.decoders == []  # nothing read
    with pytest.raises(dataset_api.DataError, match="no split 'validation'"):
      data.num_examples("validation[:5]")


def test_num_examples_without_metadata_counts_undecoded_records(monkeypatch):
  with tfds.testing.mock_data(num_examples=9):
    data = registry.get("celeb_a")
    spy = _Spy(monkeypatch)
    assert data.num_examples("train") == 9
    assert spy.decoders and spy.images_skipped() and spy.decodes == 0
    # The spy sees decodes where there are some: the default read decodes every image.
    spy.decoders.clear()
    assert len(data.load("test")) == 9
    assert not spy.images_skipped()


def test_annotation_batches_do_not_decode_images(monkeypatch):
  with tfds.testing.mock_data(num_examples=9):
    data = registry.get("celeb_a")
    whole = data.load("test")
    spy = _Spy(monkeypatch)
    parts = list(data.annotation_batches("test", 4))
    assert spy.decoders and spy.images_skipped() and spy.decodes == 0
    assert [len(p) for p in parts] == [4, 4, 1]
    np.testing.assert_array_equal(np.concatenate([p.ids for p in parts]), np.arange(9))
    labels = np.concatenate([p.labels for p in parts])
    np.testing.assert_array_equal(labels, whole.labels)
    for name in tfds_sets.CELEB_A_ATTRIBUTES:
      np.testing.assert_array_equal(
        np.concatenate([p.attributes[name] for p in parts]), whole.attributes[name]
      )


def test_train_records_are_encoded_and_decode_record_decodes(monkeypatch):
  with tfds.testing.mock_data(num_examples=5):
    data = registry.get("celeb_a", image_size=(32, 24))
    spy = _Spy(monkeypatch)
    records = data.train_records("train")
    assert records.element_spec[0].dtype.name == "string"  # still encoded
    assert spy.images_skipped() and spy.decodes == 0
    decoded = records.map(lambda encoded, label: data.decode_record((encoded, label)))
    image, label = next(iter(decoded))
    assert spy.decodes == 1  # traced once, in the decode step
    assert image.dtype.name == "uint8" and tuple(image.shape) == (32, 24, 3)
    assert label.dtype.name == "int64"


def test_report_attribute_streams_decode_no_image(monkeypatch):
  """report.collect's eval attributes and train shares (004 Figure 2) read no image."""
  from tf_forget.report import collect

  with tfds.testing.mock_data(num_examples=7):
    data = registry.get("celeb_a")
    train = data.load("train")
    spy = _Spy(monkeypatch)
    stream = collect._stream_attributes
    ids, attrs = stream(data, "train", ("Male", "Young"))
    assert spy.decoders and spy.images_skipped() and spy.decodes == 0
    np.testing.assert_array_equal(ids, np.arange(7))
    for name in ("Male", "Young"):
      np.testing.assert_array_equal(attrs[name], train.attributes[name])
