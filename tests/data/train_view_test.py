"""`tf_forget.data.train_view`: the user's `--train` data as the "train" split one-shot pruning
reads.

Every file is written here, in a tmp dir; tfds is `tfds.testing.mock_data` serving examples made
here (nothing downloaded). Expected values are computed here from the pixels written: the
model's input under `--preprocess=symmetric` is x / 127.5 − 1 (`tf_forget.data.preprocess`),
labels index the audited data set's classes in its order.
"""

import functools
import os

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

from tf_forget.data import dataset_api
from tf_forget.data import registry
from tf_forget.data import sources
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
  return registry.get(
    "folder",
    path=str(root / "test"),
    train_data={"name": "folder", "options": {"path": str(root / "train")}},
    **options,
  )


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
  with pytest.raises(dataset_api.DataError, match="training records"):
    view.train_records("test")
  assert view.describe() == {
    "source": {"name": "folder", "options": {"path": str(root / "train")}},
    "split": "test",
    "examples": 3,
  }


def test_every_split_is_fed_as_the_model_takes_it(folders):
  root, train = folders
  view = train_view.of(_audited(root, preprocess="symmetric"))
  (image, label), *_ = list(view.tf_dataset("train"))
  assert image.dtype == tf.float32 and int(label) == 0
  np.testing.assert_allclose(image.numpy(), train["a/0.png"] / 127.5 - 1, rtol=1e-6)
  record = next(iter(view.train_records("train")))
  np.testing.assert_allclose(
    view.decode_record(record)[0].numpy(), train["a/0.png"] / 127.5 - 1, rtol=1e-6
  )
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
  with pytest.raises(dataset_api.DataError, match="is not a class of class_names"):
    train_view.of(_audited(root))


# The train data of the other sources: tfds and TFRecord files -------------------------------


def _halvable(seed, size, channels):
  """(image, half): a uint8 `[2 size, 2 size, channels]` image made of 2 x 2 blocks of one
  value, equal in every channel, and its uint8 `[size, size]` block values.

  Read at half its size, the image is `half` exactly: bilinear resizing (half-pixel centres, no
  antialiasing: `tf_forget.data.images`) makes every output pixel the mean of one block. Grey to
  RGB repeats `half`; RGB to grey of equal channels is 0.9999 x, which rounds back to x.
  """
  half = np.random.default_rng(seed).integers(0, 256, (size, size), dtype=np.uint8)
  image = np.repeat(np.repeat(half, 2, axis=0), 2, axis=1)
  return np.repeat(image[..., None], channels, axis=-1), half


def _auditing(test, train, **options):
  """The audited folder `test` with the train data spelled `train` (as `--train=`: the options of
  `sources.parse` without its unset ones, as `tf_forget.pipeline.user_prune_plan.train_option`)."""
  name, parsed = sources.parse(train)
  return registry.get(
    "folder",
    path=str(test),
    train_data={"name": name, "options": {k: v for k, v in parsed.items() if v is not None}},
    **options,
  )


def _fed(half, channels):
  """The model's input under `--preprocess=symmetric` of block values `half` in `channels`."""
  return np.repeat(half[..., None], channels, axis=-1) / 127.5 - 1


def _mock_tfds(examples, read):
  """`tfds.testing.mock_data` whose data sets hold `examples`, [(uint8 image, label)], read when
  a split is read (append to change the data); appends every split read to `read`.

  The images are encoded as PNGs and decoded with the builder's own features and the reader's
  decoders, as a prepared tfds data set is.
  """

  def as_dataset(builder, split, decoders=None, read_config=None, shuffle_files=False):
    del read_config, shuffle_files  # unused
    read.append(str(split))
    encoded = {
      "image": [tf.io.encode_png(image).numpy() for image, _ in examples],
      "label": np.asarray([label for _, label in examples], np.int64),
    }
    return tf.data.Dataset.from_tensor_slices(encoded).map(
      functools.partial(builder.info.features.decode_example, decoders=decoders)
    )

  return tfds.testing.mock_data(as_dataset_fn=as_dataset)


