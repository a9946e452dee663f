"""The user's own data: image folders.

A folder of class subfolders yields its images (decoded, converted and resized as
`user_data.expected` computes from the pixels written), labels, ids and names; classes are
ordered by labels.txt, the folders or the given class names; train/ and test/ subfolders are the
splits; an attributes CSV is keyed by path or id; text files are UTF-8 with or without a byte
order mark; the recorded options rebuild the same data set. Every file is written
here, in tmp dirs.
"""

import json

import numpy as np

from tests.data import user_data
from tf_forget.data import registry

PETS = {
  "dog/1.png": (9, 7, 3),
  "dog/sub/0.png": (6, 6, 1),
  "cat/b.png": (7, 9, 4),
  "cat/a.png": (8, 8, 3),
  "dog/0.png": (5, 11, 1),
}


def test_folder_yields_images_labels_ids_and_names(tmp_path):
  written = user_data.folder(tmp_path, PETS)
  (tmp_path / "cat" / "notes.txt").write_text("not an image")  # ignored, as Keras does
  user_data.write_png(
    tmp_path / "cat" / ".hidden.png", user_data.pixels(9, 3, 3, 3)
  )  # hidden: skipped
  written["cat/c.jpg"] = user_data.write_jpeg(
    tmp_path / "cat" / "c.jpg", user_data.pixels(7, 10, 6, 3)
  )
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
      np.testing.assert_array_equal(
        test.images[i], user_data.expected(written[name], (6, 5), channels), err_msg=name
      )
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
  user_data.folder(tmp_path, {f"a/{i}.png": (4, 4, 3) for i in range(5)})
  (tmp_path / "a" / "9.png").write_bytes(b"not a png")  # sorted last
  data = registry.get("folder", path=str(tmp_path), image_size=4)
  assert len(list(data.annotation_batches("test", 2))) == 3  # reads no image
  stream = data.batches("test", 2)
  assert len(next(stream)) == 2 and len(next(stream)) == 2  # decoded batch by batch
  message = user_data.one_line(lambda: next(stream))
  assert "cannot decode image a/9.png" in message
  # With the size unset, the unreadable first image is named when the data set is built.
  (tmp_path / "a" / "0.png").write_bytes(b"")
  assert "image a/0.png" in user_data.one_line(lambda: registry.get("folder", path=str(tmp_path)))


def test_class_order_from_labels_file_folders_or_class_names(tmp_path):
  user_data.folder(
    tmp_path, {"cat/0.png": (4, 4, 3), "dog/0.png": (4, 4, 3), "emu/0.png": (4, 4, 3)}
  )
  sorted_folders = registry.get("folder", path=str(tmp_path), image_size=4)
  assert sorted_folders.spec.class_names == ("cat", "dog", "emu")
  np.testing.assert_array_equal(sorted_folders.load("test").labels, [0, 1, 2])
  (tmp_path / "labels.txt").write_text("emu\ncat\ndog\n\n")
  from_file = registry.get("folder", path=str(tmp_path), image_size=4)
  assert from_file.spec.class_names == ("emu", "cat", "dog")
  np.testing.assert_array_equal(from_file.load("test").labels, [1, 2, 0])
  given = registry.get(
    "folder", path=str(tmp_path), image_size=4, class_names=["dog", "yak", "emu", "cat"]
  )  # wins over labels.txt
  assert given.spec.num_classes == 4  # a class without a folder still counts (model outputs)
  np.testing.assert_array_equal(given.load("test").labels, [3, 0, 2])
  (tmp_path / "labels.txt").write_text("emu\ncat\n")
  message = user_data.one_line(lambda: registry.get("folder", path=str(tmp_path), image_size=4))
  assert "folder dog/" in message and "not a class of labels.txt" in message


def test_train_and_test_subfolders_are_the_splits(tmp_path):
  written = user_data.folder(
    tmp_path,
    {
      "train/a/0.png": (4, 4, 3),
      "train/b/0.png": (4, 4, 3),
      "train/b/1.png": (4, 4, 3),
      "test/b/0.png": (4, 4, 3),
      "test/a/5.png": (4, 4, 3),
    },
  )
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
  user_data.folder(tmp_path, {"validation/a/0.png": (4, 4, 3)})
  assert "validation/ next to train/ and test/" in user_data.one_line(
    lambda: registry.get("folder", path=str(tmp_path))
  )


def _attribute_folder(tmp_path):
  user_data.folder(
    tmp_path / "pets",
    {
      "cat/0.png": (4, 4, 3),
      "cat/1.png": (4, 4, 3),
      "dog/0.png": (4, 4, 3),
      "dog/1.png": (4, 4, 3),
    },
  )
  return tmp_path / "pets"


