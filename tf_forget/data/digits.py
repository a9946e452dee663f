"""`digits`: scikit-learn's bundled `load_digits`, the real data set that needs no download.

1,797 grey-scale 8×8 images of handwritten digits (UCI optdigits test set), 10 classes, pixel
values 0..16. They are mapped to uint8 as `round(v * 255 / 16)` so that every data set of the
registry yields raw 0..255 pixels (image shape (8, 8, 1)).

Split (docs/spec.md §2.7): the test split is balanced per class — `test_per_class` examples of every
class (default 50, i.e. 500 test examples), drawn by a seeded stratified permutation; the rest
(1,297) is the train split. 002's Proposition 4.1 and the no-intercept slope assume a balanced test
set. Example ids are the row index in `load_digits` (stable across splits and seeds).
"""

import numpy as np

from tf_forget.data import dataset_api

NUM_CLASSES = 10
SPLIT_SEED = 20201101


def load_source():
  """Loads the raw digits as (images uint8 [1797, 8, 8, 1], labels int64 [1797]).

  Raises:
    dataset_api.DataError: if scikit-learn is not installed.
  """
  try:
    from sklearn import datasets
  except ImportError as e:
    raise dataset_api.DataError(
      "data set 'digits' needs scikit-learn (pip install scikit-learn)"
    ) from e
  raw = datasets.load_digits()
  images = np.rint(raw.images * (255.0 / 16.0)).astype(np.uint8)[..., np.newaxis]
  return images, raw.target.astype(np.int64)


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
