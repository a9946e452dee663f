"""Cached corrupted splits read back as `Examples` for the evaluator.

`CorruptedSplit` reads one entry of the corruption cache (`tf_forget.corruptions.cache`: its
layout, encodings and lineage) and yields `tf_forget.data.dataset_api.Examples` with the same
ids, labels and attributes as the clean split; `CorruptedDataset` adds `<corruption>@<severity>`
splits (docs/spec.md §1.1) to a data set, so the evaluator evaluates `glass_blur@3` like any
split. A shard found unreadable discards its entry, so that running the same command again
regenerates it.
"""

import dataclasses
import os

from tf_forget.artifacts import errors
from tf_forget.artifacts import fileio
from tf_forget.artifacts import hashing
from tf_forget.artifacts import lineage
from tf_forget.corruptions import cache
from tf_forget.corruptions import corruption_registry
from tf_forget.corruptions import shard_codec
from tf_forget.data import dataset_api


class CorruptedSplit:
  """A cached corrupted split, iterable as `Examples` (see module docstring).

  Attributes:
    key: the `cache.CacheKey`.
    name: the split name `<corruption>@<severity>` (docs/spec.md §1.1).
    meta: the entry's meta.json.
  """

  def __init__(self, dataset, split, corruption, severity, cache_dir, table=None, base_seed=0):
    corruption_registry.check(corruption, severity)
    self.key = cache.CacheKey(
      dataset.spec.name,
      split,
      corruption,
      int(severity),
      cache.resolve_table(dataset, table),
      int(base_seed),
    )
    self.name = self.key.split_name
    self._dir = self.key.directory(cache_dir)
    state = cache.entry_status(self.key, cache_dir, dataset)
    if state.reason == lineage.MISSING.reason:
      raise cache.CacheError(
        f"corrupted split {self.name} of {dataset.spec.name}/{split} "
        f"(table {self.key.table}, seed {base_seed}) is not cached in "
        f"{cache_dir}: run the same command again (the audit generates the "
        "corrupted splits it evaluates), or use CorruptedDataset(..., "
        "generate=True)"
      )
    if not state:
      raise cache.CacheError(
        f"cached split {self._dir} is stale ({state.reason}): run the same "
        "command again, which generates it again"
      )
    try:
      self.meta = cache.read_meta(self._dir)
    except errors.ReadError as e:
      raise cache.CacheError(str(e)) from e

  def __len__(self):
    return int(self.meta["num_examples"])

  def identity(self):
    """sha256 of this entry's meta.json: the identity of the split predictions record."""
    return hashing.sha256_bytes(fileio.read_bytes(os.path.join(self._dir, "meta.json")))

  def _unreadable(self, path, reason):
    """The `cache.CacheError` of a shard that cannot be read; its entry is discarded first, so that
    the next run (`cache.entry_status`: missing) generates it again."""
    cache.discard(self._dir)
    return cache.CacheError(
      f"corrupted shard {path} {reason}: its cached split was discarded; run "
      "the same command again, which generates it again"
    )

  def _shards(self):
    digests = list(self.meta.get("shard_sha256") or [])
    for i, shard in enumerate(self.meta["shards"]):
      path = os.path.join(self._dir, shard)
      if i < len(digests) and hashing.file_sha256_or_none(path) != digests[i]:
        raise self._unreadable(path, "is not the one written (sha256 differs from meta.json's)")
      try:
        arrays = fileio.read_npz(path, "corrupted shard")
        images = shard_codec.decode_images(self.meta.get("encoding", "raw"), arrays)
      except errors.ReadError as e:
        raise self._unreadable(path, f"is unreadable ({errors.one_line(e, 200)})") from e
      except KeyError as e:
        raise self._unreadable(path, f"lacks {e}") from e
      attrs = {k[len(cache.ATTR) :]: v for k, v in arrays.items() if k.startswith(cache.ATTR)}
      yield dataset_api.Examples(
        images=images, labels=arrays["labels"], ids=arrays["ids"], attributes=attrs
      )

  def batches(self, batch_size):
    """Yields the split in its fixed order as `Examples` of at most `batch_size` examples."""
    if batch_size < 1:
      raise cache.CacheError(f"batch_size must be >= 1, got {batch_size}")
    pending = []
    held = 0
    for shard in self._shards():
      pending.append(shard)
      held += len(shard)
      while held >= batch_size:
        merged = dataset_api.concatenate(pending)
        yield merged.take(slice(0, batch_size))
        rest = merged.take(slice(batch_size, None))
        pending, held = ([rest], len(rest)) if len(rest) else ([], 0)
    if held:
      yield dataset_api.concatenate(pending)

  def __iter__(self):
    return self.batches(1024)


class CorruptedDataset(dataset_api.Dataset):
  """A data set whose splits are the clean splits plus cached `<corruption>@<severity>` splits.

  `batches("glass_blur@3", n)` reads the cached corruption of `source_split` (default the data
  set's eval split); clean split names pass through to the wrapped data set. With
  `generate=True`, a missing entry is generated in this process on first use.
  """

  def __init__(
    self,
    dataset,
    cache_dir,
    corrupted_splits,
    source_split=None,
    table=None,
    base_seed=0,
    generate=False,
  ):
    names = tuple(corrupted_splits)
    for name in names:
      corruption_registry.parse_split_name(name)
    spec = dataclasses.replace(dataset.spec, splits=tuple(dataset.spec.splits) + names)
    super().__init__(spec)
    self.base = dataset
    self.cache_dir = cache_dir
    self.source_split = source_split or dataset.spec.eval_split
    self.table = cache.resolve_table(dataset, table)
    self.base_seed = base_seed
    self.generate = generate

  def corrupted_split(self, name):
    """The `CorruptedSplit` of `name` (`<corruption>@<severity>`)."""
    self.check_split(name)
    corruption, severity = corruption_registry.parse_split_name(name)
    if self.generate:
      cache.fill(
        self.base,
        self.source_split,
        [(corruption, severity)],
        self.cache_dir,
        table=self.table,
        base_seed=self.base_seed,
      )
    return CorruptedSplit(
      self.base,
      self.source_split,
      corruption,
      severity,
      self.cache_dir,
      table=self.table,
      base_seed=self.base_seed,
    )

  def batches(self, split, batch_size):
    if split in self.base.spec.splits:
      return self.base.batches(split, batch_size)
    return self.corrupted_split(split).batches(batch_size)
