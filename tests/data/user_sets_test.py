"""The user's own data (issue #28): image folders, TFRecord files and any tfds data set.

Every file is written here, in tmp dirs; tfds is `tfds.testing.mock_data` (nothing downloaded).
Expected images are computed here from the pixels written: grey -> RGB by repetition, RGB ->
grey with tf.image.rgb_to_grayscale's documented weights (0.2989, 0.5870, 0.1140), then
`tf.image.resize(method="bilinear")`, rounded half to even (np.round) and clipped to uint8.
"""

import json
import os

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

from tf_forget.data import dataset_api
from tf_forget.data import registry

GREY_WEIGHTS = np.array([0.2989, 0.5870, 0.1140], np.float32)  # tf.image.rgb_to_grayscale


def _expected(pixels, size, channels):
  """What the data set must yield for `pixels` (the module docstring's recipe)."""
  image = np.asarray(pixels, np.float32)
  image = image[..., :3] if image.shape[-1] >= 3 else image[..., :1]  # alpha dropped
  if channels == 3 and image.shape[-1] == 1:
    image = np.repeat(image, 3, axis=-1)
  elif channels == 1 and image.shape[-1] == 3:
    image = (image @ GREY_WEIGHTS)[..., np.newaxis]
  resized = tf.image.resize(image, size, method="bilinear").numpy()
  return np.clip(np.round(resized), 0, 255).astype(np.uint8)


def _write_png(path, pixels):
  os.makedirs(os.path.dirname(path), exist_ok=True)
  tf.io.write_file(str(path), tf.io.encode_png(np.asarray(pixels, np.uint8)))


def _write_jpeg(path, pixels):
  """Writes a JPEG and returns the pixels it decodes to (JPEG is lossy)."""
  os.makedirs(os.path.dirname(path), exist_ok=True)
  data = tf.io.encode_jpeg(np.asarray(pixels, np.uint8))
  tf.io.write_file(str(path), data)
  return tf.io.decode_jpeg(data).numpy()


def _pixels(seed, h, w, c):
  return np.random.default_rng(seed).integers(0, 256, (h, w, c), dtype=np.uint8)


def _folder(root, spec):
  """Writes {relative path: (h, w, c)} as PNGs; returns {relative path: pixels}."""
  written = {}
  for i, (rel, shape) in enumerate(sorted(spec.items())):
    written[rel] = _pixels(i, *shape)
    _write_png(os.path.join(root, rel), written[rel])
  return written


PETS = {"dog/1.png": (9, 7, 3), "dog/sub/0.png": (6, 6, 1), "cat/b.png": (7, 9, 4),
        "cat/a.png": (8, 8, 3), "dog/0.png": (5, 11, 1)}


def _one_line(fn):
  with pytest.raises(dataset_api.DataError) as info:
    fn()
  assert "\n" not in str(info.value)
  return str(info.value)


def test_folder_yields_images_labels_ids_and_names(tmp_path):
  written = _folder(tmp_path, PETS)
  (tmp_path / "cat" / "notes.txt").write_text("not an image")  # ignored, as Keras does
  _write_png(tmp_path / "cat" / ".hidden.png", _pixels(9, 3, 3, 3))  # hidden: skipped
  written["cat/c.jpg"] = _write_jpeg(tmp_path / "cat" / "c.jpg", _pixels(7, 10, 6, 3))
  names = sorted(written)
  for channels in (3, 1):
    data = registry.get("folder", path=str(tmp_path), image_size=(6, 5), channels=channels)
    assert data.spec.class_names == ("cat", "dog")  # sorted subfolders
    assert data.spec.num_classes == 2 and data.spec.splits == ("test",)
    assert data.spec.eval_split == "test" and data.spec.image_shape == (6, 5, channels)
    test = data.load("test")
    assert data.example_names("test") == names
    np.testing.assert_array_equal(test.ids, np.arange(len(names)))
    np.testing.assert_array_equal(test.labels, [int(n.startswith("dog")) for n in names])
    assert test.images.dtype == np.uint8
    for i, name in enumerate(names):
      np.testing.assert_array_equal(test.images[i], _expected(written[name], (6, 5), channels),
                                    err_msg=name)
    assert data.num_examples("test") == len(names)
    assert [len(b) for b in data.batches("test", 4)] == [4, 2]
    parts = list(data.annotation_batches("test", 4))
    np.testing.assert_array_equal(np.concatenate([p.labels for p in parts]), test.labels)
  # Unset size and channels: the first image's (cat/a.png, 8x8 RGB).
  native = registry.get("folder", path=str(tmp_path))
  assert native.spec.image_shape == (8, 8, 3)
  np.testing.assert_array_equal(native.take("test", 1).images[0], written["cat/a.png"])
  # Training path: records are paths, decoded by decode_record as batches decodes them.
  image, label = native.decode_record(next(iter(native.train_records("test"))))
  np.testing.assert_array_equal(image.numpy(), written["cat/a.png"])
  assert int(label) == 0
  first = next(iter(native.tf_dataset("test")))
  np.testing.assert_array_equal(first[0].numpy(), written["cat/a.png"])


