"""The user's own data: TFRecord files and any tfds data set.

TFRecord files are read in sorted order under a spec file (image, label and id features, class
names), with attributes keyed by id or record position; any tfds data set is read with its
train split, attributes and resizing. Images are compared with `user_data.expected` of the
pixels written. Every file is written here, in tmp dirs; tfds is `tfds.testing.mock_data`
(nothing downloaded).
"""

import json

import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds

from tests.data import user_data
from tf_forget.data import registry


def test_tfrecord_files_in_sorted_order_with_spec_file(tmp_path):
  pixels, labels = user_data.tfrecords(tmp_path)
  spec = tmp_path / "spec.json"
  spec.write_text(
    json.dumps({"image": "img", "label": "y", "id": "uid", "class_names": ["even", "odd"]})
  )
  data = registry.get(
    "tfrecord", pattern=str(tmp_path / "*.tfrecord"), spec=str(spec), image_size=(3, 3), channels=1
  )
  assert data.spec.class_names == ("even", "odd") and data.spec.image_shape == (3, 3, 1)
  test = data.load("test")
  np.testing.assert_array_equal(test.ids, [100, 110, 120, 130, 140])
  assert data.example_names("test") == ["100", "110", "120", "130", "140"]
  np.testing.assert_array_equal(test.labels, labels)
  for i, image in enumerate(pixels):
    np.testing.assert_array_equal(test.images[i], user_data.expected(image, (3, 3), 1))
  (tmp_path / "a.csv").write_text("id,group\n140,x\n100,y\n110,x\n120,y\n130,x\n")
  keyed = registry.get(
    "tfrecord",
    pattern=str(tmp_path / "*.tfrecord"),
    spec=str(spec),
    attributes=str(tmp_path / "a.csv"),
  )
  np.testing.assert_array_equal(
    keyed.load("test").attributes["group=x"], [False, True, False, True, True]
  )
  # Without an id feature, ids are record positions; class names as an option.
  spec.write_text(json.dumps({"image": "img", "label": "y"}))
  positions = registry.get(
    "tfrecord", pattern=str(tmp_path / "*.tfrecord"), spec=str(spec), class_names=["even", "odd"]
  )
  assert positions.spec.image_shape == (5, 4, 3)  # the first image's
  np.testing.assert_array_equal(positions.load("test").ids, np.arange(5))
  np.testing.assert_array_equal(positions.load("test").images[3], pixels[3])
  again = registry.get("tfrecord", **json.loads(json.dumps(positions.spec.options)))
  np.testing.assert_array_equal(again.load("test").images, positions.load("test").images)
  unkeyed = registry.get(
    "tfrecord",
    pattern=str(tmp_path / "*.tfrecord"),
    spec=str(spec),
    class_names=["even", "odd"],
    attributes=str(tmp_path / "a.csv"),
  )
  assert "has no row for record 0 of tfrecord" in user_data.one_line(lambda: unkeyed.load("test"))


def test_tfds_any_data_set_with_attributes_and_train_split(tmp_path):
  csv_path = tmp_path / "a.csv"
  csv_path.write_text(
    "id,split,lit\n"
    + "".join(f"{i},{split},{i % 2}\n" for split in ("train", "test") for i in range(6))
  )
  with tfds.testing.mock_data(num_examples=6):
    reference = registry.get("mnist").load("test")
    data = registry.get(
      "tfds",
      tfds_name="mnist",
      image_size=(14, 12),
      channels=3,
      train_split="train",
      attributes=str(csv_path),
      protected=["lit"],
    )
    assert data.spec.class_names == tuple(str(c) for c in range(10))
    assert data.spec.splits == ("train", "test") and data.spec.image_shape == (14, 12, 3)
    test = data.load("test")
    np.testing.assert_array_equal(test.ids, np.arange(6))
    np.testing.assert_array_equal(test.labels, reference.labels)
    np.testing.assert_array_equal(test.attributes["lit"], np.arange(6) % 2 == 1)
    for i in range(6):
      np.testing.assert_array_equal(
        test.images[i], user_data.expected(reference.images[i], (14, 12), 3)
      )
    assert data.example_names("test") == [str(i) for i in range(6)]
    assert len(data.load("train")) == 6
    records = data.train_records("train")
    assert records.element_spec[0].dtype == tf.string  # left encoded until decode_record
    image, _ = data.decode_record(next(iter(records)))
    assert tuple(image.shape) == (14, 12, 3)
    again = registry.get("tfds", **json.loads(json.dumps(data.spec.options)))
    np.testing.assert_array_equal(again.take("test", 2).images, test.images[:2])
    native = registry.get("tfds", tfds_name="mnist", split="train")
    assert native.spec.image_shape == (28, 28, 1)
    missing = tmp_path / "missing.csv"
    missing.write_text("id,lit\n0,1\n1,0\n")
    short = registry.get("tfds", tfds_name="mnist", attributes=str(missing))
    assert "has no row for example 2" in user_data.one_line(lambda: short.load("test"))
    assert "has no feature 'picture'" in user_data.one_line(
      lambda: registry.get("tfds", tfds_name="mnist", image_key="picture")
    )
  assert "tfds has no data set 'no_such_set'" in user_data.one_line(
    lambda: registry.get("tfds", tfds_name="no_such_set")
  )
