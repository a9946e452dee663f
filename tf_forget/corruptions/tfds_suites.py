"""Published robustness suites through tfds loaders, as `Dataset`s (000 §4, 003 §5 / App. D).

* `cifar10_corrupted` — the published CIFAR-10-C (Hendrycks & Dietterich 2019; 003 §5 at
  severity 3): splits `<corruption>@<severity>` (SPEC §1.1) for the 19 corruptions x 5
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
  validation set at 224x224. The `source` option records this.

Nothing is downloaded unless `download=True` (tests use `tfds.testing.mock_data`).
"""

import tensorflow as tf

from tf_forget.corruptions import registry
from tf_forget.data import base
from tf_forget.data import tfds_sets

_CIFAR10_C_NAMES = {"glass_blur": "frosted_glass_blur", "elastic_transform": "elastic"}


def _corrupted_splits():
  return tuple(registry.split_name(c, s) for c in registry.CORRUPTIONS for s in range(1, 6))


class _ConfigPerSplit(tfds_sets.TfdsDataset):
  """A tfds data set whose `<corruption>@<severity>` splits are builder configs."""

  SOURCE_SPLIT = "test"
  RENAME = {}

  def _builder_name(self, split):
    corruption, severity = registry.parse_split_name(split)
    return f"{self.TFDS_NAME}/{self.RENAME.get(corruption, corruption)}_{severity}"

  def _raw(self, split):
    self.check_split(split)
    builder = tfds_sets.tfds.builder(self._builder_name(split), data_dir=self._data_dir)
    if self._download:
      config = tfds_sets.tfds.download.DownloadConfig(manual_dir=self._manual_dir)
      builder.download_and_prepare(download_config=config)
    try:
      return builder.as_dataset(split=self.SOURCE_SPLIT, shuffle_files=False)
    except (AssertionError, FileNotFoundError, tf.errors.NotFoundError) as e:
      where = self._data_dir or "the default tfds data_dir"
      raise base.DataError(f"data set {self.NAME!r} split {split!r} is not prepared in "
                           f"{where}: {str(e).splitlines()[0] if str(e) else e!r}") from e


class Cifar10Corrupted(_ConfigPerSplit):
  """CIFAR-10-C as published (tfds `cifar10_corrupted`)."""
  TFDS_NAME = NAME = "cifar10_corrupted"
  NUM_CLASSES = 10
  NATIVE_SHAPE = (32, 32, 3)
  SPLITS = _corrupted_splits()
  EVAL_SPLIT = "gaussian_noise@3"
  RENAME = _CIFAR10_C_NAMES

  def __init__(self, data_dir=None, download=False):
    super().__init__(data_dir=data_dir, download=download)


class Imagenet2012Corrupted(_ConfigPerSplit):
  """tfds' regeneration of ImageNet-C from manually downloaded ImageNet (see module doc)."""
  TFDS_NAME = NAME = "imagenet2012_corrupted"
  NUM_CLASSES = 1000
  NATIVE_SHAPE = (224, 224, 3)
  SPLITS = _corrupted_splits()
  EVAL_SPLIT = "gaussian_noise@3"
  SOURCE_SPLIT = "validation"

  def __init__(self, data_dir=None, download=False, manual_dir=None):
    super().__init__(data_dir=data_dir, download=download, manual_dir=manual_dir)
    self.spec.options["source"] = ("tfds regeneration from manually downloaded ImageNet "
                                   "(not the published ImageNet-C)")


class Cifar10_1(tfds_sets.TfdsDataset):  # pylint: disable=invalid-name
  """CIFAR-10.1 (tfds `cifar10_1`, configs v4 / v6)."""
  TFDS_NAME = NAME = "cifar10_1"
  NUM_CLASSES = 10
  NATIVE_SHAPE = (32, 32, 3)
  SPLITS = ("test",)

  def __init__(self, data_dir=None, version="v6", download=False):
    if version not in ("v4", "v6"):
      raise base.DataError(f"cifar10_1 version must be 'v4' or 'v6', got {version!r}")
    self.TFDS_NAME = f"cifar10_1/{version}"  # pylint: disable=invalid-name
    super().__init__(data_dir=data_dir, download=download)
    self.spec.options["version"] = version


class ImagenetA(tfds_sets.TfdsDataset):
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
