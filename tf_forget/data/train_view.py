"""The data one-shot pruning trains on: a data set's own train split, or the user's `--train`.

One-shot pruning (`tf_forget.prune`: g, docs/spec.md §6.2; fine-tuning, docs/spec.md §6.4) reads the
"train" split of the member's data set through `train_records` / `decode_record`
(`tf_forget.prune.records`, `tf_forget.train.inputs`) and evaluates through `tf_dataset`. A
registered data set has its own train split. An audit of the user's model names its
labelled training data apart from the audited test data (`--train=DATA`, spelled like
`--dataset`): it is recorded in the audited data set's options as `train_data` = {"name",
"options"} of `sources.parse` (like `calibration`), and `of(dataset)` returns a `TrainView`
whose "train" split is that data — its train split if it has one, else its only split — read at
the audited data set's image size, channels and classes (`class_names`: the labels index the
model's outputs in the audited data set's order: a folder's class folders are mapped by name;
data whose labels are numbers with their own class names, a tfds label feature or a tfrecord
spec's, must name the audited classes in that order, or is refused). Every split the view
yields through `tf_dataset` / `decode_record` is what the model takes: the audited data set's
`preprocess` applied (float32), since every consumer casts the images to float32 and feeds them
to the model (a registered data set has no preprocess: `of` returns it unchanged).

Why an option of the audited data set and not a second data set in the member config: the
member config (`train.member_config.MemberConfig`: data set and options) is what every task receives
and what every member's identity hashes, so the train data is part of each one-shot member's
config hash and of the run's `audit.json` identity without a new field anywhere, and the prune
code has one path — `of(data_registry.get(name, **options))` — for trained and imported parents.

Lineage (`fingerprint`): besides the recorded options, the train data's identity is the sha256 of
its source, split, number of examples and example names (a folder's relative paths, which hold the
class folder), recorded by g and by every one-shot member (`inputs.train_data`): a file added,
removed, renamed or moved to another class redoes them. The source records its content too
(`tf_forget.pipeline.data_identity` sets `content`, the sha256 of its files, in the `train_data`
option before the audit runs), so pixels edited in place under the same names redo them as well.
"""

import dataclasses

import tensorflow as tf

from tf_forget.artifacts import hashing
from tf_forget.data import dataset_api
from tf_forget.data import preprocess as preprocess_lib
from tf_forget.data import registry

OPTION = "train_data"  # the audited data set's option naming the user's train data
TRAIN = "train"


def source_split(source):
  """The split of `source` one-shot pruning reads: "train" if it has one, else its eval split."""
  return TRAIN if TRAIN in source.spec.splits else source.spec.eval_split


def _check_classes(train, options, audited):
  """Refuses train data whose labels would index other outputs than the audited classes.

  A folder's labels come from its class folders' names, mapped onto `audited` by name. Train
  data whose labels are numbers with names of their own (a tfds label feature's `ClassLabel`,
  a tfrecord spec file's `class_names`) must name the audited classes in the audited order:
  their labels are taken as they are. A tfrecord set without class names is taken in the
  audited order.

  Raises:
    dataset_api.DataError: the train data's own classes differ (one line).
  """
  if train["name"] == "folder" or train["options"].get("class_names"):
    return
  try:
    own = registry.get(train["name"], **options).spec.class_names
  except dataset_api.DataError as e:
    if "needs class_names" in str(e):  # a tfrecord set that names no class: label order
      return
    raise
  if tuple(own) != tuple(audited):
    shown = lambda names: ", ".join(names[:12]) + (", ..." if len(names) > 12 else "")
    raise dataset_api.DataError(
      f"the train data's classes ({shown(tuple(own))}) are not the audited data set's "
      f"({shown(tuple(audited))}) in its order: its labels would index other outputs"
    )


