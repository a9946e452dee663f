"""The user's own data: an image folder, any tfds data set, TFRecord files.

Registered as `folder` (`image_folders.Folder`), `tfds` and `tfrecord` (`tfds_records.Tfds`,
`tfrecord_files.TfRecord`), spelled `folder:PATH`, `tfds:NAME[/CONFIG][:SPLIT]`, `tfrecord:GLOB`
on the command line (`sources.parse`). They yield what every data set yields (`dataset_api`,
docs/artifacts/data.md): uint8 images `[N, H, W, C]`, int64 labels, int64 ids, boolean
attributes, and `example_names(split)` — the image's path relative to the folder root for
`folder`, `str(id)` for the others — so the report can name the examples. This module holds
what the three share, `UserDataset`.

Images: decoded, converted to `channels` and resized to `image_size` (the model's input size)
as `images` says. `image_size` and `channels` default to the first example's.

Common options: `labels` ("none": a data set without labels, every label `dataset_api.NO_LABEL`,
docs/spec.md §8.8), `image_size` (int or (H, W)), `channels` (1 or 3), `class_names`, `attributes` (a
CSV, see `attributes_csv.AttributeCsv`), `protected` (attribute names the subgroup audit gates),
`calibration` (recorded only: {"name", "options"} of the `sources.parse`d data whose first examples
calibrate full_int8, `--calibration`; read by `tf_forget.export.export_state.calibration_source`),
`train_data` (recorded only: {"name", "options"} of the labelled data one-shot pruning fine-tunes
on, `--train`; read by `tf_forget.data.train_view`), `deployment_images` (recorded only: {"name",
"options"} of the images a deployment sees, `--deployment_images`, read without labels by
`tf_forget.data.deployment_view`), `content` (recorded only: {split: sha256 of the
split's files, `fingerprint`}, set by `tf_forget.pipeline.data_identity` before the audit runs, so
that every artifact made from a split records its content through `predictions.split_identity`;
`calibration`, `train_data` and `deployment_images` carry their own "content" key). The recorded
`spec.options` are JSON-able and rebuild the same data set with `registry.get`.

Splits: the eval split is always named "test". A folder whose top-level subfolders include
`test` and are all `train` or `test` is split by them (splits "train" if present, and "test");
any other folder is one "test" split. A tfds source reads its `split` (default "test") as "test",
and `train_split` if given as "train". TFRecord files are one "test" split.

Reading: `record_reader.RecordReader` (decoded in batches, once per split, by id; a failing
image named).
"""

import abc
import copy as _copy
import dataclasses

import numpy as np
import tensorflow as tf

from tf_forget.artifacts import filesystem
from tf_forget.data import attribute_rows
from tf_forget.data import attributes_csv
from tf_forget.data import dataset_api
from tf_forget.data import preprocess as preprocess_lib
from tf_forget.data import record_reader
from tf_forget.data import user_inputs

# The options a user data set records and never reads while it lists its files (module docstring).
RECORDED = ("calibration", "train_data", "deployment_images", "content")
# The first images of a split decoded at once by `take` (the plan's checks read up to 32).
FIRST = 32


