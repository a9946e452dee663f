"""`digits`: scikit-learn's bundled `load_digits`, the real data set that needs no download.

1,797 grey-scale 8×8 images of handwritten digits (UCI optdigits test set), 10 classes, pixel
values 0..16. They are mapped to uint8 as `round(v * 255 / 16)` so that every data set of the
registry yields raw 0..255 pixels (image shape (8, 8, 1)).

Split (docs/spec.md §2.7): the test split is balanced per class — `test_per_class` examples of every
class (default 50, i.e. 500 test examples), drawn by a seeded stratified permutation; the rest
(1,297) is the train split. 002's Proposition 4.1 and the no-intercept slope assume a balanced test
set. Example ids are the row index in `load_digits` (stable across splits and seeds).

The rows are read from the file scikit-learn ships for `load_digits`
(`sklearn/datasets/data/digits.csv.gz`, one row of 64 pixels and the label per image), found
without importing scikit-learn: its import takes ~0.8 s, the file 0.02 s, and every process of
an audit (the driver plans on the data, each worker trains on it) would import it. Where the
file is not found, `load_digits` reads it (the same arrays: tests/data/digits_test.py).
"""

import gzip
import importlib.machinery
import os

import numpy as np

from tf_forget.data import dataset_api

NUM_CLASSES = 10
SPLIT_SEED = 20201101


SHIPPED = os.path.join("datasets", "data", "digits.csv.gz")  # in scikit-learn's package
PIXELS = 64  # 8x8 values 0..16 per row, then the label


def shipped_file():
  """The path of the digits file scikit-learn ships (`SHIPPED`), or None; scikit-learn is
  located on `sys.path`, not imported."""
  spec = importlib.machinery.PathFinder.find_spec("sklearn")
  for root in (spec.submodule_search_locations or []) if spec is not None else []:
    path = os.path.join(root, SHIPPED)
    if os.path.isfile(path):
      return path
  return None


def read_shipped(path):
  """(pixels float64 `[N, 8, 8]` in 0..16, labels int64 `[N]`) of the file at `path`, read as
  `load_digits` reads it (`np.loadtxt`, comma-separated).

  Raises:
    dataset_api.DataError: it is not a table of 64 pixels and a label per row.
  """
  try:
    with gzip.open(path, "rt", encoding="utf-8") as f:
      data = np.loadtxt(f, delimiter=",", ndmin=2)
  except (OSError, ValueError, EOFError) as e:
    raise dataset_api.DataError(f"cannot read scikit-learn's digits file {path}: {e}") from e
  if data.shape[1] != PIXELS + 1:
    raise dataset_api.DataError(
      f"scikit-learn's digits file {path} has {data.shape[1]} columns, not {PIXELS + 1}"
    )
  return data[:, :-1].reshape(-1, 8, 8), data[:, -1].astype(np.int64)


def load_source():
  """Loads the raw digits as (images uint8 [1797, 8, 8, 1], labels int64 [1797]).

  Raises:
    dataset_api.DataError: if scikit-learn is not installed, or its digits file is unreadable.
  """
  path = shipped_file()
  if path is not None:
    pixels, labels = read_shipped(path)
  else:
    try:
      from sklearn import datasets
    except ImportError as e:
      raise dataset_api.DataError(
        "data set 'digits' needs scikit-learn (pip install scikit-learn)"
      ) from e
    raw = datasets.load_digits()
    pixels, labels = raw.images, raw.target
  images = np.rint(pixels * (255.0 / 16.0)).astype(np.uint8)[..., np.newaxis]
  return images, np.asarray(labels, np.int64)


def balanced_test_index(labels, test_per_class, seed):
  """Indices of a class-balanced test split: `test_per_class` per class, seeded, sorted.

  Args:
    labels: int `[N]` labels of the whole source.
    test_per_class: how many examples of each class go to the test split.
    seed: seed of the per-class permutation.

  Returns:
    Sorted int64 indices `[num_classes * test_per_class]`.

  Raises:
    dataset_api.DataError: if a class has fewer than `test_per_class + 1` examples.
  """
  rng = np.random.default_rng(seed)
  chosen = []
  for c in np.unique(labels):
    members = np.flatnonzero(labels == c)
    if len(members) <= test_per_class:
      raise dataset_api.DataError(
        f"class {c} has {len(members)} examples; cannot hold out test_per_class={test_per_class}"
      )
    chosen.append(rng.permutation(members)[:test_per_class])
  return np.sort(np.concatenate(chosen)).astype(np.int64)


class InMemoryDataset(dataset_api.Dataset):
  """A data set whose splits are numpy arrays held in memory."""

  def __init__(self, spec, splits):
    super().__init__(spec)
    self._splits = splits

  def load(self, split):
    self.check_split(split)
    return self._splits[split]

  def batches(self, split, batch_size):
    data = self.load(split)
    for start in range(0, len(data), batch_size):
      yield data.take(slice(start, start + batch_size))

  def annotation_batches(self, split, batch_size):
    data = self.load(split)
    for start in range(0, len(data), batch_size):
      part = slice(start, start + batch_size)
      yield dataset_api.Annotations(
        labels=data.labels[part],
        ids=data.ids[part],
        attributes={k: v[part] for k, v in data.attributes.items()},
      )

  def num_examples(self, split):
    return len(self.load(split))


class Digits(InMemoryDataset):
  """scikit-learn digits with a balanced, seeded test split (the embedded default)."""

  def __init__(self, test_per_class=50, split_seed=SPLIT_SEED):
    """Builds the splits.

    Args:
      test_per_class: test examples per class (docs/spec.md §2.7), 1..173.
      split_seed: seed of the stratified split.
    """
    images, labels = load_source()
    test_idx = balanced_test_index(labels, int(test_per_class), int(split_seed))
    is_test = np.zeros(len(labels), bool)
    is_test[test_idx] = True
    ids = np.arange(len(labels), dtype=np.int64)
    splits = {}
    for name, mask in (("train", ~is_test), ("test", is_test)):
      splits[name] = dataset_api.Examples(images=images[mask], labels=labels[mask], ids=ids[mask])
    spec = dataset_api.DatasetSpec(
      name="digits",
      num_classes=NUM_CLASSES,
      image_shape=(8, 8, 1),
      splits=("train", "test"),
      class_names=tuple(str(c) for c in range(NUM_CLASSES)),
      options={"test_per_class": int(test_per_class), "split_seed": int(split_seed)},
    )
    super().__init__(spec, splits)