def test_batches_decode_per_batch_and_name_an_unreadable_image(tmp_path):
  _folder(tmp_path, {f"a/{i}.png": (4, 4, 3) for i in range(5)})
  (tmp_path / "a" / "9.png").write_bytes(b"not a png")  # sorted last
  data = registry.get("folder", path=str(tmp_path), image_size=4)
  assert len(list(data.annotation_batches("test", 2))) == 3  # reads no image
  stream = data.batches("test", 2)
  assert len(next(stream)) == 2 and len(next(stream)) == 2  # decoded batch by batch
  message = _one_line(lambda: next(stream))
  assert "cannot decode image a/9.png" in message
  # With the size unset, the unreadable first image is named when the data set is built.
  (tmp_path / "a" / "0.png").write_bytes(b"")
  assert "image a/0.png" in _one_line(lambda: registry.get("folder", path=str(tmp_path)))


def test_class_order_from_labels_file_folders_or_class_names(tmp_path):
  _folder(tmp_path, {"cat/0.png": (4, 4, 3), "dog/0.png": (4, 4, 3), "emu/0.png": (4, 4, 3)})
  sorted_folders = registry.get("folder", path=str(tmp_path), image_size=4)
  assert sorted_folders.spec.class_names == ("cat", "dog", "emu")
  np.testing.assert_array_equal(sorted_folders.load("test").labels, [0, 1, 2])
  (tmp_path / "labels.txt").write_text("emu\ncat\ndog\n\n")
  from_file = registry.get("folder", path=str(tmp_path), image_size=4)
  assert from_file.spec.class_names == ("emu", "cat", "dog")
  np.testing.assert_array_equal(from_file.load("test").labels, [1, 2, 0])
  given = registry.get("folder", path=str(tmp_path), image_size=4,
                       class_names=["dog", "yak", "emu", "cat"])  # wins over labels.txt
  assert given.spec.num_classes == 4  # a class without a folder still counts (model outputs)
  np.testing.assert_array_equal(given.load("test").labels, [3, 0, 2])
  (tmp_path / "labels.txt").write_text("emu\ncat\n")
  message = _one_line(lambda: registry.get("folder", path=str(tmp_path), image_size=4))
  assert "folder dog/" in message and "not a class of labels.txt" in message


def test_train_and_test_subfolders_are_the_splits(tmp_path):
  written = _folder(tmp_path, {"train/a/0.png": (4, 4, 3), "train/b/0.png": (4, 4, 3),
                               "train/b/1.png": (4, 4, 3), "test/b/0.png": (4, 4, 3),
                               "test/a/5.png": (4, 4, 3)})
  data = registry.get("folder", path=str(tmp_path))
  assert data.spec.splits == ("train", "test") and data.spec.eval_split == "test"
  assert data.spec.class_names == ("a", "b")
  assert data.example_names("test") == ["test/a/5.png", "test/b/0.png"]
  assert data.example_names("train") == ["train/a/0.png", "train/b/0.png", "train/b/1.png"]
  train = data.load("train")
  np.testing.assert_array_equal(train.ids, [0, 1, 2])
  np.testing.assert_array_equal(train.labels, [0, 1, 1])
  np.testing.assert_array_equal(train.images[2], written["train/b/1.png"])
  # Anything else next to train/ and test/ is refused rather than read as a class.
  _folder(tmp_path, {"validation/a/0.png": (4, 4, 3)})
  assert "validation/ next to train/ and test/" in _one_line(
      lambda: registry.get("folder", path=str(tmp_path)))


