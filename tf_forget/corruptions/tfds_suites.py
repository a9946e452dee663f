"""Published robustness suites through tfds loaders, as `Dataset`s (000 §4, 003 §5 / App. D).

A plain dict registry, `SUITES` (name -> loader class), with `get(name, **options)` as
`tf_forget.data.registry.get`; which suite a data set's audit uses is its protocol's
(`tf_forget.data.protocols`, `published`), read by `tf_forget.corruptions.published_suites`.

* `cifar10_corrupted` — the published CIFAR-10-C (Hendrycks & Dietterich 2019; 003 §5 at
  severity 3): splits `<corruption>@<severity>` (docs/spec.md §1.1) for the 19 corruptions x 5
  severities, each the 10,000 CIFAR-10 test images in test order, so ids (positions) align
  with `cifar10`'s test split. tfds names `frosted_glass_blur` / `elastic` map to our
  `glass_blur` / `elastic_transform`.
* `cifar10_1` — CIFAR-10.1 (Recht et al. 2018; 003 Table 11's nominal test distribution),
  split `test`, option `version` ("v6" default, or "v4").
* `imagenet_a` — ImageNet-A (000 §4 Table 8), 7,500 images, 1000-way ImageNet labels, split
  `test`; centre crop 0.875 and resize to `image_size` as `imagenet2012`.
* `imagenet2012_corrupted` — tfds' *regeneration* of ImageNet-C from a manually downloaded
  ImageNet validation set (tfds' own corruption code: 224 px constants, ImageMagick, a fixed
  motion angle): NOT the published ImageNet-C files. Splits `<corruption>@<severity>` of the
  validation set at 224x224 (tfds centre-crops 224/256 of the short side and resizes, as
  `imagenet2012`'s 0.875 crop). The `source` option records this.

Every loader takes `image_size` so that its images match the audited data set's input (resized by
`TfdsDataset._image`, the same function as the clean split). `identity(split)` names what a split
reads — the tfds builder's full name (name/config/version), its split and the options — so that
predictions made from another suite version are stale (`tf_forget.evaluate.population_eval`
`split_ids`). A split whose data is not prepared is a one-line `DataError` naming the tfds builder
and the data_dir. Nothing is downloaded unless `download=True` (tests use `tfds.testing.mock_data`).
"""

import inspect

import tensorflow as tf

from tf_forget.artifacts import hashing
from tf_forget.corruptions import corruption_registry
from tf_forget.data import dataset_api
from tf_forget.data import tfds_sets

_CIFAR10_C_NAMES = {"glass_blur": "frosted_glass_blur", "elastic_transform": "elastic"}


def _corrupted_splits():
  return tuple(
    corruption_registry.split_name(c, s)
    for c in corruption_registry.CORRUPTIONS
    for s in range(1, 6)
  )


class _Suite(tfds_sets.TfdsDataset):
  """A published suite: one tfds builder per split (or one for all), read in fixed order."""

  SOURCE_SPLIT = None  # the tfds split read; None: the split itself

  def tfds_builder_name(self, split):
    """The tfds builder name that holds `split` (e.g. "cifar10_corrupted/fog_1")."""
    del split
    return self.TFDS_NAME

  def _tfds_builder(self, split):
    """The tfds builder of `split` (prepared first if `download`), made once per name."""
    builders = getattr(self, "_builders", None)
    if builders is None:
      builders = self._builders = {}
    name = self.tfds_builder_name(split)
    if name not in builders:
      builder = tfds_sets.tfds_lib().builder(name, data_dir=self._data_dir)
      if self._download:
        config = tfds_sets.tfds_lib().download.DownloadConfig(manual_dir=self._manual_dir)
        builder.download_and_prepare(download_config=config)
      builders[name] = builder
    return builders[name]

  def _raw(self, split, decode_image=True):
    """The split as tfds yields it (fixed order); `DataError` naming the builder if unprepared."""
    self.check_split(split)
    builder = self._tfds_builder(split)
    decoders = None if decode_image else {"image": tfds_sets.tfds_lib().decode.SkipDecoding()}
    try:
      return builder.as_dataset(
        split=self.SOURCE_SPLIT or split, shuffle_files=False, decoders=decoders
      )
    except (AssertionError, FileNotFoundError, tf.errors.NotFoundError) as e:
      where = self._data_dir or "the default tfds data_dir"
      raise dataset_api.DataError(
        f"tfds builder {self.tfds_builder_name(split)!r} (split {split!r} of "
        f"{self.NAME!r}) is not prepared in {where}: download_and_prepare it there"
      ) from e

  def check_prepared(self, split):
    """Raises the one-line `DataError` of `_raw` if `split` is not prepared (reads nothing)."""
    self._raw(split, decode_image=False)

  def num_examples(self, split):
    """The split's size from tfds metadata; without metadata, its records counted undecoded."""
    self.check_split(split)
    info = self._tfds_builder(split).info
    try:
      return int(info.splits[self.SOURCE_SPLIT or split].num_examples)
    except (KeyError, ValueError, AssertionError):
      pass  # no metadata (tfds.testing.mock_data): count the records
    return int(
      self._raw(split, decode_image=False).reduce(
        tf.constant(0, tf.int64), lambda total, _: total + 1
      )
    )

  def decode_record(self, record):
    """Raises `DataError`: a published suite is a test set, never trained on."""
    raise dataset_api.DataError(f"{self.NAME!r} is a test suite: it has no training records")

  def identity(self, split):
    """sha256 of what `split` reads: tfds full name (with version), split and options."""
    self.check_split(split)
    info = self._tfds_builder(split).info
    options = {
      str(k): (v if isinstance(v, (bool, int, float, str, type(None))) else repr(v))
      for k, v in self.spec.options.items()
    }
    return hashing.sha256_json(
      {"tfds": info.full_name, "split": self.SOURCE_SPLIT or split, "options": options}
    )


