"""Reading a split once: examples by id, and a split decoded once.

`Dataset.examples(split, ids)` must give exactly the examples `load` gives at those ids, in the
order asked, for every kind of data set: a folder (records indexed directly), TFRecord files
with an id feature (records filtered by id before decoding) and a registered data set (the
streaming default). A user's split whose content digest is recorded is decoded once per process;
without a digest, or under another digest, it is decoded again.
"""

import os

import numpy as np
import pytest
import tensorflow as tf

from tf_forget.data import dataset_api
from tf_forget.data import registry
from tf_forget.data import user_sets


def _folder(root, classes=("a", "b", "c"), per_class=7):
  rng = np.random.default_rng(0)
  for c in classes:
    os.makedirs(os.path.join(root, c))
    for i in range(per_class):
      tf.io.write_file(
        os.path.join(root, c, f"{i:02d}.png"),
        tf.io.encode_png(rng.integers(0, 256, (5, 4, 3), dtype=np.uint8)),
      )


def _tfrecords(path, n=9):
  """One file of `n` PNG records; id feature uid = 100 + 7 * position."""
  rng = np.random.default_rng(1)
  with tf.io.TFRecordWriter(str(path / "x.tfrecord")) as writer:
    for i in range(n):
      png = tf.io.encode_png(rng.integers(0, 256, (4, 4, 1), dtype=np.uint8)).numpy()
      feature = {
        "img": tf.train.Feature(bytes_list=tf.train.BytesList(value=[png])),
        "y": tf.train.Feature(int64_list=tf.train.Int64List(value=[i % 2])),
        "uid": tf.train.Feature(int64_list=tf.train.Int64List(value=[100 + 7 * i])),
      }
      writer.write(
        tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()
      )
  spec = path / "spec.json"
  spec.write_text('{"image": "img", "label": "y", "id": "uid", "class_names": ["e", "o"]}')
  return registry.get("tfrecord", pattern=str(path / "*.tfrecord"), spec=str(spec))


def _same(got, want):
  np.testing.assert_array_equal(got.ids, want.ids)
  np.testing.assert_array_equal(got.labels, want.labels)
  np.testing.assert_array_equal(got.images, want.images)
  assert sorted(got.attributes) == sorted(want.attributes)


def _check_examples(data, split):
  everything = data.load(split)
  order = np.asarray([len(everything) - 1, 0, 3, len(everything) // 2], np.int64)
  ids = everything.ids[order]
  _same(data.examples(split, ids), everything.take(order))  # the order asked, not the split's
  _same(data.examples(split, ids[[1, 1, 2]]), everything.take(order[[1, 1, 2]]))
  assert len(data.examples(split, [])) == 0
  assert data.examples(split, []).images.shape[1:] == tuple(data.spec.image_shape)
  missing = int(everything.ids.max()) + 1
  with pytest.raises(dataset_api.DataError, match=f"no example with id {missing}"):
    data.examples(split, [int(ids[0]), missing])


def test_examples_by_id_equal_load_for_every_kind_of_data_set(tmp_path):
  _folder(tmp_path / "images")
  _check_examples(registry.get("folder", path=str(tmp_path / "images")), "test")
  records = _tfrecords(tmp_path)
  np.testing.assert_array_equal(records.load("test").ids, 100 + 7 * np.arange(9))
  _check_examples(records, "test")
  _check_examples(registry.get("digits"), "test")


def test_folder_calibration_examples_index_the_records(tmp_path):
  """The folder's calibration positions read directly equal the streamed split's."""
  _folder(tmp_path)
  data = registry.get("folder", path=str(tmp_path))
  picked = data.calibration_examples("test", 5)
  want = np.round(np.linspace(0, 20, 5)).astype(np.int64)
  _same(picked, data.load("test").take(want))


def test_a_split_with_a_recorded_digest_is_decoded_once_per_process(tmp_path, monkeypatch):
  _folder(tmp_path)
  monkeypatch.setattr(user_sets, "_DECODED", {})
  decoded = []
  original = user_sets.UserDataset._decode_batches

  def counting(self, split, batch_size):
    decoded.append(split)
    return original(self, split, batch_size)

  monkeypatch.setattr(user_sets.UserDataset, "_decode_batches", counting)
  plain = registry.get("folder", path=str(tmp_path))
  first = plain.load("test")
  _same(plain.load("test"), first)
  assert len(decoded) == 2  # no digest: the files may change between passes
  recorded = registry.get("folder", path=str(tmp_path), content={"test": "d1"})
  for batch_size in (4, 1024, 3):
    _same(dataset_api.concatenate(recorded.batches("test", batch_size)), first)
  assert len(decoded) == 3  # decoded once, then sliced at any batch size
  again = registry.get("folder", path=str(tmp_path), content={"test": "d1"})
  _same(again.load("test"), first)
  assert len(decoded) == 3  # another instance of the same data: the same pixels
  other = registry.get("folder", path=str(tmp_path), content={"test": "d2"})
  _same(other.load("test"), first)
  assert len(decoded) == 4  # another digest is other content
  user_sets.forget_decoded()
  _same(again.load("test"), first)
  assert len(decoded) == 5  # dropped: decoded anew
  monkeypatch.setattr(user_sets, "DECODED_BYTES", 10)
  big = registry.get("folder", path=str(tmp_path), content={"test": "d3"})
  _same(big.load("test"), first)
  _same(big.load("test"), first)
  assert len(decoded) == 7  # over the budget: streamed each time