def _attribute_folder(tmp_path):
  _folder(tmp_path / "pets", {"cat/0.png": (4, 4, 3), "cat/1.png": (4, 4, 3),
                              "dog/0.png": (4, 4, 3), "dog/1.png": (4, 4, 3)})
  return tmp_path / "pets"


def test_attributes_csv_keyed_by_path_or_id(tmp_path):
  root = _attribute_folder(tmp_path)
  by_path = tmp_path / "by_path.csv"
  by_path.write_text("path,glasses,indoor,skin\n"
                     "dog/1.png,1,False,dark\n"
                     "cat/0.png,0,TRUE,light\n"
                     "dog/0.png,0,true,medium\n"
                     "cat/1.png,1,false,dark\n")
  data = registry.get("folder", path=str(root), image_size=4, attributes=str(by_path),
                      protected=["glasses", "skin=dark"])
  assert data.spec.attribute_names == ("glasses", "indoor", "skin=dark", "skin=light",
                                       "skin=medium")
  assert data.spec.protected_attributes == ("glasses", "skin=dark")
  test = data.load("test")  # cat/0, cat/1, dog/0, dog/1
  expected = {"glasses": [0, 1, 0, 1], "indoor": [1, 0, 1, 0], "skin=dark": [0, 1, 0, 1],
              "skin=light": [1, 0, 0, 0], "skin=medium": [0, 0, 1, 0]}
  for name, values in expected.items():
    assert test.attributes[name].dtype == bool
    np.testing.assert_array_equal(test.attributes[name], np.array(values, bool), err_msg=name)
  parts = list(data.annotation_batches("test", 3))
  for name, values in expected.items():
    np.testing.assert_array_equal(np.concatenate([p.attributes[name] for p in parts]),
                                  np.array(values, bool))
  by_id = tmp_path / "by_id.csv"
  by_id.write_text("id,glasses\n3,1\n0,0\n2,1\n1,0\n")
  keyed = registry.get("folder", path=str(root), image_size=4, attributes=str(by_id))
  np.testing.assert_array_equal(keyed.load("test").attributes["glasses"], [0, 0, 1, 1])


def test_text_files_are_utf8_with_or_without_a_bom(tmp_path):
  """Issue #35: labels.txt, the attributes CSV and the tfrecord spec are read as UTF-8, a byte
  order mark (Excel's "CSV UTF-8", Notepad) dropped; other encodings are one line naming the
  file, the first byte that is not UTF-8, its offset and line."""
  root = _attribute_folder(tmp_path)
  bom = b"\xef\xbb\xbf"
  (root / "labels.txt").write_bytes(bom + "dog\ncat\n".encode())
  (tmp_path / "a.csv").write_bytes(bom + b"path,glasses\r\ncat/0.png,1\r\ncat/1.png,0\r\n"
                                   b"dog/0.png,1\r\ndog/1.png,0\r\n")
  data = registry.get("folder", path=str(root), image_size=4, attributes=str(tmp_path / "a.csv"),
                      protected=["glasses"])
  assert data.spec.class_names == ("dog", "cat")  # not "\ufeffdog"
  np.testing.assert_array_equal(data.load("test").attributes["glasses"], [1, 0, 1, 0])
  (root / "labels.txt").write_bytes("dog\ncafé\n".encode("latin-1"))  # é = 0xe9, offset 7
  assert _one_line(lambda: registry.get("folder", path=str(root), image_size=4)) == (
      f"class names {root / 'labels.txt'} is not UTF-8 (byte 0xe9 at offset 7, line 2): "
      "re-save it as UTF-8")
  (root / "labels.txt").write_bytes("dog\ncat\n".encode("utf-16"))  # BOM ff fe: not UTF-8
  assert "labels.txt is not UTF-8 (byte 0xff at offset 0, line 1)" in _one_line(
      lambda: registry.get("folder", path=str(root), image_size=4))
  (root / "labels.txt").unlink()
  (tmp_path / "b.csv").write_bytes("path,skin\ncat/0.png,brun\ncat/1.png,châtain\n"
                                   "dog/0.png,brun\ndog/1.png,brun\n".encode("latin-1"))
  message = _one_line(lambda: registry.get("folder", path=str(root), image_size=4,
                                           attributes=str(tmp_path / "b.csv")))
  assert message == (f"attributes CSV {tmp_path / 'b.csv'} is not UTF-8 (byte 0xe2 at offset "
                     "37, line 3): re-save it as UTF-8")
  _tfrecords(tmp_path)
  (tmp_path / "spec.json").write_bytes(bom + json.dumps({"image": "img", "label": "y"}).encode())
  records = registry.get("tfrecord", pattern=str(tmp_path / "*.tfrecord"),
                         spec=str(tmp_path / "spec.json"), class_names=["a", "b"])
  assert records.spec.num_classes == 2