@pytest.fixture
def digit_folder(tmp_path):
  """test/ with classes 0..9 (mnist's class names, in its order), RGB 14 x 14, one image each."""
  _write(
    tmp_path / "test",
    {
      f"{c}/0.png": np.random.default_rng(c).integers(0, 256, (14, 14, 3), dtype=np.uint8)
      for c in range(10)
    },
  )
  return tmp_path / "test"


def test_train_can_be_a_tfds_data_set(digit_folder):
  # mnist: grey 28 x 28, read at the audited RGB 14 x 14; labels are indices of the audited
  # classes (0..9: mnist's own names of them, in the same order).
  written = [_halvable(20 + i, 14, 1) for i in range(3)]
  labels = [2, 0, 1]
  read = []
  with _mock_tfds([(image, y) for (image, _), y in zip(written, labels)], read):
    view = train_view.of(_auditing(digit_folder, "tfds:mnist:train", preprocess="symmetric"))
    assert view.split == "test"  # a tfds source reads its `split` ("train" here) as "test"
    assert view.spec.splits == ("train", "test")
    assert view.spec.class_names == tuple(str(c) for c in range(10))
    assert view.spec.image_shape == (14, 14, 3)
    assert view.num_examples("train") == 3 and view.num_examples("test") == 10
    got = list(view.tf_dataset("train"))
    assert [int(y) for _, y in got] == labels
    for (x, _), (_, half) in zip(got, written):
      assert x.dtype == tf.float32
      np.testing.assert_allclose(x.numpy(), _fed(half, 3), atol=1e-6)
    records = view.train_records("train")
    assert records.element_spec[0].dtype == tf.string  # left encoded until decode_record
    decoded = [view.decode_record(r) for r in records]
    assert [int(y) for _, y in decoded] == labels
    for (x, _), (_, half) in zip(decoded, written):
      np.testing.assert_allclose(x.numpy(), _fed(half, 3), atol=1e-6)
    loaded = view.load("train")  # batches: uint8, the preprocess is `model_inputs`'
    np.testing.assert_array_equal(loaded.labels, labels)
    np.testing.assert_array_equal(
      loaded.images, [np.repeat(h[..., None], 3, -1) for _, h in written]
    )
    assert set(read) == {"train"}  # the tfds split spelled, and no other
    assert view.describe() == {
      "source": {"name": "tfds", "options": {"tfds_name": "mnist", "split": "train"}},
      "split": "test",
      "examples": 3,
    }


def test_tfds_train_data_of_other_classes_is_refused(digit_folder, tmp_path):
  # The label feature's own names must be the audited classes in the audited order: mnist's
  # 10 digits for a 3-class folder, or the digits in another order (labels.txt), would put
  # each train label on another output.
  three = tmp_path / "three"
  _write(three, {f"{c}/0.png": np.zeros((14, 14, 3), np.uint8) for c in range(3)})
  (digit_folder / "labels.txt").write_text("".join(f"{c}\n" for c in (1, 0, *range(2, 10))))
  with _mock_tfds([(_halvable(20, 14, 1)[0], 0)], []):
    for audited in (three, digit_folder):
      with pytest.raises(dataset_api.DataError, match=r"the train data's classes \(0, 1, 2, 3"):
        train_view.of(_auditing(audited, "tfds:mnist:train"))


def test_the_fingerprint_of_tfds_train_data_follows_its_examples(digit_folder):
  examples = [(_halvable(20 + i, 14, 1)[0], i) for i in range(3)]
  with _mock_tfds(examples, []):
    options = dict(_auditing(digit_folder, "tfds:mnist:train").spec.options)
    before = train_view.fingerprint_of("folder", options)
    assert before == train_view.fingerprint(train_view.of(registry.get("folder", **options)))
    assert train_view.fingerprint_of("folder", options) == before  # rebuilt: the same
    other_split = dict(_auditing(digit_folder, "tfds:mnist:test").spec.options)
    assert train_view.fingerprint_of("folder", other_split) != before
    examples.append((_halvable(23, 14, 1)[0], 1))  # an example added
    assert train_view.fingerprint_of("folder", options) != before


