"""The `folder` data set: a folder of images, one subfolder per class, or without labels.

A folder whose images sit at its root, with no subfolder holding an image, or any folder read with
the option `labels="none"` (`--labels=none`), is a data set without labels: every image under it,
at any depth, is an example of its one split "test", labelled `dataset_api.NO_LABEL`
(docs/spec.md §8.8; `layout` decides). Images at the root next to subfolders of images are
refused unless `labels="none"` says how to read them.

Registered as `folder`, spelled `folder:PATH` (`sources.parse`). What it shares with the other
user data sets (decoding, attributes, batches, splits) is `user_sets`.
"""

import posixpath

import numpy as np
import tensorflow as tf

from tf_forget.artifacts import filesystem
from tf_forget.data import dataset_api
from tf_forget.data import held_files
from tf_forget.data import image_files
from tf_forget.data import images
from tf_forget.data import user_inputs
from tf_forget.data import user_sets

IMAGE_EXTENSIONS = (".bmp", ".gif", ".jpeg", ".jpg", ".png")  # as image_dataset_from_directory
LABELS_FILE = "labels.txt"
SPLIT_FOLDERS = ("train", "test")


def _is_image(name):
  """Whether a file name is an image the folder reads (its extension, not hidden)."""
  return name.lower().endswith(IMAGE_EXTENSIONS) and not name.startswith(".")


def _holds_image(path):
  """Whether a folder holds an image at any depth (hidden folders skipped)."""
  for _, dirnames, filenames in filesystem.walk(path):
    dirnames[:] = [d for d in dirnames if not d.startswith(".")]
    if any(_is_image(n) for n in filenames):
      return True
  return False


def layout(root):
  """How a folder read without the option `labels` is laid out (docs/spec.md §8.8): "none" (no
  labels) when images sit at its root and none of its subfolders holds one, else None (class
  folders, today's layout, whose own checks refuse a stray image or an empty class)."""
  _, dirnames, filenames = next(filesystem.walk(root), (root, [], []))
  if not any(_is_image(n) for n in filenames):
    return None
  subfolders = [n for n in dirnames if not n.startswith(".")]
  if any(_holds_image(filesystem.join(root, n)) for n in subfolders):
    return None  # a mixed layout: `_check_no_stray` refuses it, naming the image
  return dataset_api.LABELS_NONE