def test_recorded_options_rebuild_the_same_data_set(tmp_path, monkeypatch):
  root = _attribute_folder(tmp_path)
  (tmp_path / "a.csv").write_text("path,glasses\ncat/0.png,1\ncat/1.png,0\ndog/0.png,1\n"
                                  "dog/1.png,0\n")
  monkeypatch.chdir(tmp_path)  # relative paths are recorded absolute
  data = registry.get("folder", path="pets", image_size=[3, 2], channels=1,
                      attributes="a.csv", protected="glasses")
  options = json.loads(json.dumps(data.spec.options))
  assert options["path"] == str(root) and options["attributes"] == str(tmp_path / "a.csv")
  monkeypatch.chdir("/")
  again = registry.get(data.spec.name, **options)
  assert again.spec == data.spec
  a, b = data.load("test"), again.load("test")
  for field in ("ids", "labels", "images"):
    np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
  np.testing.assert_array_equal(a.attributes["glasses"], b.attributes["glasses"])


def _example(image, label, **ints):
  feature = {"img": tf.train.Feature(bytes_list=tf.train.BytesList(value=[image])),
             "y": tf.train.Feature(int64_list=tf.train.Int64List(value=[label]))}
  for key, value in ints.items():
    feature[key] = tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))
  return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def _tfrecords(tmp_path, records_per_file=((5, 1), (3, 0, 4)), channels=3):
  """Two files (written b then a; read a then b); uid = 100 + 10 * record order."""
  pixels, labels = [], []
  for name, file_labels in zip(("a", "b"), records_per_file):
    with tf.io.TFRecordWriter(str(tmp_path / f"{name}.tfrecord")) as writer:
      for label in file_labels:
        image = _pixels(len(pixels), 5, 4, channels)
        writer.write(_example(tf.io.encode_png(image).numpy(), label % 2,
                              uid=100 + 10 * len(pixels)))
        pixels.append(image)
        labels.append(label % 2)
  return pixels, labels


def test_tfrecord_files_in_sorted_order_with_spec_file(tmp_path):
  pixels, labels = _tfrecords(tmp_path)
  spec = tmp_path / "spec.json"
  spec.write_text(json.dumps({"image": "img", "label": "y", "id": "uid",
                              "class_names": ["even", "odd"]}))
  data = registry.get("tfrecord", pattern=str(tmp_path / "*.tfrecord"), spec=str(spec),
                      image_size=(3, 3), channels=1)
  assert data.spec.class_names == ("even", "odd") and data.spec.image_shape == (3, 3, 1)
  test = data.load("test")
  np.testing.assert_array_equal(test.ids, [100, 110, 120, 130, 140])
  assert data.example_names("test") == ["100", "110", "120", "130", "140"]
  np.testing.assert_array_equal(test.labels, labels)
  for i, image in enumerate(pixels):
    np.testing.assert_array_equal(test.images[i], _expected(image, (3, 3), 1))
  (tmp_path / "a.csv").write_text("id,group\n140,x\n100,y\n110,x\n120,y\n130,x\n")
  keyed = registry.get("tfrecord", pattern=str(tmp_path / "*.tfrecord"), spec=str(spec),
                       attributes=str(tmp_path / "a.csv"))
  np.testing.assert_array_equal(keyed.load("test").attributes["group=x"],
                                [False, True, False, True, True])
  # Without an id feature, ids are record positions; class names as an option.
  spec.write_text(json.dumps({"image": "img", "label": "y"}))
  positions = registry.get("tfrecord", pattern=str(tmp_path / "*.tfrecord"), spec=str(spec),
                           class_names=["even", "odd"])
  assert positions.spec.image_shape == (5, 4, 3)  # the first image's
  np.testing.assert_array_equal(positions.load("test").ids, np.arange(5))
  np.testing.assert_array_equal(positions.load("test").images[3], pixels[3])
  again = registry.get("tfrecord", **json.loads(json.dumps(positions.spec.options)))
  np.testing.assert_array_equal(again.load("test").images, positions.load("test").images)
  unkeyed = registry.get("tfrecord", pattern=str(tmp_path / "*.tfrecord"), spec=str(spec),
                         class_names=["even", "odd"], attributes=str(tmp_path / "a.csv"))
  assert "has no row for record 0 of tfrecord" in _one_line(lambda: unkeyed.load("test"))