class _ConfigPerSplit(_Suite):
  """A tfds data set whose `<corruption>@<severity>` splits are builder configs."""

  SOURCE_SPLIT = "test"
  RENAME = {}

  def tfds_builder_name(self, split):
    corruption, severity = corruption_registry.parse_split_name(split)
    return f"{self.TFDS_NAME}/{self.RENAME.get(corruption, corruption)}_{severity}"

  def _builder_name(self, split):  # kept for callers of the first version
    return self.tfds_builder_name(split)


class Cifar10Corrupted(_ConfigPerSplit):
  """CIFAR-10-C as published (tfds `cifar10_corrupted`)."""

  TFDS_NAME = NAME = "cifar10_corrupted"
  NUM_CLASSES = 10
  NATIVE_SHAPE = (32, 32, 3)
  SPLITS = _corrupted_splits()
  EVAL_SPLIT = "gaussian_noise@3"
  RENAME = _CIFAR10_C_NAMES

  def __init__(self, data_dir=None, image_size=None, download=False):
    super().__init__(data_dir=data_dir, image_size=image_size, download=download)


class Imagenet2012Corrupted(_ConfigPerSplit):
  """tfds' regeneration of ImageNet-C from manually downloaded ImageNet (see module doc)."""

  TFDS_NAME = NAME = "imagenet2012_corrupted"
  NUM_CLASSES = 1000
  NATIVE_SHAPE = (224, 224, 3)
  SPLITS = _corrupted_splits()
  EVAL_SPLIT = "gaussian_noise@3"
  SOURCE_SPLIT = "validation"

  def __init__(self, data_dir=None, image_size=None, download=False, manual_dir=None):
    super().__init__(
      data_dir=data_dir, image_size=image_size, download=download, manual_dir=manual_dir
    )
    self.spec.options["source"] = (
      "tfds regeneration from manually downloaded ImageNet (not the published ImageNet-C)"
    )


class Cifar10_1(_Suite):
  """CIFAR-10.1 (tfds `cifar10_1`, configs v4 / v6)."""

  TFDS_NAME = NAME = "cifar10_1"
  NUM_CLASSES = 10
  NATIVE_SHAPE = (32, 32, 3)
  SPLITS = ("test",)

  def __init__(self, data_dir=None, version="v6", image_size=None, download=False):
    if version not in ("v4", "v6"):
      raise dataset_api.DataError(f"cifar10_1 version must be 'v4' or 'v6', got {version!r}")
    self.TFDS_NAME = f"cifar10_1/{version}"
    super().__init__(data_dir=data_dir, image_size=image_size, download=download)
    self.spec.options["version"] = version


class ImagenetA(_Suite):
  """ImageNet-A (tfds `imagenet_a`), preprocessed like `imagenet2012`."""

  TFDS_NAME = NAME = "imagenet_a"
  NUM_CLASSES = 1000
  NATIVE_SHAPE = None
  SPLITS = ("test",)

  def __init__(self, data_dir=None, image_size=224, download=False):
    super().__init__(data_dir=data_dir, image_size=image_size, download=download)

  def _image(self, image):
    return super()._image(tf.image.central_crop(image, 0.875))


SUITES = {
  "cifar10_corrupted": Cifar10Corrupted,
  "cifar10_1": Cifar10_1,
  "imagenet_a": ImagenetA,
  "imagenet2012_corrupted": Imagenet2012Corrupted,
}


def get(name, **options):
  """Builds the suite `name` with `options` (as `tf_forget.data.registry.get`).

  Args:
    name: a key of `SUITES`.
    **options: loader keyword arguments (data_dir, image_size, version, ...); `None` values
      are dropped.

  Returns:
    The suite, a `dataset_api.Dataset`.

  Raises:
    dataset_api.DataError: unknown name or option, or an option the loader rejects.
  """
  if name not in SUITES:
    raise dataset_api.DataError(f"unknown published suite {name!r} (known: {', '.join(SUITES)})")
  options = {k: v for k, v in options.items() if v is not None}
  accepted = inspect.signature(SUITES[name]).parameters
  for key in options:
    if key not in accepted:
      raise dataset_api.DataError(
        f"published suite {name!r} takes no option {key!r} (options: {', '.join(accepted)})"
      )
  return SUITES[name](**options)