class TrainView(dataset_api.Dataset):
  """The audited data set with split "train" read from the user's train data (`OPTION`).

  Attributes:
    dataset: the audited data set.
    source: the train data (a `dataset_api.Dataset` of `sources.PREFIXES`).
    split: the split of `source` read as "train" (`source_split`).
  """

  def __init__(self, dataset):
    """Builds the train data (lists it; no image is decoded).

    Raises:
      dataset_api.DataError: the train data cannot be built (missing folder, a class folder that is
        not one of the audited data set's classes, ...).
    """
    train = dataset.spec.options[OPTION]
    height, width, channels = dataset.spec.image_shape
    options = dict(train["options"], image_size=[height, width], channels=channels)
    _check_classes(train, options, dataset.spec.class_names)
    self.dataset = dataset
    self.source = registry.get(train["name"], **options, class_names=list(dataset.spec.class_names))
    self.split = source_split(self.source)
    name = dataset.spec.options.get("preprocess")
    self._preprocess = preprocess_lib.resolve(name) if name else None
    splits = (TRAIN,) + tuple(s for s in dataset.spec.splits if s != TRAIN)
    super().__init__(dataclasses.replace(dataset.spec, splits=splits))

  def _of(self, split):
    """(data set, split) that holds `split` of the view."""
    self.check_split(split)
    return (self.source, self.split) if split == TRAIN else (self.dataset, split)

  def _fed(self, image):
    """An image as the model takes it (uint8 unchanged; float32 after the preprocess)."""
    if self._preprocess is None:
      return image
    fed = tf.numpy_function(
      lambda x: self._preprocess(x[None])[0], [image], tf.float32, stateful=False
    )
    fed.set_shape(image.shape)
    return fed

  def batches(self, split, batch_size):
    data, name = self._of(split)
    return data.batches(name, batch_size)

  def annotation_batches(self, split, batch_size):
    data, name = self._of(split)
    return data.annotation_batches(name, batch_size)

  def num_examples(self, split):
    data, name = self._of(split)
    return data.num_examples(name)

  def model_inputs(self, examples):
    return self.dataset.model_inputs(examples)

  def tf_dataset(self, split):
    """`split` in fixed order as (image as the model takes it, label)."""
    data, name = self._of(split)
    return data.tf_dataset(name).map(
      lambda image, label: (self._fed(image), label),
      num_parallel_calls=tf.data.AUTOTUNE,
      deterministic=True,
    )

  def train_records(self, split):
    """The train data's records (only "train": `decode_record` decodes the train data's)."""
    if split != TRAIN:
      raise dataset_api.DataError(
        f"the training records of {self.spec.name!r} are its {TRAIN!r} split's, not {split!r}'s"
      )
    return self.source.train_records(self.split)

  def decode_record(self, record):
    image, label = self.source.decode_record(record)
    return self._fed(image), label

  def describe(self):
    """What the member metadata records of the train data: source, split, examples."""
    return {
      "source": dict(self.dataset.spec.options[OPTION]),
      "split": self.split,
      "examples": int(self.source.num_examples(self.split)),
    }

  def fingerprint(self):
    """sha256 of the train data's source, split, number of examples and example names."""
    names = getattr(self.source, "example_names", None)
    return hashing.sha256_json(
      dict(
        self.describe(),
        names=hashing.sha256_json(list(names(self.split)) if names is not None else None),
      )
    )


def of(dataset):
  """`dataset` as one-shot pruning reads it: a `TrainView` if its options name train data
  (`OPTION`), else `dataset` itself (a registered data set trains on its own train split)."""
  if not dataset.spec.options.get(OPTION):
    return dataset
  return TrainView(dataset)


def fingerprint(dataset):
  """`TrainView.fingerprint` of a view, None for a data set read as it is."""
  return dataset.fingerprint() if isinstance(dataset, TrainView) else None


def fingerprint_of(name, options):
  """The `fingerprint` of the data set `name` with `options` (None, building nothing, when the
  options name no train data: a trained population's lineage is unchanged)."""
  if not dict(options or {}).get(OPTION):
    return None
  return fingerprint(of(registry.get(name, **dict(options))))
