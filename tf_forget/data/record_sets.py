"""The `tfds` and `tfrecord` data sets: records read in a fixed order, each an
encoded image, a label and an id.

`Tfds` reads any tfds data set the user prepared, `TfRecord` the user's own files of
`tf.train.Example`s (its spec file: docs/artifacts/data.md). Registered as `tfds` and `tfrecord`,
spelled `tfds:NAME[/CONFIG][:SPLIT]` and `tfrecord:GLOB` (`sources.parse`). What they share
with the `folder` data set (decoding, attributes, batches, splits) is `user_sets`.
"""

import json

import numpy as np
import tensorflow as tf

from tf_forget.artifacts import errors
from tf_forget.artifacts import filesystem
from tf_forget.data import dataset_api
from tf_forget.data import images
from tf_forget.data import tfds_sets
from tf_forget.data import user_inputs
from tf_forget.data import user_sets

# TF-slim / build_image_data.py feature names, used for keys the spec file does not give.
DEFAULT_TFRECORD_SPEC = {"image": "image/encoded", "label": "image/class/label"}
TFRECORD_SPEC_KEYS = ("image", "label", "id", "class_names")


def _nested(mapping, key):
  """`mapping[a][b]` for a key "a/b" (tfds features and examples)."""
  for part in key.split("/"):
    mapping = mapping[part]
  return mapping


