"""Data sets read through TensorFlow Datasets (tfds): CelebA, CIFAR-10/100, MNIST, Fashion-MNIST,
ImageNet 2012.

Nothing is downloaded unless `download=True` is passed (tests use `tfds.testing.mock_data`).
Splits are read in the data set's fixed order (`shuffle_files=False`); an example's id is its
position in that order, so predictions of different models align (docs/artifacts/data.md).

* `celeb_a` (000 §2.4, 004 §2): target `Blond_Hair` (positive = blond, docs/spec.md §2.4); all 40
  attributes kept per example; protected attributes `Male`, `Young`; native 218×178 unless
  `image_size=(h, w)` is given (recorded in the data set's options and so in member configs);
  tfds splits train / validation / test.
* `cifar10`, `cifar100` (fine labels), `mnist`, `fashion_mnist`: native sizes.
* `imagenet2012`: needs the manually downloaded archives in `manual_dir` (tfds' ImageNet
  builder); images centre-cropped (fraction 0.875) and resized to `image_size` (default 224²),
  the usual ResNet-50 evaluation preprocessing; the audit reports on `validation`.

Scaling: `num_examples` is the tfds metadata (`info.splits[split]`, which also
answers tfds slices such as "train[:90%]"), falling back to counting records read with the
image left encoded (`tfds.decode.SkipDecoding`); `annotation_batches` reads labels and
attributes with the image left encoded; `train_records` yields (encoded image, label) so the
trainer shuffles and skips records and decodes (`decode_record`, the tfds image feature's own
decoder, then `_image`) only what it trains on, in parallel. Splits may use tfds' slicing
syntax on a known split ("train[:90%]"); ids are then positions in the slice.
"""

import re

import numpy as np
import tensorflow as tf

from tf_forget.data import dataset_api


def _pair(size):
  if size is None:
    return None
  if isinstance(size, int):
    return (size, size)
  h, w = (int(v) for v in size)
  if h <= 0 or w <= 0:
    raise dataset_api.DataError(f"image_size must be positive, got {size!r}")
  return (h, w)


def tfds_lib():
  """The `tensorflow_datasets` module, imported when a data set first needs it (a run on other
  data never does)."""
  import tensorflow_datasets

  return tensorflow_datasets


