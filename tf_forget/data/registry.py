"""The data set registry: a plain dict of names -> builders (as uncertainty-baselines' DATASETS).

    dataset = registry.get("digits")
    test = dataset.load("test")

Each builder takes keyword options (e.g. `image_size` for CelebA, `data_dir`) and returns a
`dataset_api.Dataset`. Unknown names and unknown options raise `dataset_api.DataError` with a
one-line message.

Within `reuse()` (one audit, its planning and its in-process tasks), `get` builds each (name,
options) once: a folder of 10,000 images is listed and its files checked once per run, not once
per step and task that reads it.
"""

import contextlib
import inspect
import json

from tf_forget.data import dataset_api
from tf_forget.data import digits
from tf_forget.data import digits_biased
from tf_forget.data import image_folders
from tf_forget.data import mnist_sets
from tf_forget.data import tfds_records
from tf_forget.data import tfds_sets
from tf_forget.data import tfrecord_files

DATASETS = {
  "digits": digits.Digits,
  "digits_biased": digits_biased.DigitsBiased,
  "celeb_a": tfds_sets.CelebA,
  "cifar10": tfds_sets.Cifar10,
  "cifar100": tfds_sets.Cifar100,
  "mnist": mnist_sets.mnist,
  "fashion_mnist": mnist_sets.fashion_mnist,
  "imagenet2012": tfds_sets.Imagenet2012,
  # The user's own data, spelled folder:PATH, tfds:NAME, tfrecord:GLOB
  # (sources.parse).
  "folder": image_folders.Folder,
  "tfds": tfds_records.Tfds,
  "tfrecord": tfrecord_files.TfRecord,
}

DEFAULT_DATASET = "digits"

_built = None  # {(name, options): data set} inside `reuse()`, else None


@contextlib.contextmanager
def reuse():
  """Within it, `get` returns the data set it built before for equal (name, options)."""
  global _built
  outer, _built = _built, {} if _built is None else _built
  try:
    yield
  finally:
    _built = outer


def get(name, **options):
  """Builds the data set `name` with `options`.

  Args:
    name: a key of `DATASETS`.
    **options: builder keyword arguments; `None` values are dropped (unset flags).

  Returns:
    A `dataset_api.Dataset`.

  Raises:
    dataset_api.DataError: unknown name or option, or an option the builder rejects.
  """
  if name not in DATASETS:
    raise dataset_api.DataError(f"unknown data set {name!r} (known: {', '.join(sorted(DATASETS))})")
  builder = DATASETS[name]
  options = {k: v for k, v in options.items() if v is not None}
  accepted = inspect.signature(builder).parameters
  for key in options:
    if key not in accepted:
      raise dataset_api.DataError(
        f"data set {name!r} takes no option {key!r} (options: {', '.join(accepted) or 'none'})"
      )
  if _built is None:
    return builder(**options)
  key = _key(name, options)
  if key not in _built:
    _built[key] = keep(builder(**options))
  return _built[key]


def keep(dataset):
  """`dataset`, which `get` of its name and recorded options returns within `reuse()`."""
  if _built is not None:
    _built.setdefault(_key(dataset.spec.name, dataset.spec.options), dataset)
  return dataset


def _key(name, options):
  options = {k: v for k, v in options.items() if v is not None}
  return name, json.dumps(options, sort_keys=True, default=repr)
