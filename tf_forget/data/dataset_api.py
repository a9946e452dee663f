"""What every data set of the registry yields: uint8 images, labels, stable ids, attributes.

The contract (docs/artifacts/data.md):
  * images are `uint8` arrays `[N, H, W, C]` of raw pixel values in [0, 255], in the data set's
    fixed order (tfds `shuffle_files=False`); models take these values as float32 and normalise
    inside the model, so a `.tflite` file is fed exactly what the data set yields;
  * labels are `int64` `[N]` in `[0, num_classes)`, or `NO_LABEL` for every example of a data
    set without labels (option `labels` = `LABELS_NONE`, `unlabelled`; docs/spec.md §8.8);
  * ids are `int64` `[N]`, a stable integer per example of a split (its position in the split's
    fixed order, or the source's own index), so predictions of different models align;
  * attributes are named boolean arrays `[N]` where the data set has them (CelebA's 40).

Cheap paths, so that nothing decodes a million JPEGs it does not need:
  * `num_examples` is metadata where the source has it (tfds), never a pass over the images;
  * `annotation_batches` streams labels, ids and attributes without images;
  * `train_records` / `decode_record` split the training input into cheap records (encoded
    images for tfds) that the trainer shuffles and skips, and the decode it runs afterwards, in
    parallel, only for the batches it trains on.
"""

import abc
import dataclasses
from typing import Iterator, Mapping, Tuple

import numpy as np

from tf_forget.artifacts import errors

# A data set without labels (docs/spec.md §8.8): its option `labels` is "none" and every
# example's label is NO_LABEL.
LABELS_OPTION = "labels"
LABELS_NONE = "none"
NO_LABEL = -1


class DataError(errors.Error):
  """A data set, split, option or attribute that does not exist or cannot be read."""


def unlabelled(options):
  """Whether a data set's options (`DatasetSpec.options`, a run's `dataset_options`) say it has
  no labels."""
  return (options or {}).get(LABELS_OPTION) == LABELS_NONE


def check_labels_option(labels):
  """`labels` as the data sets take it: None (labelled, or a folder's layout decides) or
  `LABELS_NONE`.

  Raises:
    DataError: another value (one line).
  """
  if labels in (None, LABELS_NONE):
    return labels
  raise DataError(f"labels must be {LABELS_NONE!r} (no labels) or unset, got {labels!r}")


@dataclasses.dataclass(frozen=True)
class DatasetSpec:
  """Static facts about a data set.

  Attributes:
    name: registry name, e.g. "digits".
    num_classes: number of target classes.
    image_shape: (H, W, C) of the yielded uint8 images.
    splits: split names, e.g. ("train", "test").
    eval_split: the split the audit reports on.
    class_names: one name per class.
    attribute_names: names of the per-example binary attributes ("" tuple if none).
    protected_attributes: the attributes the subgroup audit crosses by default (004: Male, Young).
    options: the options the data set was built with (recorded in member configs).
  """

  name: str
  num_classes: int
  image_shape: Tuple[int, int, int]
  splits: Tuple[str, ...]
  eval_split: str = "test"
  class_names: Tuple[str, ...] = ()
  attribute_names: Tuple[str, ...] = ()
  protected_attributes: Tuple[str, ...] = ()
  options: Mapping[str, object] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Examples:
  """A batch or a whole split of examples; all arrays are aligned on axis 0.

  Attributes:
    images: uint8 `[N, H, W, C]`.
    labels: int64 `[N]`.
    ids: int64 `[N]`, stable per split.
    attributes: name -> bool `[N]`.
  """

  images: np.ndarray
  labels: np.ndarray
  ids: np.ndarray
  attributes: Mapping[str, np.ndarray] = dataclasses.field(default_factory=dict)

  def __len__(self):
    return int(self.labels.shape[0])

  def take(self, index):
    """Returns the examples at `index` (a slice, int array or boolean mask)."""
    return Examples(
      images=self.images[index],
      labels=self.labels[index],
      ids=self.ids[index],
      attributes={k: v[index] for k, v in self.attributes.items()},
    )


@dataclasses.dataclass(frozen=True)
class Annotations:
  """Labels, ids and attributes of a batch or split, without images; aligned on axis 0.

  Attributes:
    labels: int64 `[N]`.
    ids: int64 `[N]`, stable per split.
    attributes: name -> bool `[N]`.
  """

  labels: np.ndarray
  ids: np.ndarray
  attributes: Mapping[str, np.ndarray] = dataclasses.field(default_factory=dict)

  def __len__(self):
    return int(self.labels.shape[0])


def in_order(parts, ids, split):
  """The examples of `parts` (each id at most once) in the order of `ids`; DataError naming a
  missing id."""
  found = concatenate(parts) if parts else None
  position = {int(i): n for n, i in enumerate(found.ids)} if found is not None else {}
  missing = [int(i) for i in ids if int(i) not in position]
  if missing:
    raise DataError(
      f"split {split!r} has no example with id {missing[0]} "
      f"({len(missing)} of {ids.size} requested ids missing)"
    )
  return found.take(np.asarray([position[int(i)] for i in ids], np.int64))


def example_paths(dataset, split):
  """{example id: its path relative to the data root} of a data set's split, or None.

  A user's data set names each example (`example_names(split)`, `tf_forget.data.user_sets`):
  a folder's image paths, in the split's fixed order, where an example's id is its position.
  A data set without names, or whose names are its ids (tfds, TFRecord files, the registered
  sets), has none: None.
  """
  if dataset is None or not hasattr(dataset, "example_names"):
    return None
  names = [str(n) for n in dataset.example_names(split)]
  if all(n.lstrip("-").isdigit() for n in names):
    return None
  return dict(enumerate(names))


