"""Reading a split once: examples by id, and a split decoded once.

`Dataset.examples(split, ids)` must give exactly the examples `load` gives at those ids, in the
order asked, for every kind of data set: a folder (records indexed directly), TFRecord files
with an id feature (records filtered by id before decoding) and a registered data set (the
streaming default). A user's split whose content digest is recorded is decoded once per process;
without a digest, or under another digest, it is decoded again. Inside an audit
(`held_files.holding`) a folder fingerprinted whole is decoded from the bytes hashed.
"""

import os

import numpy as np
import pytest
import tensorflow as tf

from tf_forget.data import dataset_api
from tf_forget.data import decoded_splits
from tf_forget.data import fingerprint
from tf_forget.data import held_files
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
  monkeypatch.setattr(decoded_splits, "_kept", {})
  decoded = []
  original = user_sets.UserDataset._decode_batches

  def counting(self, split, *args):
    decoded.append(split)
    return original(self, split, *args)

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
  decoded_splits.forget()
  _same(again.load("test"), first)
  assert len(decoded) == 5  # dropped: decoded anew
  monkeypatch.setattr(decoded_splits, "DECODED_BYTES", 10)
  big = registry.get("folder", path=str(tmp_path), content={"test": "d3"})
  _same(big.load("test"), first)
  _same(big.load("test"), first)
  assert len(decoded) == 7  # over the budget: streamed each time


def _recorded(root):
  """The folder at `root` with its content digest recorded, as an audit's validation leaves it."""
  plain = registry.get("folder", path=str(root))
  digest = fingerprint.fingerprint(plain.content_files("test")).digest
  return registry.get("folder", path=str(root), content={"test": digest})


def test_an_audit_decodes_the_bytes_it_hashed_not_the_file_read_again(tmp_path, monkeypatch):
  _folder(tmp_path)
  monkeypatch.setattr(decoded_splits, "_kept", {})
  before = registry.get("folder", path=str(tmp_path)).load("test")
  changed = tmp_path / "b" / "03.png"
  with held_files.holding():
    data = _recorded(tmp_path)  # every file read and hashed: held
    new_pixels = np.full((5, 4, 3), 7, np.uint8)
    tf.io.write_file(str(changed), tf.io.encode_png(new_pixels))  # after the hash
    _same(data.load("test"), before)  # the bytes whose digest the run records
  decoded_splits.forget()
  after = data.load("test")  # outside an audit: the files as they are now
  position = data.example_names("test").index("b/03.png")
  np.testing.assert_array_equal(after.images[position], new_pixels)
  np.testing.assert_array_equal(
    np.delete(after.images, position, 0), np.delete(before.images, position, 0)
  )


def test_a_split_partly_from_the_fingerprint_cache_is_read_from_its_files(tmp_path, monkeypatch):
  _folder(tmp_path)
  monkeypatch.setattr(decoded_splits, "_kept", {})
  plain = registry.get("folder", path=str(tmp_path))
  files = plain.content_files("test")
  first = fingerprint.fingerprint(files)
  cache = fingerprint.cache_of(first.entries[:5])  # a re-run: 5 files known unchanged
  with held_files.holding():
    again = fingerprint.fingerprint(files, cache=cache)
    assert again.digest == first.digest and again.hashed == len(files) - 5
    assert held_files.get(again.digest) is None  # not every byte was read: nothing held
    reads = []
    original = plain._records

    def counting(split, ids=None):
      reads.append(split)
      return original(split, ids)

    data = registry.get("folder", path=str(tmp_path), content={"test": again.digest})
    monkeypatch.setattr(data, "_records", counting)
    _same(data.load("test"), plain.load("test"))
    assert reads == ["test"]


def test_examples_come_from_the_split_kept_decoded(tmp_path, monkeypatch):
  _folder(tmp_path)
  monkeypatch.setattr(decoded_splits, "_kept", {})
  data = registry.get("folder", path=str(tmp_path), content={"test": "d1"})
  everything = data.load("test")  # decoded whole and kept
  monkeypatch.setattr(data, "_records_of", lambda split, ids: pytest.fail("decoded again"))
  _check_examples(data, "test")  # the ids asked, in their order; a missing id refused
  decoded_splits.forget()
  monkeypatch.undo()
  fresh = registry.get("folder", path=str(tmp_path), content={"test": "d1"})
  ids = everything.ids[[20, 2, 9]]
  _same(fresh.examples("test", ids), everything.take(np.asarray([20, 2, 9])))


def test_the_first_images_are_decoded_alone_and_equal_the_pipelines(tmp_path, monkeypatch):
  _folder(tmp_path, per_class=20)  # 60 images
  whole = registry.get("folder", path=str(tmp_path)).load("test")
  data = registry.get("folder", path=str(tmp_path))
  monkeypatch.setattr(data, "_decode_batches", lambda *a: pytest.fail("a pipeline traced"))
  _same(data.take("test", 3), whole.take(np.arange(3)))
  assert len(data._first["test"].ids) == user_sets.FIRST  # the checks' images, once
  _same(data.take("test", user_sets.FIRST), whole.take(np.arange(user_sets.FIRST)))
  monkeypatch.undo()
  _same(data.take("test", 50), whole.take(np.arange(50)))  # more: through the pipeline


def test_a_bad_image_among_the_first_is_named(tmp_path):
  _folder(tmp_path)
  (tmp_path / "a" / "02.png").write_bytes(b"\x89PNG\r\n\x1a\n broken")
  data = registry.get("folder", path=str(tmp_path), image_size=[5, 4], channels=3)
  with pytest.raises(dataset_api.DataError, match="cannot decode image a/02.png of folder"):
    data.take("test", 1)