class TfdsDataset(dataset_api.Dataset):
  """Base class: a tfds data set yielding uint8 images, int64 labels and position ids."""

  TFDS_NAME = None
  NAME = None
  NUM_CLASSES = None
  NATIVE_SHAPE = None  # (H, W, C), or None for variable-size sources
  SPLITS = ("train", "test")
  EVAL_SPLIT = "test"
  LABEL_KEY = "label"
  ATTRIBUTES = ()
  PROTECTED = ()
  # What preparing the data needs besides `tfds build` (a manual download), said in the error.
  PREPARE_NOTE = ""

  def __init__(self, data_dir=None, image_size=None, download=False, manual_dir=None):
    """Configures the data set.

    Args:
      data_dir: tfds data directory (default: tfds' own, `~/tensorflow_datasets`).
      image_size: optional (height, width) to resize to (int for square).
      download: run `download_and_prepare` if the data is not prepared (needs the network).
      manual_dir: directory of manually downloaded archives (ImageNet).
    """
    self._data_dir = data_dir
    self._download = bool(download)
    self._manual_dir = manual_dir
    size = _pair(image_size)
    if size is None and self.NATIVE_SHAPE is None:
      raise dataset_api.DataError(f"data set {self.NAME!r} needs image_size")
    channels = self.NATIVE_SHAPE[2] if self.NATIVE_SHAPE else 3
    shape = (size[0], size[1], channels) if size else tuple(self.NATIVE_SHAPE)
    self._size = size
    options = {"image_size": list(size) if size else None, "data_dir": data_dir}
    super().__init__(
      dataset_api.DatasetSpec(
        name=self.NAME,
        num_classes=self.NUM_CLASSES,
        image_shape=shape,
        splits=self.SPLITS,
        eval_split=self.EVAL_SPLIT,
        class_names=self._class_names(),
        attribute_names=tuple(self.ATTRIBUTES),
        protected_attributes=tuple(self.PROTECTED),
        options=options,
      )
    )

  def _class_names(self):
    return tuple(str(c) for c in range(self.NUM_CLASSES))

  def check_split(self, split):
    """Raises `DataError` unless `split` is a known split, possibly tfds-sliced ("train[:9]")."""
    match = re.fullmatch(r"(\w+)\[[^\]]*\]", split) if isinstance(split, str) else None
    super().check_split(match.group(1) if match else split)

  def _builder(self):
    """The tfds builder (prepared first if `download`); made once per data set object."""
    builder = getattr(self, "_tfds_builder", None)
    if builder is None:
      builder = tfds_lib().builder(self.TFDS_NAME, data_dir=self._data_dir)
      if self._download:
        config = tfds_lib().download.DownloadConfig(manual_dir=self._manual_dir)
        builder.download_and_prepare(download_config=config)
      self._tfds_builder = builder
    return builder

  def _raw(self, split, decode_image=True):
    """The split as tfds yields it, in fixed order.

    Args:
      split: a split name (or a tfds slice of one).
      decode_image: False leaves `image` as its encoded bytes (`tfds.decode.SkipDecoding`).
    """
    self.check_split(split)
    builder = self._builder()
    decoders = None if decode_image else {"image": tfds_lib().decode.SkipDecoding()}
    try:
      return builder.as_dataset(split=split, shuffle_files=False, decoders=decoders)
    except (AssertionError, FileNotFoundError, tf.errors.NotFoundError) as e:
      raise dataset_api.DataError(self._not_prepared()) from e

  def _not_prepared(self):
    """The one-line error for data that is not on disk: where, and how to prepare it.

    Nothing is downloaded here (no `download=True`): the user prepares the data once with
    tfds' own command line and passes its directory.
    """
    where = self._data_dir or "the default tfds data_dir (~/tensorflow_datasets)"
    return (
      f"data set {self.NAME!r} is not prepared in {where}: pass --data_dir=DIR with a "
      f"prepared {self.TFDS_NAME}; prepare it once with `tfds build {self.TFDS_NAME} "
      f"--data_dir=DIR`{self.PREPARE_NOTE}"
    )

  def _image(self, image):
    """uint8 image [H, W, C] at the configured size."""
    if self._size is None:
      return image
    resized = tf.image.resize(image, self._size, method="bilinear", antialias=True)
    return tf.cast(tf.clip_by_value(tf.round(resized), 0, 255), tf.uint8)

  def _label(self, example):
    return tf.cast(example[self.LABEL_KEY], tf.int64)

  def _attributes(self, example):
    return {}

  def _convert(self, example):
    return {
      "image": self._image(example["image"]),
      "label": self._label(example),
      "attributes": self._attributes(example),
    }

  def num_examples(self, split):
    """The split's size from tfds metadata; without metadata, counted with images undecoded."""
    self.check_split(split)
    try:
      return int(self._builder().info.splits[split].num_examples)
    except (KeyError, ValueError, AssertionError):
      pass  # no metadata (e.g. tfds.testing.mock_data): count the records instead
    records = self._raw(split, decode_image=False)
    n = int(records.cardinality())
    if n >= 0:
      return n
    return int(
      records.map(lambda ex: tf.constant(1, tf.int64)).reduce(
        tf.constant(0, tf.int64), lambda total, one: total + one
      )
    )

  def tf_dataset(self, split):
    return self._raw(split).map(
      lambda ex: (self._image(ex["image"]), self._label(ex)),
      num_parallel_calls=tf.data.AUTOTUNE,
      deterministic=True,
    )

  def train_records(self, split):
    """(encoded image bytes, label int64) in fixed order; see `decode_record`."""
    return self._raw(split, decode_image=False).map(
      lambda ex: (ex["image"], self._label(ex)),
      num_parallel_calls=tf.data.AUTOTUNE,
      deterministic=True,
    )

  def decode_record(self, record):
    """(image uint8 [H, W, C] at the configured size, label) of a `train_records` element."""
    encoded, label = record
    image = self._builder().info.features["image"].decode_example(encoded)
    return self._image(image), label

  def annotation_batches(self, split, batch_size):
    ds = self._raw(split, decode_image=False).map(
      lambda ex: {"label": self._label(ex), "attributes": self._attributes(ex)},
      num_parallel_calls=tf.data.AUTOTUNE,
      deterministic=True,
    )
    start = 0
    for batch in tfds_lib().as_numpy(ds.batch(batch_size).prefetch(tf.data.AUTOTUNE)):
      n = len(batch["label"])
      yield dataset_api.Annotations(
        labels=np.asarray(batch["label"], np.int64),
        ids=np.arange(start, start + n, dtype=np.int64),
        attributes={k: np.asarray(v, bool) for k, v in batch["attributes"].items()},
      )
      start += n

  def batches(self, split, batch_size):
    ds = self._raw(split).map(
      self._convert, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True
    )
    start = 0
    for batch in tfds_lib().as_numpy(ds.batch(batch_size).prefetch(tf.data.AUTOTUNE)):
      n = len(batch["label"])
      yield dataset_api.Examples(
        images=np.asarray(batch["image"], np.uint8),
        labels=np.asarray(batch["label"], np.int64),
        ids=np.arange(start, start + n, dtype=np.int64),
        attributes={k: np.asarray(v, bool) for k, v in batch["attributes"].items()},
      )
      start += n