def test_attributes_csv_keyed_by_path_or_id(tmp_path):
  root = _attribute_folder(tmp_path)
  by_path = tmp_path / "by_path.csv"
  by_path.write_text(
    "path,glasses,indoor,skin\n"
    "dog/1.png,1,False,dark\n"
    "cat/0.png,0,TRUE,light\n"
    "dog/0.png,0,true,medium\n"
    "cat/1.png,1,false,dark\n"
  )
  data = registry.get(
    "folder",
    path=str(root),
    image_size=4,
    attributes=str(by_path),
    protected=["glasses", "skin=dark"],
  )
  assert data.spec.attribute_names == (
    "glasses",
    "indoor",
    "skin=dark",
    "skin=light",
    "skin=medium",
  )
  assert data.spec.protected_attributes == ("glasses", "skin=dark")
  test = data.load("test")  # cat/0, cat/1, dog/0, dog/1
  expected = {
    "glasses": [0, 1, 0, 1],
    "indoor": [1, 0, 1, 0],
    "skin=dark": [0, 1, 0, 1],
    "skin=light": [1, 0, 0, 0],
    "skin=medium": [0, 0, 1, 0],
  }
  for name, values in expected.items():
    assert test.attributes[name].dtype == bool
    np.testing.assert_array_equal(test.attributes[name], np.array(values, bool), err_msg=name)
  parts = list(data.annotation_batches("test", 3))
  for name, values in expected.items():
    np.testing.assert_array_equal(
      np.concatenate([p.attributes[name] for p in parts]), np.array(values, bool)
    )
  by_id = tmp_path / "by_id.csv"
  by_id.write_text("id,glasses\n3,1\n0,0\n2,1\n1,0\n")
  keyed = registry.get("folder", path=str(root), image_size=4, attributes=str(by_id))
  np.testing.assert_array_equal(keyed.load("test").attributes["glasses"], [0, 0, 1, 1])


def test_text_files_are_utf8_with_or_without_a_bom(tmp_path):
  """labels.txt, the attributes CSV and the tfrecord spec are read as UTF-8, a byte
  order mark (Excel's "CSV UTF-8", Notepad) dropped; other encodings are one line naming the
  file, the first byte that is not UTF-8, its offset and line."""
  root = _attribute_folder(tmp_path)
  bom = b"\xef\xbb\xbf"
  (root / "labels.txt").write_bytes(bom + "dog\ncat\n".encode())
  (tmp_path / "a.csv").write_bytes(
    bom + b"path,glasses\r\ncat/0.png,1\r\ncat/1.png,0\r\ndog/0.png,1\r\ndog/1.png,0\r\n"
  )
  data = registry.get(
    "folder",
    path=str(root),
    image_size=4,
    attributes=str(tmp_path / "a.csv"),
    protected=["glasses"],
  )
  assert data.spec.class_names == ("dog", "cat")  # not "\ufeffdog"
  np.testing.assert_array_equal(data.load("test").attributes["glasses"], [1, 0, 1, 0])
  (root / "labels.txt").write_bytes("dog\ncafé\n".encode("latin-1"))  # é = 0xe9, offset 7
  assert user_data.one_line(lambda: registry.get("folder", path=str(root), image_size=4)) == (
    f"class names {root / 'labels.txt'} is not UTF-8 (byte 0xe9 at offset 7, line 2): "
    "re-save it as UTF-8"
  )
  (root / "labels.txt").write_bytes("dog\ncat\n".encode("utf-16"))  # BOM ff fe: not UTF-8
  assert "labels.txt is not UTF-8 (byte 0xff at offset 0, line 1)" in user_data.one_line(
    lambda: registry.get("folder", path=str(root), image_size=4)
  )
  (root / "labels.txt").unlink()
  (tmp_path / "b.csv").write_bytes(
    "path,skin\ncat/0.png,brun\ncat/1.png,châtain\ndog/0.png,brun\ndog/1.png,brun\n".encode(
      "latin-1"
    )
  )
  message = user_data.one_line(
    lambda: registry.get("folder", path=str(root), image_size=4, attributes=str(tmp_path / "b.csv"))
  )
  assert message == (
    f"attributes CSV {tmp_path / 'b.csv'} is not UTF-8 (byte 0xe2 at offset "
    "37, line 3): re-save it as UTF-8"
  )
  user_data.tfrecords(tmp_path)
  (tmp_path / "spec.json").write_bytes(bom + json.dumps({"image": "img", "label": "y"}).encode())
  records = registry.get(
    "tfrecord",
    pattern=str(tmp_path / "*.tfrecord"),
    spec=str(tmp_path / "spec.json"),
    class_names=["a", "b"],
  )
  assert records.spec.num_classes == 2


def test_recorded_options_rebuild_the_same_data_set(tmp_path, monkeypatch):
  root = _attribute_folder(tmp_path)
  (tmp_path / "a.csv").write_text(
    "path,glasses\ncat/0.png,1\ncat/1.png,0\ndog/0.png,1\ndog/1.png,0\n"
  )
  monkeypatch.chdir(tmp_path)  # relative paths are recorded absolute
  data = registry.get(
    "folder", path="pets", image_size=[3, 2], channels=1, attributes="a.csv", protected="glasses"
  )
  options = json.loads(json.dumps(data.spec.options))
  assert options["path"] == str(root) and options["attributes"] == str(tmp_path / "a.csv")
  monkeypatch.chdir("/")
  again = registry.get(data.spec.name, **options)
  assert again.spec == data.spec
  a, b = data.load("test"), again.load("test")
  for field in ("ids", "labels", "images"):
    np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
  np.testing.assert_array_equal(a.attributes["glasses"], b.attributes["glasses"])