class UserDataset(record_reader.RecordReader):
  """What the three sources share: options, size and channels, attributes, the first images.

  A subclass gives what `record_reader.RecordReader` reads (`_records`, `_decode`,
  `_describe`), `num_examples`, `example_names` and `content_files`.
  """

  def _finish(
    self,
    name,
    splits,
    image_size,
    channels,
    class_names,
    attributes,
    protected,
    options,
    first,
    preprocess=None,
    labels=None,
  ):
    """Resolves the size and channels (if unset, from the image record `first()` returns with
    its description), reads the attributes CSV and sets `spec`; `labels` "none": every example's
    label is `dataset_api.NO_LABEL` (docs/spec.md §8.8)."""
    self.unlabelled = dataset_api.check_labels_option(labels) is not None
    if image_size is None or channels is None:
      first = self._probe(first)
      image_size = image_size or tuple(int(v) for v in first.shape[:2])
      channels = channels or (1 if first.shape[2] < 3 else 3)
    self._size, self._channels = image_size, channels
    self._csv = (
      attributes_csv.AttributeCsv(filesystem.user_path(attributes)) if attributes else None
    )
    self._rows, self._first = None, {}
    names = tuple(self._csv.names) if self._csv else ()
    protected = user_inputs.parse_names(protected, "protected") or ()
    self._preprocess = preprocess_lib.resolve(preprocess) if preprocess else None
    options = dict(
      options,
      image_size=list(image_size),
      channels=channels,
      attributes=self._csv.path if self._csv else None,
      protected=list(protected) or None,
      preprocess=preprocess,
      labels=dataset_api.LABELS_NONE if self.unlabelled else None,
    )
    super().__init__(
      dataset_api.DatasetSpec(
        name=name,
        num_classes=len(class_names),
        image_shape=tuple(image_size) + (channels,),
        splits=tuple(splits),
        eval_split="test",
        class_names=tuple(class_names),
        attribute_names=names,
        protected_attributes=protected,
        options={k: v for k, v in options.items() if v is not None},
      )
    )
    self.check_attributes(protected)
    if self._csv:
      self._index_attribute_rows()

  def model_inputs(self, examples):
    """`examples` with the images the model takes (`preprocess`, if the option is set)."""
    if self._preprocess is None:
      return examples
    return dataclasses.replace(examples, images=self._preprocess(examples.images))

  def _probe(self, first):
    """The first example's decoded image (eagerly), or a DataError naming it."""
    record, description = first()
    try:
      return self._decode(record)
    except tf.errors.OpError as e:
      raise dataset_api.DataError(
        f"cannot decode {description}: {user_inputs.tf_message(e)}"
      ) from e

  @abc.abstractmethod
  def content_files(self, split):
    """The files whose bytes identify `split` (`fingerprint`): (name, path) pairs."""

  def _csv_files(self):
    return [(self._csv.path, self._csv.path)] if self._csv else []

  def take(self, split, n):
    """The first `n` examples of `split`, decoded once for this data set object: the plan's
    checks read the same first images."""
    first = self._first.get(split)
    if first is None or len(first.ids) < n:  # at least `FIRST`: one decode for the checks
      head = max(n, FIRST)
      if head == FIRST:
        first = self._decode_head(split, head)
      else:
        first = dataset_api.concatenate(self._decode_batches(split, min(head, 1024), head))
      self._first[split] = first
    return first.take(np.arange(min(n, len(first.ids))))  # a copy: the caller may change it

  def with_recorded(self, **options):
    """A copy of this data set whose `spec.options` record `options`, which must be among the
    options recorded only (`RECORDED`): nothing is listed or read again."""
    unknown = sorted(set(options) - set(RECORDED))
    if unknown:
      raise ValueError(f"options {unknown} are not recorded only ({', '.join(RECORDED)})")
    copy = _copy.copy(self)
    copy.spec = dataclasses.replace(self.spec, options=dict(self.spec.options, **options))
    return copy

  @abc.abstractmethod
  def example_names(self, split):
    """One display name per example of `split`, in its fixed order."""

  def _split_ids(self, split):
    """int64 ids of `split` in order (default: positions)."""
    return np.arange(self.num_examples(split), dtype=np.int64)

  # Attributes -------------------------------------------------------------------------------

  def _path_rows(self):
    """(split, id) of every CSV row from `path` keys (folder sets override)."""
    raise dataset_api.DataError(
      f"attributes CSV {self._csv.path}: data set {self.spec.name!r} has no "
      "paths; key the rows by 'id'"
    )

  def _index_attribute_rows(self):
    """Matches the attributes CSV's rows to the examples (`attribute_rows`)."""
    self._rows = attribute_rows.AttributeRows(self._csv, self, self._path_rows)

  def _check_attribute_rows(self, split):
    """Checks that `split`'s examples have their attribute rows (`attribute_rows`)."""
    if self._rows is not None:
      self._rows.check(split)

  def _attributes_of(self, split, ids):
    """The CSV's attributes of the examples `ids` of `split`."""
    return {} if self._rows is None else self._rows.of(split, ids)