def test_tfds_any_data_set_with_attributes_and_train_split(tmp_path):
  csv_path = tmp_path / "a.csv"
  csv_path.write_text("id,split,lit\n" + "".join(
      f"{i},{split},{i % 2}\n" for split in ("train", "test") for i in range(6)))
  with tfds.testing.mock_data(num_examples=6):
    reference = registry.get("mnist").load("test")
    data = registry.get("tfds", tfds_name="mnist", image_size=(14, 12), channels=3,
                        train_split="train", attributes=str(csv_path), protected=["lit"])
    assert data.spec.class_names == tuple(str(c) for c in range(10))
    assert data.spec.splits == ("train", "test") and data.spec.image_shape == (14, 12, 3)
    test = data.load("test")
    np.testing.assert_array_equal(test.ids, np.arange(6))
    np.testing.assert_array_equal(test.labels, reference.labels)
    np.testing.assert_array_equal(test.attributes["lit"], np.arange(6) % 2 == 1)
    for i in range(6):
      np.testing.assert_array_equal(test.images[i], _expected(reference.images[i], (14, 12), 3))
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
    assert "has no row for example 2" in _one_line(lambda: short.load("test"))
    assert "has no feature 'picture'" in _one_line(
        lambda: registry.get("tfds", tfds_name="mnist", image_key="picture"))
  assert "tfds has no data set 'no_such_set'" in _one_line(
      lambda: registry.get("tfds", tfds_name="no_such_set"))