def _write_tfrecord(path, examples):
  """Writes [(uint8 image, label)] as `tf.train.Example`s of a PNG and a label under the
  default feature names (`tfrecord_files.DEFAULT_TFRECORD_SPEC`; `--train` gives no spec file)."""
  with tf.io.TFRecordWriter(str(path)) as writer:
    for image, label in examples:
      writer.write(
        tf.train.Example(
          features=tf.train.Features(
            feature={
              "image/encoded": tf.train.Feature(
                bytes_list=tf.train.BytesList(value=[tf.io.encode_png(image).numpy()])
              ),
              "image/class/label": tf.train.Feature(int64_list=tf.train.Int64List(value=[label])),
            }
          )
        ).SerializeToString()
      )


def test_train_can_be_tfrecord_files(folders):
  # RGB 8 x 8 records (equal channels), read at the audited grey 4 x 4; labels are indices of
  # the audited classes a, b, c. Files in sorted order: train-0 (2 records), then train-1.
  root, _ = folders
  written = [_halvable(30 + i, 4, 3) for i in range(3)]
  labels = [1, 2, 0]
  _write_tfrecord(root / "train-1.tfrecord", [(written[2][0], labels[2])])
  _write_tfrecord(root / "train-0.tfrecord", [(w[0], y) for w, y in zip(written[:2], labels)])
  view = train_view.of(
    _auditing(root / "test", f"tfrecord:{root}/train-*.tfrecord", preprocess="symmetric")
  )
  assert view.split == "test"  # TFRecord files are one split
  assert view.spec.splits == ("train", "test") and view.spec.class_names == ("a", "b", "c")
  assert view.spec.image_shape == (4, 4, 1)
  assert view.num_examples("train") == 3 and view.num_examples("test") == 6
  got = list(view.tf_dataset("train"))
  assert [int(y) for _, y in got] == labels
  for (x, _), (_, half) in zip(got, written):
    assert x.dtype == tf.float32
    np.testing.assert_allclose(x.numpy(), _fed(half, 1), atol=1e-6)
  decoded = [view.decode_record(r) for r in view.train_records("train")]
  assert [int(y) for _, y in decoded] == labels
  for (x, _), (_, half) in zip(decoded, written):
    np.testing.assert_allclose(x.numpy(), _fed(half, 1), atol=1e-6)
  loaded = view.load("train")
  np.testing.assert_array_equal(loaded.labels, labels)
  np.testing.assert_array_equal(loaded.images, [h[..., None] for _, h in written])
  assert view.describe() == {
    "source": {"name": "tfrecord", "options": {"pattern": f"{root}/train-*.tfrecord"}},
    "split": "test",
    "examples": 3,
  }


def test_the_fingerprint_of_tfrecord_train_data_follows_its_records(folders):
  root, _ = folders
  records = [(_halvable(30 + i, 4, 3)[0], i) for i in range(3)]
  _write_tfrecord(root / "train-0.tfrecord", records[:2])
  options = dict(_auditing(root / "test", f"tfrecord:{root}/train-*.tfrecord").spec.options)
  before = train_view.fingerprint_of("folder", options)
  assert before == train_view.fingerprint(train_view.of(registry.get("folder", **options)))
  assert train_view.fingerprint_of("folder", options) == before  # rebuilt: the same
  _write_tfrecord(root / "train-0.tfrecord", records)  # a record added to the file
  appended = train_view.fingerprint_of("folder", options)
  assert appended != before
  _write_tfrecord(root / "train-1.tfrecord", records[:1])  # another file the glob matches
  assert train_view.fingerprint_of("folder", options) not in (before, appended)
