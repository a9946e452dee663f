"""The `tfrecord` data set: the user's own files of `tf.train.Example`s, read in a fixed
order, each an encoded image, a label and an optional id.

Registered as `tfrecord`, spelled `tfrecord:GLOB` (`sources.parse`); its spec file names the
features (docs/artifacts/data.md). What it shares with the `folder` and `tfds` data sets
(decoding, attributes, batches, splits) is `user_sets`.
"""

import json

import numpy as np
import tensorflow as tf

from tf_forget.artifacts import errors
from tf_forget.artifacts import filesystem
from tf_forget.data import dataset_api
from tf_forget.data import images
from tf_forget.data import user_inputs
from tf_forget.data import user_sets

# TF-slim / build_image_data.py feature names, used for keys the spec file does not give.
DEFAULT_TFRECORD_SPEC = {"image": "image/encoded", "label": "image/class/label"}
TFRECORD_SPEC_KEYS = ("image", "label", "id", "class_names")


class TfRecord(user_sets.UserDataset):
  """TFRecord files of `tf.train.Example`s: an encoded image, an int64 label, an optional id.

  Files: `sorted(tf.io.gfile.glob(pattern))`, read in that order, one "test" split. The spec
  file (JSON, docs/artifacts/data.md) names the features: {"image": ..., "label": ...,
  "id": ... (optional), "class_names": [...] (optional)}; features it does not name default to
  `DEFAULT_TFRECORD_SPEC`. ids: the `id` feature's values (unique) if named, else the record's
  position.
  """

  def __init__(
    self,
    pattern=None,
    spec=None,
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
    """Lists the files and reads the spec (and the first record if size or channels is unset).

    Args:
      pattern: a file glob (local or `gs://`).
      spec: path of the JSON feature spec file.
      image_size: (H, W) or int; default the first image's size.
      channels: 1 or 3; default from the first image.
      class_names: the classes in label order; default the spec file's `class_names`.
      attributes: path of an attributes CSV keyed by `id` (`attributes_csv.AttributeCsv`).
      protected: attribute names the subgroup audit gates.
      preprocess: what the model takes (`tf_forget.data.preprocess`); default raw pixels.
      calibration: recorded only (`user_sets`, option `calibration`).
      train_data: recorded only (`user_sets`, option `train_data`).
      deployment_images: recorded only (`user_sets`, option `deployment_images`).
      content: recorded only (`user_sets`, option `content`).
      labels: "none": no labels (docs/spec.md §8.8; every label `dataset_api.NO_LABEL`).

    Raises:
      dataset_api.DataError: no file matches, bad spec file, no class names, bad option (one line).
    """
    if not pattern:
      raise dataset_api.DataError("data set 'tfrecord' needs pattern (spell it tfrecord:GLOB)")
    self.pattern = filesystem.user_path(pattern)
    try:
      self._paths = sorted(tf.io.gfile.glob(self.pattern))
    except tf.errors.OpError as e:
      raise dataset_api.DataError(
        f"cannot list tfrecord files {self.pattern}: {user_inputs.tf_message(e)}"
      ) from e
    if not self._paths:
      raise dataset_api.DataError(f"no file matches tfrecord pattern {self.pattern}")
    self._spec_path = filesystem.user_path(spec) if spec else None
    self._fields = self._read_spec()
    given = user_inputs.parse_names(class_names, "class_names")
    names = given or user_inputs.parse_names(
      self._fields.get("class_names"), f"class_names of {spec}"
    )
    if not names:
      raise dataset_api.DataError(
        f"tfrecord {self.pattern} needs class_names (the option, or "
        "\"class_names\" in the spec file)"
      )
    self._labelled = dataset_api.check_labels_option(labels) is None
    self._parse_spec = {self._fields["image"]: tf.io.FixedLenFeature([], tf.string)}
    if self._labelled:  # without labels the label feature is not read (it may be absent)
      self._parse_spec[self._fields["label"]] = tf.io.FixedLenFeature([], tf.int64)
    if self._fields.get("id"):
      self._parse_spec[self._fields["id"]] = tf.io.FixedLenFeature([], tf.int64)
    self._count, self._ids = None, None
    self._finish(
      "tfrecord",
      ("test",),
      images.parse_image_size(image_size),
      images.parse_channels(channels),
      names,
      attributes,
      protected,
      {
        "pattern": self.pattern,
        "spec": self._spec_path,
        "class_names": list(given) if given else None,
        "calibration": calibration,
        "train_data": train_data,
        "deployment_images": deployment_images,
        "content": content,
      },
      self._first,
      preprocess,
      labels,
    )

  def content_files(self, split):
    """The TFRecord files (by path), the spec file and the attributes CSV."""
    self.check_split(split)
    files = [(path, path) for path in self._paths]
    if self._spec_path:
      files.append((self._spec_path, self._spec_path))
    return files + self._csv_files()

  def _read_spec(self):
    fields = {}
    if self._spec_path:
      try:
        fields = json.loads(user_inputs.read_text(self._spec_path, "tfrecord spec"))
      except ValueError as e:
        raise dataset_api.DataError(
          f"tfrecord spec {self._spec_path} is not JSON: {errors.one_line(e, 120)}"
        ) from e
      if not isinstance(fields, dict):
        raise dataset_api.DataError(f"tfrecord spec {self._spec_path} must be a JSON object")
      for key, value in fields.items():
        if key not in TFRECORD_SPEC_KEYS:
          raise dataset_api.DataError(
            f"tfrecord spec {self._spec_path} has unknown key {key!r} "
            f"(keys: {', '.join(TFRECORD_SPEC_KEYS)})"
          )
        if key != "class_names" and not (isinstance(value, str) and value):
          raise dataset_api.DataError(
            f"tfrecord spec {self._spec_path}: {key!r} must name a feature"
          )
    return dict(DEFAULT_TFRECORD_SPEC, **fields)

  def _first(self):
    try:
      record = next(iter(self._parsed()))
    except tf.errors.OpError as e:
      message = user_inputs.tf_message(e)
      if self._labelled and self._fields["label"] in message:
        message += " (records without labels: give --labels=none)"
      raise dataset_api.DataError(f"cannot read {self._describe('test', 0)}: {message}") from e
    return record[0], self._describe("test", 0)

  def _records(self, split):
    self.check_split(split)
    return self._parsed()

  def _parsed(self):
    """(encoded image, label, id or position) of every record, in file order."""
    image, label, ident = (self._fields["image"], self._fields["label"], self._fields.get("id"))

    def parse(i, serialized):
      ex = tf.io.parse_single_example(serialized, self._parse_spec)
      value = ex[label] if self._labelled else tf.constant(dataset_api.NO_LABEL, tf.int64)
      return ex[image], value, ex[ident] if ident else i

    return tf.data.TFRecordDataset(self._paths).enumerate().map(parse)

  def _decode(self, record):
    return images.decode_image_bytes(record)

  def num_examples(self, split):
    self.check_split(split)
    if self._count is None:
      try:
        self._count = int(
          tf.data.TFRecordDataset(self._paths).reduce(np.int64(0), lambda n, _: n + 1)
        )
      except tf.errors.OpError as e:
        raise dataset_api.DataError(
          f"cannot read tfrecord files {self.pattern}: {user_inputs.tf_message(e)}"
        ) from e
    return self._count

  def _split_ids(self, split):
    """The `id` feature's values in record order (read once, no image decoded), or positions."""
    if not self._fields.get("id"):
      return super()._split_ids(split)
    if self._ids is None:
      ds = self._records(split).map(lambda r, label, i: (label, label, i))
      ids = [b[2].numpy() for _, b in self._stream_unchecked(split, ds)]
      ids = np.concatenate(ids) if ids else np.zeros(0, np.int64)
      order = np.argsort(ids, kind="stable")
      twice = np.flatnonzero(ids[order][1:] == ids[order][:-1])
      if twice.size:
        position = int(order[twice[0] + 1])
        raise dataset_api.DataError(f"{self._describe(split, position)} repeats id {ids[position]}")
      self._ids = ids
    return self._ids

  def example_names(self, split):
    self.check_split(split)
    return [str(i) for i in self._split_ids(split)]

  def _describe(self, split, position, example_id=None):
    if position is None:
      return f"the record with id {example_id} of tfrecord {self.pattern}"
    return f"record {position} of tfrecord {self.pattern}"