def _refusals(tmp_path):
  """(what, build-and-read, expected text); each on its own fresh folder."""
  def folder(files, **options):
    root = tmp_path / f"f{len(os.listdir(tmp_path))}"
    _folder(root, files)
    return root, lambda: registry.get("folder", path=str(root), **options).load("test")

  two = {"a/0.png": (4, 4, 3), "b/0.png": (4, 4, 3), "b/1.png": (4, 4, 3)}
  cases = []
  cases.append(("missing folder",
                lambda: registry.get("folder", path=str(tmp_path / "nope")), "does not exist"))
  root, read = folder(two)
  os.makedirs(root / "c")
  cases.append(("empty class", read, "class folder c/ of"))
  root, read = folder(two)
  _write_png(root / "stray.png", _pixels(0, 4, 4, 3))
  cases.append(("stray file", read, "image stray.png of folder"))
  root, read = folder(two, image_size=4)
  (root / "b" / "1.png").write_bytes(b"\x89PNG broken")
  cases.append(("unreadable image", read, "cannot decode image b/1.png"))
  csv_path = tmp_path / "rows.csv"
  csv_path.write_text("path,x\na/0.png,1\nb/1.png,0\n")
  _, read = folder(two, attributes=str(csv_path))
  cases.append(("CSV row missing", read, "has no row for image b/0.png"))
  csv2 = tmp_path / "unknown.csv"
  csv2.write_text("path,x\na/0.png,1\nb/0.png,0\nb/1.png,0\nb/7.png,1\n")
  _, read = folder(two, attributes=str(csv2))
  cases.append(("CSV unknown key", read, "line 5: path 'b/7.png' is no image"))
  csv3 = tmp_path / "empty_cell.csv"
  csv3.write_text("path,skin\na/0.png,dark\nb/0.png,\nb/1.png,light\n")
  _, read = folder(two, attributes=str(csv3))
  cases.append(("CSV empty cell", read, "line 3: empty 'skin'"))
  _, read = folder(two, attributes=str(csv_path.with_name("nope.csv")))
  cases.append(("CSV missing", read, "cannot read attributes CSV"))
  csv4 = tmp_path / "ok.csv"
  csv4.write_text("path,x\na/0.png,1\nb/0.png,0\nb/1.png,0\n")
  _, read = folder(two, attributes=str(csv4), protected=["Male"])
  cases.append(("unknown protected", read, "has no attribute 'Male' (attributes: x)"))
  _, read = folder(two, channels=2)
  cases.append(("wrong channels", read, "channels must be 1 (grey) or 3 (RGB), got 2"))
  _, read = folder(two, image_size=(0, 4))
  cases.append(("bad image_size", read, "image_size must be positive"))
  cases.append(("no path", lambda: registry.get("folder"), "needs path"))
  _, read = folder({"train/a/0.png": (4, 4, 3), "test/a/0.png": (4, 4, 3)},
                   attributes=str(tmp_path / "ids.csv"))
  (tmp_path / "ids.csv").write_text("id,x\n0,1\n")
  cases.append(("id keys, two splits", read, "add a column 'split'"))
  _tfrecords(tmp_path)
  pattern = str(tmp_path / "*.tfrecord")
  cases.append(("tfrecord no match", lambda: registry.get(
      "tfrecord", pattern=str(tmp_path / "none-*")), "no file matches tfrecord pattern"))
  spec = tmp_path / "bad_spec.json"
  spec.write_text(json.dumps({"image": "img", "lable": "y"}))
  cases.append(("tfrecord spec key", lambda: registry.get(
      "tfrecord", pattern=pattern, spec=str(spec)), "unknown key 'lable'"))
  good = tmp_path / "spec.json"
  good.write_text(json.dumps({"image": "img", "label": "y"}))
  cases.append(("tfrecord no class names", lambda: registry.get(
      "tfrecord", pattern=pattern, spec=str(good)), "needs class_names"))
  cases.append(("tfrecord label range", lambda: registry.get(
      "tfrecord", pattern=pattern, spec=str(good), class_names=["one"]).load("test"),
                "has label 1, not in [0, 1)"))
  wrong = tmp_path / "wrong.json"
  wrong.write_text(json.dumps({"image": "img", "label": "uid", "id": "missing"}))
  cases.append(("tfrecord missing feature", lambda: registry.get(
      "tfrecord", pattern=pattern, spec=str(wrong), class_names=["a"], image_size=4).load(
          "test"), "cannot read record 0 of tfrecord"))
  return cases


def test_every_refusal_is_a_one_line_data_error(tmp_path):
  for what, fn, text in _refusals(tmp_path):
    message = _one_line(fn)
    assert text in message, (what, message)


def test_calibration_examples_are_spread_over_a_class_sorted_folder(tmp_path):
  """A folder lists class by class: its calibration examples are evenly spaced positions
  (np.linspace over the split, rounded), so every class is in them, and they are exactly the
  images `load` yields at those positions; a registered data set keeps its first n."""
  spec = {f"{c}/{i:02d}.png": (6, 6, 3) for c in ("a", "b", "c") for i in range(20)}
  _folder(tmp_path, spec)
  data = registry.get("folder", path=str(tmp_path))
  picked = data.calibration_examples("test", 7)
  want = np.round(np.linspace(0, 59, 7)).astype(np.int64)  # 0, 10, 20, 30, 39, 49, 59
  np.testing.assert_array_equal(picked.ids, want)
  everything = data.load("test")
  np.testing.assert_array_equal(picked.images, everything.images[want])
  np.testing.assert_array_equal(picked.labels, everything.labels[want])
  assert set(picked.labels.tolist()) == {0, 1, 2}
  assert len(data.calibration_examples("test", 100)) == 60  # fewer than n: all of them
  digits = registry.get("digits")
  np.testing.assert_array_equal(digits.calibration_examples("train", 5).ids,
                                digits.take("train", 5).ids)