# The 40 CelebA attributes, in tfds' order (tfds.image.CelebA).
CELEB_A_ATTRIBUTES = (
  "5_o_Clock_Shadow",
  "Arched_Eyebrows",
  "Attractive",
  "Bags_Under_Eyes",
  "Bald",
  "Bangs",
  "Big_Lips",
  "Big_Nose",
  "Black_Hair",
  "Blond_Hair",
  "Blurry",
  "Brown_Hair",
  "Bushy_Eyebrows",
  "Chubby",
  "Double_Chin",
  "Eyeglasses",
  "Goatee",
  "Gray_Hair",
  "Heavy_Makeup",
  "High_Cheekbones",
  "Male",
  "Mouth_Slightly_Open",
  "Mustache",
  "Narrow_Eyes",
  "No_Beard",
  "Oval_Face",
  "Pale_Skin",
  "Pointy_Nose",
  "Receding_Hairline",
  "Rosy_Cheeks",
  "Sideburns",
  "Smiling",
  "Straight_Hair",
  "Wavy_Hair",
  "Wearing_Earrings",
  "Wearing_Hat",
  "Wearing_Lipstick",
  "Wearing_Necklace",
  "Wearing_Necktie",
  "Young",
)


class CelebA(TfdsDataset):
  """CelebA, target `Blond_Hair` (1 = blond), all 40 attributes kept (004 §2)."""

  TFDS_NAME = "celeb_a"
  NAME = "celeb_a"
  PREPARE_NOTE = (
    " (CelebA may need a manual download: put its files in DIR/downloads/manual, "
    "as tfds' celeb_a page says)"
  )
  NUM_CLASSES = 2
  NATIVE_SHAPE = (218, 178, 3)
  SPLITS = ("train", "validation", "test")
  TARGET = "Blond_Hair"
  ATTRIBUTES = CELEB_A_ATTRIBUTES
  PROTECTED = ("Male", "Young")

  def _class_names(self):
    return ("not_blond", "blond")

  def _label(self, example):
    return tf.cast(example["attributes"][self.TARGET], tf.int64)

  def _attributes(self, example):
    return {name: example["attributes"][name] for name in self.ATTRIBUTES}


class Cifar10(TfdsDataset):
  TFDS_NAME = NAME = "cifar10"
  NUM_CLASSES = 10
  NATIVE_SHAPE = (32, 32, 3)


class Cifar100(TfdsDataset):
  TFDS_NAME = NAME = "cifar100"
  NUM_CLASSES = 100
  NATIVE_SHAPE = (32, 32, 3)


# Fashion-MNIST's class names, in label order (Xiao et al. 2017, Table 2).
FASHION_MNIST_CLASSES = (
  "T-shirt/top",
  "Trouser",
  "Pullover",
  "Dress",
  "Coat",
  "Sandal",
  "Shirt",
  "Sneaker",
  "Bag",
  "Ankle boot",
)


class Mnist(TfdsDataset):
  TFDS_NAME = NAME = "mnist"
  NUM_CLASSES = 10
  NATIVE_SHAPE = (28, 28, 1)


class FashionMnist(TfdsDataset):
  TFDS_NAME = NAME = "fashion_mnist"
  NUM_CLASSES = 10
  NATIVE_SHAPE = (28, 28, 1)

  def _class_names(self):
    return FASHION_MNIST_CLASSES


class Imagenet2012(TfdsDataset):
  """ImageNet 2012 from manually downloaded archives; centre crop 0.875, resize to 224²."""

  TFDS_NAME = NAME = "imagenet2012"
  PREPARE_NOTE = (
    " (ImageNet needs its archives downloaded by hand into DIR/downloads/manual, "
    "as tfds' imagenet2012 page says)"
  )
  NUM_CLASSES = 1000
  NATIVE_SHAPE = None
  SPLITS = ("train", "validation")
  EVAL_SPLIT = "validation"

  def __init__(self, data_dir=None, image_size=224, download=False, manual_dir=None):
    if download and not (manual_dir and tf.io.gfile.isdir(manual_dir)):
      raise dataset_api.DataError(
        "data set 'imagenet2012' needs manual_dir: a directory holding "
        "ILSVRC2012_img_train.tar and ILSVRC2012_img_val.tar"
      )
    super().__init__(
      data_dir=data_dir, image_size=image_size, download=download, manual_dir=manual_dir
    )

  def _image(self, image):
    cropped = tf.image.central_crop(image, 0.875)
    return super()._image(cropped)
