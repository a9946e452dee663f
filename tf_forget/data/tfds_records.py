"""The `tfds` data set: any tfds image classification data set the user prepared, its records
read in tfds' fixed order, each an encoded image, a label and an id.

Registered as `tfds`, spelled `tfds:NAME[/CONFIG][:SPLIT]` (`sources.parse`); nothing is
downloaded. What it shares with the `folder` and `tfrecord` data sets (decoding, attributes,
batches, splits) is `user_sets`.
"""

import numpy as np
import tensorflow as tf

from tf_forget.artifacts import errors
from tf_forget.artifacts import filesystem
from tf_forget.data import dataset_api
from tf_forget.data import images
from tf_forget.data import tfds_sets
from tf_forget.data import user_inputs
from tf_forget.data import user_sets


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
