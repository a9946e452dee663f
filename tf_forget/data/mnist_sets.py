"""`mnist` and `fashion_mnist` from the directory the user names: IDX files or tfds' copy.

    registry.get("mnist", data_dir="~/data/mnist")   # the four IDX files (docs/data.md)
    registry.get("mnist")                              # tfds' prepared copy, ~/tensorflow_datasets

A `data_dir` holding the four standard IDX files (`tf_forget.data.idx_files`) is read from them,
checked against the database's published checksums; any other `data_dir` (or none) is tfds'
prepared data set (`tfds_sets`). Both yield the same splits in the same order (train 60,000,
test 10,000; ids are positions in the file), so predictions and members of the two agree.
"""

import numpy as np

from tf_forget.artifacts import filesystem
from tf_forget.data import dataset_api
from tf_forget.data import digits
from tf_forget.data import idx_files
from tf_forget.data import tfds_sets

_CLASS_NAMES = {
  "mnist": tuple(str(c) for c in range(10)),
  "fashion_mnist": tfds_sets.FASHION_MNIST_CLASSES,
}


class IdxDataset(digits.InMemoryDataset):
  """MNIST or Fashion-MNIST read from its IDX files, held in memory (55 MB)."""

  def __init__(self, database, data_dir):
    """Reads and checks the four files.

    Args:
      database: "mnist" or "fashion_mnist".
      data_dir: the directory holding them.

    Raises:
      dataset_api.DataError: a missing or bad file (one line naming it).
    """
    splits, checks = idx_files.load(data_dir, database)
    examples = {
      name: dataset_api.Examples(
        images=images, labels=labels, ids=np.arange(len(labels), dtype=np.int64)
      )
      for name, (images, labels) in splits.items()
    }
    spec = dataset_api.DatasetSpec(
      name=database,
      num_classes=idx_files.NUM_CLASSES,
      image_shape=(28, 28, 1),
      splits=("train", "test"),
      class_names=_CLASS_NAMES[database],
      options={"data_dir": data_dir, "idx_md5": {stem: c["md5"] for stem, c in checks.items()}},
    )
    super().__init__(spec, examples)
    self.checks = checks


def _build(database, tfds_class, data_dir, image_size, download, manual_dir):
  """The IDX data set when `data_dir` holds the files, else tfds' (see the module docstring)."""
  local = filesystem.user_path(data_dir) if data_dir else None
  if local and "://" not in local and idx_files.has_files(local):
    if image_size is not None and tuple(np.broadcast_to(image_size, 2)) != (28, 28):
      raise dataset_api.DataError(f"{database} from IDX files is 28x28: drop image_size")
    return IdxDataset(database, local)
  return tfds_class(
    data_dir=data_dir, image_size=image_size, download=download, manual_dir=manual_dir
  )


def mnist(data_dir=None, image_size=None, download=False, manual_dir=None, idx_md5=None):
  """MNIST from `data_dir`'s IDX files, or tfds' prepared `mnist` (`idx_md5`: recorded only)."""
  del idx_md5  # the recorded checksums; the files are checked again when read
  return _build("mnist", tfds_sets.Mnist, data_dir, image_size, download, manual_dir)


def fashion_mnist(data_dir=None, image_size=None, download=False, manual_dir=None, idx_md5=None):
  """Fashion-MNIST from `data_dir`'s IDX files, or tfds' prepared `fashion_mnist`."""
  del idx_md5
  return _build("fashion_mnist", tfds_sets.FashionMnist, data_dir, image_size, download, manual_dir)
