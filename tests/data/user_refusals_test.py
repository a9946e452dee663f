"""The user's own data: refusals, and the examples that calibrate int8.

Every bad folder, attributes CSV, option or TFRecord spec is one `DataError` of one line; a
folder's calibration examples are spread over its classes. Every file is written here, in tmp
dirs.
"""

import json
import os

import numpy as np

from tests.data import user_data
from tf_forget.data import record_reader
from tf_forget.data import registry


def _refusals(tmp_path):
  """(what, build-and-read, expected text); each on its own fresh folder."""

  def folder(files, **options):
    root = tmp_path / f"f{len(os.listdir(tmp_path))}"
    user_data.folder(root, files)
    return root, lambda: registry.get("folder", path=str(root), **options).load("test")

  two = {"a/0.png": (4, 4, 3), "b/0.png": (4, 4, 3), "b/1.png": (4, 4, 3)}
  cases = []
  cases.append(
    (
      "missing folder",
      lambda: registry.get("folder", path=str(tmp_path / "nope")),
      "does not exist",
    )
  )
  root, read = folder(two)
  os.makedirs(root / "c")
  cases.append(("empty class", read, "class folder c/ of"))
  root, read = folder(two)
  user_data.write_png(root / "stray.png", user_data.pixels(0, 4, 4, 3))
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
  _, read = folder(
    {"train/a/0.png": (4, 4, 3), "test/a/0.png": (4, 4, 3)}, attributes=str(tmp_path / "ids.csv")
  )
  (tmp_path / "ids.csv").write_text("id,x\n0,1\n")
  cases.append(("id keys, two splits", read, "add a column 'split'"))
  user_data.tfrecords(tmp_path)
  pattern = str(tmp_path / "*.tfrecord")
  cases.append(
    (
      "tfrecord no match",
      lambda: registry.get("tfrecord", pattern=str(tmp_path / "none-*")),
      "no file matches tfrecord pattern",
    )
  )
  spec = tmp_path / "bad_spec.json"
  spec.write_text(json.dumps({"image": "img", "lable": "y"}))
  cases.append(
    (
      "tfrecord spec key",
      lambda: registry.get("tfrecord", pattern=pattern, spec=str(spec)),
      "unknown key 'lable'",
    )
  )
  good = tmp_path / "spec.json"
  good.write_text(json.dumps({"image": "img", "label": "y"}))
  cases.append(
    (
      "tfrecord no class names",
      lambda: registry.get("tfrecord", pattern=pattern, spec=str(good)),
      "needs class_names",
    )
  )
  cases.append(
    (
      "tfrecord label range",
      lambda: registry.get("tfrecord", pattern=pattern, spec=str(good), class_names=["one"]).load(
        "test"
      ),
      "has label 1, not in [0, 1)",
    )
  )
  wrong = tmp_path / "wrong.json"
  wrong.write_text(json.dumps({"image": "img", "label": "uid", "id": "missing"}))
  cases.append(
    (
      "tfrecord missing feature",
      lambda: registry.get(
        "tfrecord", pattern=pattern, spec=str(wrong), class_names=["a"], image_size=4
      ).load("test"),
      "cannot read record 0 of tfrecord",
    )
  )
  return cases


def test_every_refusal_is_a_one_line_data_error(tmp_path):
  for what, fn, text in _refusals(tmp_path):
    message = user_data.one_line(fn)
    assert text in message, (what, message)


def test_calibration_examples_are_spread_over_a_class_sorted_folder(tmp_path):
  """A folder lists class by class: its calibration examples are evenly spaced positions
  (np.linspace over the split, rounded), so every class is in them, and they are exactly the
  images `load` yields at those positions; a registered data set keeps its first n."""
  spec = {f"{c}/{i:02d}.png": (6, 6, 3) for c in ("a", "b", "c") for i in range(20)}
  user_data.folder(tmp_path, spec)
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
  np.testing.assert_array_equal(
    digits.calibration_examples("train", 5).ids, digits.take("train", 5).ids
  )


def test_an_unreadable_image_among_the_calibration_examples_is_named(tmp_path):
  """The picked images are decoded one by one (`record_reader.EAGER`): the one that cannot be
  decoded is named by its path, not by a position of the split's head."""
  spec = {f"{c}/{i:02d}.png": (6, 6, 3) for c in ("a", "b", "c") for i in range(20)}
  user_data.folder(tmp_path, spec)
  data = registry.get("folder", path=str(tmp_path))
  (tmp_path / "b" / "10.png").write_bytes(b"\x89PNG broken")  # position 30: a picked one
  message = user_data.one_line(lambda: data.calibration_examples("test", 7))
  assert "cannot decode image b/10.png" in message, message


def test_calibration_examples_decoded_in_a_batch_are_the_ones_decoded_one_by_one(
  tmp_path, monkeypatch
):
  """More picked images than `record_reader.EAGER` go through one batched pipeline: the same
  images, labels and ids."""
  spec = {f"{c}/{i:02d}.png": (6, 6, 3) for c in ("a", "b", "c") for i in range(20)}
  user_data.folder(tmp_path, spec)
  data = registry.get("folder", path=str(tmp_path))
  eager = data.calibration_examples("test", 7)
  monkeypatch.setattr(record_reader, "EAGER", 2)
  batched = data.calibration_examples("test", 7)
  for field in ("images", "labels", "ids"):
    np.testing.assert_array_equal(getattr(batched, field), getattr(eager, field))