class Tfds(user_sets.UserDataset):
  """Any tfds image classification data set prepared in `data_dir` (nothing is downloaded).

  `split` (a tfds split, slices allowed: "test[:50%]") is read as "test", `train_split` if
  given as "train"; ids are positions in tfds' fixed order (`shuffle_files=False`). Classes:
  `class_names`, else the label feature's names (a `ClassLabel`).
  """

  def __init__(
    self,
    tfds_name=None,
    config=None,
    split="test",
    train_split=None,
    data_dir=None,
    image_size=None,
    channels=None,
    image_key="image",
    label_key="label",
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
    """Builds the tfds builder (its features; no data is read).

    Args:
      tfds_name: the tfds data set name, e.g. "mnist" (not `name`: that is `registry.get`'s
        own first argument).
      config: its builder config, if any.
      split: the tfds split read as "test" (the eval split).
      train_split: optional tfds split read as "train".
      data_dir: the tfds data directory (default: tfds' own).
      image_size: (H, W) or int; default the image feature's fixed size.
      channels: 1 or 3; default the image feature's.
      image_key: the image feature ("a/b" for nested features).
      label_key: the int label feature.
      class_names: the classes in label order; default the label feature's names.
      attributes: path of an attributes CSV keyed by `id` (`attributes_csv.AttributeCsv`).
      protected: attribute names the subgroup audit gates.
      preprocess: what the model takes (`tf_forget.data.preprocess`); default raw pixels.
      calibration: recorded only (`user_sets`, option `calibration`).
      train_data: recorded only (`user_sets`, option `train_data`).
      deployment_images: recorded only (`user_sets`, option `deployment_images`).
      content: recorded only (`user_sets`, option `content`).
      labels: "none": no labels (docs/spec.md §8.8; every label `dataset_api.NO_LABEL`).

    Raises:
      dataset_api.DataError: unknown data set, config or feature, or a bad option (one line).
    """
    name = tfds_name
    if not name:
      raise dataset_api.DataError(
        "data set 'tfds' needs tfds_name (spell it tfds:NAME[/CONFIG][:SPLIT])"
      )
    self._name = f"{name}/{config}" if config else str(name)
    self._data_dir = filesystem.user_path(data_dir)
    self._splits = {"train": train_split, "test": split} if train_split else {"test": split}
    self._image_key, self._label_key = image_key, label_key
    self._counts = {}
    self._builder = self._tfds_builder(name, config)
    features = self._builder.info.features
    self._image_feature = self._image_of(features)
    given, names = self._class_names(features, class_names)
    size, channels = self._image_shape(image_size, channels)
    self._finish(
      "tfds",
      self._splits,
      size,
      channels,
      names,
      attributes,
      protected,
      {
        "tfds_name": str(name),
        "config": config,
        "split": split,
        "train_split": train_split,
        "data_dir": self._data_dir,
        "image_key": image_key,
        "label_key": label_key,
        "class_names": list(given) if given else None,
        "calibration": calibration,
        "train_data": train_data,
        "deployment_images": deployment_images,
        "content": content,
      },
      None,
      preprocess,
      labels,
    )

  def _tfds_builder(self, name, config):
    kwargs = {"config": config} if config else {}
    try:
      return tfds_sets.tfds_lib().builder(str(name), data_dir=self._data_dir, **kwargs)
    except tfds_sets.tfds_lib().core.registered.DatasetNotFoundError as e:
      raise dataset_api.DataError(f"tfds has no data set {name!r}") from e
    except (ValueError, KeyError) as e:
      raise dataset_api.DataError(
        f"cannot build tfds data set {self._name!r}: {errors.one_line(e, 160)}"
      ) from e

  def _image_of(self, features):
    """The `image_key` feature, a uint8 image."""
    feature = self._feature(features, self._image_key, "image_key")
    if not isinstance(feature, tfds_sets.tfds_lib().features.Image) or feature.np_dtype != np.uint8:
      raise dataset_api.DataError(
        f"image_key {self._image_key!r} of tfds {self._name!r} is not a uint8 image feature"
      )
    return feature

  def _class_names(self, features, class_names):
    """(the `class_names` option, the classes): the option, else the label feature's names."""
    label = self._feature(features, self._label_key, "label_key")
    given = user_inputs.parse_names(class_names, "class_names")
    names = given or (
      tuple(label.names) if isinstance(label, tfds_sets.tfds_lib().features.ClassLabel) else None
    )
    if not names:
      raise dataset_api.DataError(
        f"label_key {self._label_key!r} of tfds {self._name!r} has no class names: pass class_names"
      )
    return given, names

  def _image_shape(self, image_size, channels):
    """(H, W) and channels: the options, else the image feature's."""
    h, w, c = self._image_feature.shape
    size = images.parse_image_size(image_size) or ((h, w) if h and w else None)
    if size is None:
      raise dataset_api.DataError(
        f"tfds {self._name!r} has images of varying size: pass image_size"
      )
    return size, images.parse_channels(channels) or (1 if c and c < 3 else 3)

  def _feature(self, features, key, option):
    try:
      return _nested(features, key)
    except (KeyError, TypeError) as e:
      raise dataset_api.DataError(
        f"tfds {self._name!r} has no feature {key!r} ({option}; features: "
        f"{', '.join(features.keys())})"
      ) from e

  def _raw(self, split, decode_image):
    self.check_split(split)
    decoders = None
    if not decode_image:
      decoders = tfds_sets.tfds_lib().decode.SkipDecoding()
      for part in reversed(self._image_key.split("/")):
        decoders = {part: decoders}
    tfds_split = self._splits[split]
    try:
      return self._builder.as_dataset(split=tfds_split, shuffle_files=False, decoders=decoders)
    except (AssertionError, FileNotFoundError, tf.errors.NotFoundError) as e:
      where = self._data_dir or "the default tfds data_dir (~/tensorflow_datasets)"
      raise dataset_api.DataError(
        f"tfds {self._name!r} is not prepared in {where}: prepare it once "
        f"with `tfds build {self._name} --data_dir=DIR`"
      ) from e
    except (ValueError, KeyError) as e:
      raise dataset_api.DataError(
        f"cannot read split {tfds_split!r} of tfds {self._name!r}: {errors.one_line(e, 160)}"
      ) from e

  def _records(self, split):
    return (
      self._raw(split, decode_image=False)
      .enumerate()
      .map(
        lambda i, ex: (
          _nested(ex, self._image_key),
          tf.cast(_nested(ex, self._label_key), tf.int64),
          i,
        )
      )
    )

  def _decode(self, record):
    return self._image_feature.decode_example(record)

  def num_examples(self, split):
    """From tfds metadata; without it, counted with images undecoded."""
    self.check_split(split)
    if split not in self._counts:
      try:
        self._counts[split] = int(self._builder.info.splits[self._splits[split]].num_examples)
      except (KeyError, ValueError, AssertionError):  # no metadata (tfds.testing.mock_data)
        self._counts[split] = int(self._records(split).reduce(np.int64(0), lambda n, _: n + 1))
    return self._counts[split]

  def example_names(self, split):
    return [str(i) for i in range(self.num_examples(split))]

  def content_files(self, split):
    """The prepared data set's `dataset_info.json` (its version, split sizes and the download
    checksums tfds recorded; the shards themselves are not re-read), and the attributes CSV."""
    self.check_split(split)
    files = []
    try:
      info = filesystem.join(str(self._builder.data_dir), "dataset_info.json")
      if filesystem.isfile(info):
        files.append((f"{self._name}/{self._builder.info.version}/dataset_info.json", info))
    except (OSError, AssertionError, ValueError):  # not prepared: the read reports it
      pass
    return files + self._csv_files()

  def _describe(self, split, position, example_id=None):
    position = int(example_id) if position is None else position
    return f"example {position} of split {self._splits[split]!r} of tfds {self._name!r}"


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
