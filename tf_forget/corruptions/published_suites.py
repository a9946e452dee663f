"""The published robustness suites of an audited data set, as the audit evaluates them.

`--robustness=published` (eval/audit.py) replaces the generated corrupted splits of the eval
split (`tf_forget.corruptions.cache`) by the published ones and adds the published test sets,
both as named in the data set's protocol (`tf_forget.data.protocols`, `AuditProtocol.published`):

    cifar10       `<corruption>@<severity>` from `cifar10_corrupted` (CIFAR-10-C), + `cifar10_1`
    imagenet2012  `<corruption>@<severity>` from `imagenet2012_corrupted` (tfds' regeneration
                  of ImageNet-C), + `imagenet_a` (000 Table 8, docs/spec.md §3.6)

The corrupted splits keep the generated ones' names (docs/spec.md §1.1), so every downstream table
(000 Table 3, docs/spec.md §3.6) works unchanged; CIFAR-10-C's images are CIFAR-10's test images in
order, so example ids (positions) align with the clean split. Every split is read through a
`tfds_suites` loader built with the audited data set's data_dir and input size (`image_size`:
the same resize as the clean split), and must yield the audited data set's image shape and
number of classes. A split's identity (`identity`) is its tfds builder's full name with version,
its split and the options, so a changed suite makes predictions made from it stale.

    suite = PublishedSuite(dataset, ["gaussian_noise@3", "cifar10_1"])
    suite.check_readable()            # one-line DataError naming the tfds builder + data_dir
    for batch in suite.batches("cifar10_1", 256): ...

A data set without published suites is a one-line `PublishedError` naming it.
"""

from tf_forget.artifacts import names
from tf_forget.corruptions import corruption_registry
from tf_forget.corruptions import tfds_suites
from tf_forget.data import dataset_api
from tf_forget.data.protocols import protocol_registry as protocols


class PublishedError(dataset_api.DataError):
  """A data set without published suites, or a split / shape they do not have (one line)."""


def with_published():
  """Names of the data sets that have published suites (sorted)."""
  return sorted(n for n, p in protocols.PROTOCOLS.items() if p.published is not None)


def suites_for(dataset_name):
  """The `protocols.Published` of `dataset_name`.

  Raises:
    PublishedError: the data set has no published robustness suite (or no protocol).
  """
  protocol = protocols.PROTOCOLS.get(dataset_name)
  if protocol is None or protocol.published is None:
    raise PublishedError(
      f"data set {dataset_name!r} has no published robustness suite: --robustness=published "
      f"applies to {', '.join(with_published())}; use --robustness=generated"
    )
  return protocol.published


def split_names(published, corrupted):
  """The published splits an audit evaluates: `corrupted` (`<c>@<s>` names), then the extras."""
  return tuple(corrupted) + tuple(x.name for x in published.extra)


def _options(suite_name, spec):
  """Loader options matching the audited data set: its data_dir and, if needed, its input size.

  A loader whose native shape already is the audited shape gets no `image_size` (no resize);
  others (ImageNet-A's variable sizes, a resized audit) are resized to it as the clean split.
  """
  native = tfds_suites.SUITES[suite_name].NATIVE_SHAPE
  size = tuple(int(v) for v in spec.image_shape[:2])
  options = dict(spec.options or {})
  return {
    "data_dir": options.get("data_dir"),
    "image_size": None if native is not None and tuple(native[:2]) == size else size,
  }


class PublishedSuite:
  """Published splits of one audited data set (a `dataset_api.Dataset`-like reader by split name).

  Attributes:
    dataset: the audited `dataset_api.Dataset`.
    published: its `protocols.Published`.
    splits: the split names read, in order.
  """

  def __init__(self, dataset, splits):
    """Maps every split to its loader; checks shapes and classes (reads no data).

    Args:
      dataset: the audited `dataset_api.Dataset` (its name selects the suites).
      splits: `<corruption>@<severity>` names and / or published test set names.

    Raises:
      PublishedError: no published suite for the data set, a split it does not publish, or a
        loader whose images or classes differ from the audited data set's.
      dataset_api.DataError, corruption_registry.CorruptionError: a bad option or corruption name.
    """
    spec = dataset.spec
    self.dataset, self.published, self.splits = dataset, suites_for(spec.name), tuple(splits)
    extra = {x.name: x for x in self.published.extra}
    self._loaders, self._where = {}, {}
    for split in self.splits:
      if split in extra:
        suite_name, source = extra[split].suite, extra[split].source_split
      elif "@" in str(split):
        corruption_registry.parse_split_name(split)  # one line for an unknown corruption
        suite_name, source = self.published.corrupted, split
      else:
        raise PublishedError(
          f"{split!r} is not a published split of {spec.name!r} (published: "
          f"<corruption>@<severity> from {self.published.corrupted}, {', '.join(extra)})"
        )
      if suite_name not in self._loaders:
        loader = tfds_suites.get(suite_name, **_options(suite_name, spec))
        if (
          tuple(loader.spec.image_shape) != tuple(spec.image_shape)
          or loader.spec.num_classes != spec.num_classes
        ):
          raise PublishedError(
            f"published suite {suite_name!r} yields {tuple(loader.spec.image_shape)} images "
            f"of {loader.spec.num_classes} classes, {spec.name!r} "
            f"{tuple(spec.image_shape)} of {spec.num_classes}"
          )
        self._loaders[suite_name] = loader
      self._loaders[suite_name].check_split(source)
      self._where[split] = (suite_name, source)

  def loader(self, split):
    """(the `tfds_suites` loader, its split name) of `split`."""
    if split not in self._where:
      raise PublishedError(f"split {split!r} is not one of this suite's {list(self.splits)}")
    suite_name, source = self._where[split]
    return self._loaders[suite_name], source

  def tfds_builder_name(self, split):
    """The tfds builder read for `split` (e.g. "cifar10_corrupted/frosted_glass_blur_3")."""
    loader, source = self.loader(split)
    return loader.tfds_builder_name(source)

  def keeps_logits(self, split):
    """Whether predictions on `split` store logits: the published test sets (ImageNet-A's
    200-class mask, docs/spec.md §3.6, is applied to them in the report), not the corrupted
    splits."""
    return names.parse_split(split) is None

  def batches(self, split, batch_size):
    """Yields `split` in its fixed order as `dataset_api.Examples` (ids: positions)."""
    loader, source = self.loader(split)
    return loader.batches(source, batch_size)

  def num_examples(self, split):
    """The size of `split` (tfds metadata, or its records counted)."""
    loader, source = self.loader(split)
    return loader.num_examples(source)

  def identity(self, split):
    """sha256 naming what `split` reads (tfds builder full name with version, options)."""
    loader, source = self.loader(split)
    return loader.identity(source)

  def check_readable(self):
    """Raises the loader's one-line `DataError` (tfds builder, data_dir) for the first split
    whose data is not prepared; reads no example."""
    for split in self.splits:
      loader, source = self.loader(split)
      loader.check_prepared(source)