def concatenate(parts):
  """Concatenates a non-empty sequence of `Examples` along axis 0."""
  parts = list(parts)
  if not parts:
    raise DataError("no examples to concatenate")
  return Examples(
    images=np.concatenate([p.images for p in parts]),
    labels=np.concatenate([p.labels for p in parts]),
    ids=np.concatenate([p.ids for p in parts]),
    attributes={k: np.concatenate([p.attributes[k] for p in parts]) for k in parts[0].attributes},
  )


class Dataset(abc.ABC):
  """A data set of the registry (see `registry.DATASETS`)."""

  def __init__(self, spec):
    self.spec = spec

  def check_split(self, split):
    """Raises `DataError` unless `split` is one of the data set's splits."""
    if split not in self.spec.splits:
      raise DataError(
        f"data set {self.spec.name!r} has no split {split!r} "
        f"(splits: {', '.join(self.spec.splits)})"
      )

  def check_attributes(self, names):
    """Raises `DataError` naming the first attribute the data set lacks."""
    for name in names:
      if name not in self.spec.attribute_names:
        known = ", ".join(self.spec.attribute_names) or "none"
        raise DataError(
          f"data set {self.spec.name!r} has no attribute {name!r} (attributes: {known})"
        )

  @abc.abstractmethod
  def batches(self, split, batch_size) -> Iterator[Examples]:
    """Yields the split in its fixed order as `Examples` of at most `batch_size` examples."""

  def model_inputs(self, examples):
    """`examples` as a model is fed them: the raw pixels unchanged (every registered data set;
    models normalize inside). The user's data sources apply their `preprocess`."""
    return examples

  def load(self, split) -> Examples:
    """Materialises a whole split in memory (small data sets, representative sets, tests)."""
    return concatenate(self.batches(split, 1024))

  def take(self, split, n) -> Examples:
    """The first `n` examples of `split` in its fixed order (e.g. full_int8 calibration, 000 App.
    A)."""
    parts, seen = [], 0
    for batch in self.batches(split, min(max(n, 1), 1024)):
      parts.append(batch.take(slice(0, n - seen)))
      seen += len(parts[-1])
      if seen >= n:
        break
    return concatenate(parts)

  def examples(self, split, ids) -> Examples:
    """The examples of `split` with the given ids, in the order of `ids` (each id once).

    The default streams the split and keeps the requested examples (a split may not fit in
    memory whole); data sets that can read single records (a user's files) override it to
    decode only those.

    Raises:
      DataError: an id the split lacks.
    """
    ids = np.asarray(ids, np.int64)
    if not ids.size:
      return self.no_examples()
    want = {int(i): n for n, i in enumerate(ids)}
    parts, found = [], 0
    for batch in self.batches(split, 1024):
      hit = np.asarray([j for j, i in enumerate(batch.ids) if int(i) in want], np.int64)
      if hit.size:
        parts.append(batch.take(hit))
        found += hit.size
      if found == len(want):
        break
    return in_order(parts, ids, split)

  def no_examples(self) -> Examples:
    """Zero examples of the data set's image shape and attributes."""
    return Examples(
      images=np.zeros((0,) + tuple(self.spec.image_shape), np.uint8),
      labels=np.zeros(0, np.int64),
      ids=np.zeros(0, np.int64),
      attributes={n: np.zeros(0, bool) for n in self.spec.attribute_names},
    )

  def calibration_examples(self, split, n) -> Examples:
    """The examples that calibrate a full int8 file: the first `n` of `split` (docs/spec.md §2.5; a
    registered data set's fixed order is not sorted by class)."""
    return self.take(split, n)

  def annotation_batches(self, split, batch_size) -> Iterator[Annotations]:
    """Yields the split's labels, ids and attributes in its fixed order, without images.

    The default reads `batches` and drops the images; data sets that can skip image decoding
    (tfds) or hold arrays (in-memory sets) override it.
    """
    for batch in self.batches(split, batch_size):
      yield Annotations(labels=batch.labels, ids=batch.ids, attributes=batch.attributes)

  def num_examples(self, split) -> int:
    """Number of examples in `split` (default: counted over `annotation_batches`)."""
    return sum(len(b) for b in self.annotation_batches(split, 4096))

  def tf_dataset(self, split):
    """The split as an unbatched `tf.data.Dataset` of `(image uint8 [H,W,C], label int64)`.

    Fixed order; the trainer shuffles and augments. The default builds it from the numpy split
    (fine for small data sets); tfds-backed data sets override it to stream.
    """
    import tensorflow as tf

    data = self.load(split)
    return tf.data.Dataset.from_tensor_slices((data.images, data.labels))

  def train_records(self, split):
    """The split as an unbatched `tf.data.Dataset` of cheap records, in fixed order.

    The trainer shuffles, repeats and skips (resume) these records and decodes only the ones
    it trains on (`decode_record`). The default is `tf_dataset(split)` itself (images already
    decoded: in-memory data sets); tfds-backed data sets yield encoded images.
    """
    return self.tf_dataset(split)

  def decode_record(self, record):
    """Decodes one `train_records` element (traced inside `tf.data` map).

    Args:
      record: one element of `train_records`.

    Returns:
      `(image uint8 [H, W, C], label int64 [])` as `tf_dataset` yields them (default: the
      record itself).
    """
    return record
