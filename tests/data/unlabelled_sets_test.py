"""Data without labels (docs/spec.md §8.8): how a folder's layout decides, `labels="none"` over
a folder, a TFRecord file without a label feature, and the refusals.

Every file is written here, in tmp dirs (`user_data`).
"""

import numpy as np
import tensorflow as tf

from tests.data import user_data
from tf_forget.data import dataset_api
from tf_forget.data import image_folders
from tf_forget.data import registry

SHAPE = (4, 4, 3)


def test_images_at_the_root_are_a_folder_without_labels(tmp_path):
  written = user_data.folder(tmp_path, {"b.png": SHAPE, "a.png": SHAPE, ".hidden/c.png": SHAPE})
  assert image_folders.layout(str(tmp_path)) == dataset_api.LABELS_NONE
  data = registry.get("folder", path=str(tmp_path), class_names=["x", "y"])
  assert data.spec.options["labels"] == "none" and data.spec.splits == ("test",)
  assert data.example_names("test") == ["a.png", "b.png"]
  test = data.load("test")
  assert test.labels.tolist() == [dataset_api.NO_LABEL] * 2
  np.testing.assert_array_equal(test.images[1], written["b.png"])
  assert data.examples("test", [1]).labels.tolist() == [dataset_api.NO_LABEL]
  assert data.calibration_examples("test", 1).labels.tolist() == [dataset_api.NO_LABEL]


def test_labels_none_reads_every_image_of_class_folders_without_their_labels(tmp_path):
  user_data.folder(tmp_path, {"cat/0.png": SHAPE, "dog/1.png": SHAPE, "dog/deep/2.png": SHAPE})
  assert image_folders.layout(str(tmp_path)) is None  # class folders: labelled
  assert registry.get("folder", path=str(tmp_path)).load("test").labels.tolist() == [0, 1, 1]
  data = registry.get("folder", path=str(tmp_path), labels="none", class_names=["0", "1"])
  assert data.example_names("test") == ["cat/0.png", "dog/1.png", "dog/deep/2.png"]
  assert (data.load("test").labels == dataset_api.NO_LABEL).all()


def test_a_tfrecord_without_a_label_feature(tmp_path):
  with tf.io.TFRecordWriter(str(tmp_path / "a.tfrecord")) as writer:
    for i in range(3):
      image = tf.io.encode_png(user_data.pixels(i, 4, 4, 3)).numpy()
      feature = {"image/encoded": tf.train.Feature(bytes_list=tf.train.BytesList(value=[image]))}
      writer.write(
        tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()
      )
  pattern = str(tmp_path / "*.tfrecord")
  data = registry.get("tfrecord", pattern=pattern, labels="none", class_names=["a", "b"])
  assert (data.load("test").labels == dataset_api.NO_LABEL).all()
  message = user_data.one_line(
    lambda: registry.get("tfrecord", pattern=pattern, class_names=["a", "b"])
  )
  assert "give --labels=none" in message


def test_refusals(tmp_path):
  user_data.folder(tmp_path / "mixed", {"cat/0.png": SHAPE, "1.png": SHAPE})
  message = user_data.one_line(lambda: registry.get("folder", path=str(tmp_path / "mixed")))
  assert "image 1.png of folder" in message and "--labels=none" in message
  (tmp_path / "empty" / "sub").mkdir(parents=True)
  message = user_data.one_line(
    lambda: registry.get("folder", path=str(tmp_path / "empty"), labels="none", class_names=["a"])
  )
  assert "holds no image" in message
  user_data.folder(tmp_path / "flat", {"0.png": SHAPE})
  assert "give class_names" in user_data.one_line(
    lambda: registry.get("folder", path=str(tmp_path / "flat"))
  )
  assert "labels must be 'none'" in user_data.one_line(
    lambda: registry.get("folder", path=str(tmp_path / "flat"), labels="some")
  )