class Folder(user_sets.UserDataset):
  """A folder of images, one subfolder per class (Keras `image_dataset_from_directory`).

  Classes: `class_names`, else `labels.txt` in the folder root (line i = class i), else the
  sorted class subfolder names; every class subfolder must name a class (classes without a
  subfolder are allowed: num_classes = len(class names)). Images (.bmp .gif .jpeg .jpg .png,
  any case; hidden files skipped; other files ignored) may sit in nested folders of their class
  folder; each must be a regular file of at most `image_files.MAX_IMAGE_BYTES` (a FIFO or a
  link to a device is refused when the folder is listed, before any image is read). Splits:
  see `user_sets`. ids: position in the sorted relative paths of the split; `example_names`
  are those paths (relative to the folder root, "/"-separated).
  """

  def __init__(
    self,
    path=None,
    image_size=None,
    channels=None,
    class_names=None,
    attributes=None,
    protected=None,
    preprocess=None,
    calibration=None,
    train_data=None,
    deployment_images=None,
    content=None,
    labels=None,
  ):
    """Lists the folder (no image decoded except the first, if the size is not given).

    Args:
      path: the folder root (local or `gs://`).
      image_size: (H, W) or int to resize to; default the first image's size.
      channels: 1 or 3; default from the first image (grey or grey+alpha -> 1).
      class_names: the classes in label order; default `labels.txt`, else sorted folders.
      attributes: path of an attributes CSV (`attributes_csv.AttributeCsv`).
      protected: attribute names the subgroup audit gates.
      preprocess: what the model takes (`tf_forget.data.preprocess`); default raw pixels.
      calibration: recorded only (`user_sets`, option `calibration`).
      train_data: recorded only (`user_sets`, option `train_data`).
      deployment_images: recorded only (`user_sets`, option `deployment_images`).
      content: recorded only (`user_sets`, option `content`).
      labels: "none": every image is an unlabelled example (docs/spec.md §8.8); None: `layout`
        decides. A folder without labels needs `class_names` (the model's classes).

    Raises:
      dataset_api.DataError: missing folder, stray image, empty class, no image, bad option (one
        line).
    """
    if not path:
      raise dataset_api.DataError("data set 'folder' needs path (spell it folder:/path/to/images)")
    self.root = filesystem.user_path(path)
    if not filesystem.isdir(self.root):
      raise dataset_api.DataError(f"image folder {self.root} does not exist")
    labels = dataset_api.check_labels_option(labels) or layout(self.root)
    given = user_inputs.parse_names(class_names, "class_names")
    if labels == dataset_api.LABELS_NONE:
      self._names_from, split_roots, class_names = "class_names", ("test",), given
      self._list_unlabelled(given)
    else:
      split_roots = self._split_roots()
      self._names_from = "class_names" if given else LABELS_FILE
      class_names = (
        given
        or self._labels_file()
        or tuple(sorted({c for s in split_roots.values() for c in self._class_folders(s)}))
      )
      if not class_names:
        raise dataset_api.DataError(f"image folder {self.root} holds no class folder")
      self._files = {s: self._list(s, r, class_names) for s, r in split_roots.items()}
    first = self._files["test"][0][0]
    self._finish(
      "folder",
      split_roots,
      images.parse_image_size(image_size),
      images.parse_channels(channels),
      class_names,
      attributes,
      protected,
      {
        "path": self.root,
        "class_names": list(given) if given else None,
        "calibration": calibration,
        "train_data": train_data,
        "deployment_images": deployment_images,
        "content": content,
      },
      lambda: (filesystem.join(self.root, first), self._describe("test", 0)),
      preprocess,
      labels,
    )

  def _list_unlabelled(self, class_names):
    """Every image under the root at any depth, sorted, as the one split "test" (labels
    `dataset_api.NO_LABEL`); `class_names` (the model's) are required: no folder names one.

    Raises:
      dataset_api.DataError: no class names, or no image (one line).
    """
    if not class_names:
      raise dataset_api.DataError(
        f"image folder {self.root} has no labels: give class_names (the model's classes)"
      )
    files = list(self._images(self.root))
    if not files:
      raise dataset_api.DataError(
        f"image folder {self.root} holds no image ({', '.join(IMAGE_EXTENSIONS)})"
      )
    files.sort()
    self._files = {"test": (files, np.full(len(files), dataset_api.NO_LABEL, np.int64))}

  def _split_roots(self):
    top = self._subfolders(self.root)
    if "test" in top and set(top) <= set(SPLIT_FOLDERS):
      self._check_no_stray(self.root)
      return {s: filesystem.join(self.root, s) for s in SPLIT_FOLDERS if s in top}
    if set(SPLIT_FOLDERS) <= set(top):
      other = next(d for d in top if d not in SPLIT_FOLDERS)
      raise dataset_api.DataError(
        f"image folder {self.root} has {other}/ next to train/ and test/: "
        "put the class folders inside train/ and test/"
      )
    return {"test": self.root}

  def _subfolders(self, path):
    return [
      n
      for n in filesystem.listdir(path)
      if not n.startswith(".") and filesystem.isdir(filesystem.join(path, n))
    ]

  def _class_folders(self, split_root):
    self._check_no_stray(split_root)
    return self._subfolders(split_root)

  def _check_no_stray(self, path):
    for name in filesystem.listdir(path):
      if _is_image(name):
        rel = self._relative(filesystem.join(path, name))
        raise dataset_api.DataError(
          f"image {rel} of folder {self.root} is in no class folder: the folder mixes images "
          "outside class folders with class folders; move it into its class folder, or give "
          "--labels=none to audit every image without labels"
        )

  def _labels_file(self):
    path = filesystem.join(self.root, LABELS_FILE)
    if not filesystem.isfile(path):
      return None
    lines = user_inputs.read_text(path, "class names").splitlines()
    while lines and not lines[-1].strip():
      lines.pop()
    if not lines or any(not n.strip() for n in lines):
      raise dataset_api.DataError(f"{path}: an empty line (one class name per line)")
    return user_inputs.parse_names(lines, str(path))

  def _images(self, top):
    """The relative paths of the image files under `top` (hidden folders skipped), each checked
    to be a readable listed file."""
    for dirpath, dirnames, filenames in filesystem.walk(top):
      dirnames[:] = [d for d in dirnames if not d.startswith(".")]
      for name in filenames:
        if _is_image(name):
          path = filesystem.join(dirpath, name)
          rel = self._relative(path)
          image_files.check_listed(path, f"image {rel} of folder {self.root}")
          yield rel

  def _relative(self, path):
    rel = str(path)[len(self.root) :].replace("\\", "/").lstrip("/")
    return posixpath.normpath(rel)

  def _list(self, split, split_root, class_names):
    """Sorted (relative paths, labels) of a split's images."""
    index = {c: i for i, c in enumerate(class_names)}
    files = []
    for folder in self._class_folders(split_root):
      rel_folder = self._relative(filesystem.join(split_root, folder))
      if folder not in index:
        raise dataset_api.DataError(
          f"folder {rel_folder}/ of {self.root} is not a class of "
          f"{self._names_from} ({len(class_names)} classes: "
          f"{', '.join(class_names[:5])}"
          f"{', ...' if len(class_names) > 5 else ''})"
        )
      found = 0
      for rel in self._images(filesystem.join(split_root, folder)):
        files.append((rel, index[folder]))
        found += 1
      if not found:
        raise dataset_api.DataError(
          f"class folder {rel_folder}/ of {self.root} holds no image "
          f"({', '.join(IMAGE_EXTENSIONS)})"
        )
    if not files:
      where = self._relative(split_root) + "/" if split_root != self.root else ""
      raise dataset_api.DataError(
        f"image folder {self.root}{'/' + where if where else ''} holds no class folder"
      )
    files.sort()
    return ([f for f, _ in files], np.asarray([c for _, c in files], np.int64))

  def _records(self, split, ids=None):
    """(path, label, id) of the split's images (an id is the image's position in the sorted
    list), or only those of `ids` (sorted unique, present: `UserDataset.examples`)."""
    self.check_split(split)
    names, labels = self._files[split]
    ids = np.arange(len(names), dtype=np.int64) if ids is None else np.asarray(ids, np.int64)
    prefix = self.root.rstrip("/") + "/"
    return tf.data.Dataset.from_tensor_slices(
      (tf.constant([names[i] for i in ids], tf.string), labels[ids], ids)
    ).map(lambda rel, label, i: (prefix + rel, label, i))

  def _held_records(self, split):
    held = held_files.get(self.content(split))
    names, labels = self._files[split]
    if held is None or any(name not in held for name in names):
      return None
    return tf.data.Dataset.from_tensor_slices(
      (
        tf.constant([held[name] for name in names], tf.string),
        labels,
        np.arange(len(names), dtype=np.int64),
      )
    )

  def _records_of(self, split, ids):
    known = ids[(ids >= 0) & (ids < self.num_examples(split))]
    return self._records(split, known)

  def _records_at(self, split, positions):  # an image's id is its position
    return self._records(split, positions)

  def _decode(self, record):
    return images.decode_image_bytes(tf.io.read_file(record))

  def num_examples(self, split):
    self.check_split(split)
    return len(self._files[split][0])

  def example_names(self, split):
    self.check_split(split)
    return list(self._files[split][0])

  def content_files(self, split):
    """The split's images and `labels.txt` (if any), as (path relative to the root, path)."""
    self.check_split(split)
    files = [(rel, filesystem.join(self.root, rel)) for rel in self._files[split][0]]
    labels = filesystem.join(self.root, LABELS_FILE)
    if self._names_from == LABELS_FILE and filesystem.isfile(labels):
      files.append((LABELS_FILE, labels))
    return files + self._csv_files()

  def _describe(self, split, position, example_id=None):
    position = int(example_id) if position is None else position  # ids are positions
    return f"image {self._files[split][0][position]} of folder {self.root}"

  def _path_rows(self):
    where = {n: (s, i) for s, (names, _) in self._files.items() for i, n in enumerate(names)}
    rows = []
    for line, key in enumerate(self._csv.keys, start=2):
      if key not in where:
        raise dataset_api.DataError(
          f"attributes CSV {self._csv.path} line {line}: path {key!r} is no "
          f"image of folder {self.root}"
        )
      rows.append(where[key])
    return [s for s, _ in rows], [i for _, i in rows]

  def _index_attribute_rows(self):
    super()._index_attribute_rows()
    for split in self.spec.splits:  # cheap here: the ids are positions
      self._check_attribute_rows(split)
