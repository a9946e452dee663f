"""On-disk cache of corrupted splits, and the corrupted splits as `Examples` for the evaluator.

Corrupted splits are generated once (`fill`, optionally in parallel processes) and read back by
`CorruptedSplit` / `CorruptedDataset`, which yield `tf_forget.data.dataset_api.Examples` with the
same ids, labels and attributes as the clean split, so the evaluator evaluates `glass_blur@3`
(docs/spec.md §1.1) like any split. Schema: docs/artifacts/corruptions.md.

    <cache_dir>/<dataset>/<split>/<corruption>@<severity>/table=<table>,seed=<base_seed>/
        part-00000.npz ...   images (see "Encodings"), labels int64 [n], ids int64 [n],
                             attr__<name> bool [n]            (npz, no pickles)
        meta.json            written last: the entry is complete iff it exists

Encodings (CelebA's uncompressed cache at 5 severities would be ~221 GB), recorded as
meta.json's `encoding`; every one reads back the exact uint8 pixels:
  * "png": each image a lossless PNG (OpenCV, compression level 1), stored as `png_bytes`
    uint8 [total] with `png_offsets` int64 [n + 1]; used when H·W >= 32·32. Measured on 24
    corrupted splits (8 corruptions × severities 1, 3, 5) of synthetic natural-looking images:
    1.87× smaller than raw at 218×178×3 (savez_compressed: 1.54×) at 6.8 ms an image (7.7),
    1.44× at 32×32×3 (1.22×);
  * "deflate": the `images` array in a compressed npz (`np.savez_compressed`); used for
    smaller images (8×8 digits: 1.39×, where PNG's per-image overhead makes it 0.48×);
  * "raw": an uncompressed npz `images` array: entries of schema version 1 (no `encoding`),
    still read as they are.

The key is (data set, split, corruption, severity, table, base seed); the data set's options and
image shape are recorded in meta.json and checked on read. meta.json also records `inputs`
(lineage): the identity of the clean split it was made from
(`predictions.split_identity`) and the sha256 of the clean examples' ids and labels; the
sha256 of meta.json is in turn the identity of the corrupted split that predictions record
(`CorruptedSplit.identity`). An entry whose meta.json is unreadable is regenerated. Files go
through `tf_forget.artifacts.fileio` (atomic writes, no pickles). Example seeds:
`corruption_registry.example_seeds`.
"""

import concurrent.futures
import dataclasses
import hashlib
import io
import multiprocessing
import os

import numpy as np

from tf_forget.artifacts import errors
from tf_forget.artifacts import fileio
from tf_forget.artifacts import hashing
from tf_forget.artifacts import predictions
from tf_forget.corruptions import corruption_registry
from tf_forget.corruptions import tables
from tf_forget.data import dataset_api

SCHEMA_VERSION = 2
READABLE_SCHEMA_VERSIONS = (1, 2)  # version 1: uncompressed shards ("raw")
ENCODINGS = ("png", "deflate", "raw")
PNG_MIN_PIXELS = 32 * 32  # PNG's per-image overhead loses to deflate below this (8x8 digits)
PNG_LEVEL = 1  # measured: x1.87 at 6.8 ms an image vs level 6's x1.95 at 18 ms (218x178x3)
_ATTR = "attr__"


class CacheError(dataset_api.DataError):
  """A corrupted split that is missing, incomplete or does not match its data set."""


@dataclasses.dataclass(frozen=True)
class CacheKey:
  """Identifies one cached corrupted split."""
  dataset: str
  split: str
  corruption: str
  severity: int
  table: str
  base_seed: int = 0

  @property
  def split_name(self):
    return corruption_registry.split_name(self.corruption, self.severity)

  def directory(self, cache_dir):
    return os.path.join(cache_dir, self.dataset, self.split, self.split_name,
                        f"table={self.table},seed={self.base_seed}")


def _json_safe(options):
  return {str(k): (v if isinstance(v, (bool, int, float, str, type(None))) else repr(v))
          for k, v in dict(options).items()}


def resolve_table(dataset, table=None):
  """The severity table for `dataset`: `table`, or the family of its image size."""
  if table is not None:
    return tables.check_table(table)
  height, width = dataset.spec.image_shape[:2]
  return tables.family_for_shape(height, width)


def _read_meta(directory):
  meta = fileio.read_json(os.path.join(directory, "meta.json"), "corruption cache entry")
  if (not isinstance(meta, dict) or meta.get("schema_version") not in READABLE_SCHEMA_VERSIONS
      or meta.get("encoding", "raw") not in ENCODINGS):
    raise errors.ReadError(f"{directory}/meta.json is not a corruption cache entry of schema "
                           f"version {SCHEMA_VERSION}")
  return meta


def encoding_for_shape(image_shape):
  """The shard encoding for images of `image_shape` (H, W, C): "png" or "deflate"."""
  height, width = image_shape[:2]
  return "png" if int(height) * int(width) >= PNG_MIN_PIXELS else "deflate"


def _encode_shard(encoding, images, **arrays):
  """The bytes of one shard (an npz) holding `images` in `encoding` and the other `arrays`.

  Args:
    encoding: "png" or "deflate".
    images: uint8 `[n, H, W, C]`, C in {1, 3}.
    **arrays: labels, ids, attributes (stored as they are).

  Returns:
    The npz file's bytes.
  """
  images = np.asarray(images, np.uint8)
  for name, value in arrays.items():
    if np.asarray(value).dtype == object:
      raise errors.Error(f"array {name!r} has dtype object; npz artifacts never hold pickles")
  buf = io.BytesIO()
  if encoding == "png":
    import cv2  # pylint: disable=g-import-not-at-top (OpenCV: only where PNG is used)
    chunks = []
    for image in images:
      ok, png = cv2.imencode(".png", image, [cv2.IMWRITE_PNG_COMPRESSION, PNG_LEVEL])
      if not ok:
        raise CacheError(f"OpenCV could not PNG-encode an image of shape {image.shape}")
      chunks.append(png.reshape(-1))
    offsets = np.zeros(len(chunks) + 1, np.int64)
    offsets[1:] = np.cumsum([len(c) for c in chunks])
    data = np.concatenate(chunks) if chunks else np.zeros(0, np.uint8)
    np.savez(buf, png_bytes=data, png_offsets=offsets,
             png_shape=np.asarray(images.shape, np.int64), **arrays)
  elif encoding == "deflate":
    np.savez_compressed(buf, images=images, **arrays)
  else:
    raise CacheError(f"unknown corruption cache encoding {encoding!r}")
  return buf.getvalue()


def _decode_images(encoding, arrays, path):
  """uint8 `[n, H, W, C]` images of a shard read by `fileio.read_npz` (exact pixels)."""
  if encoding in ("raw", "deflate"):
    return arrays.pop("images")
  import cv2  # pylint: disable=g-import-not-at-top
  data, offsets = arrays.pop("png_bytes"), arrays.pop("png_offsets")
  shape = tuple(int(v) for v in arrays.pop("png_shape"))
  images = np.empty(shape, np.uint8)
  for i in range(shape[0]):
    image = cv2.imdecode(data[offsets[i]:offsets[i + 1]], cv2.IMREAD_UNCHANGED)
    if image is None or image.size != images[i].size:
      raise CacheError(f"{path}: PNG image {i} does not decode to {shape[1:]}: regenerate it "
                       f"(generate_corruptions --overwrite)")
    images[i] = image.reshape(shape[1:])
  return images


def is_complete(key, cache_dir):
  """True iff the entry's meta.json (written after every shard) is readable, shards present."""
  directory = key.directory(cache_dir)
  try:
    meta = _read_meta(directory)
  except errors.ReadError:
    return False
  return all(fileio.exists(os.path.join(directory, shard)) for shard in meta.get("shards", []))


def fill(dataset, split, jobs, cache_dir, table=None, base_seed=0, batch_size=1000,
         processes=0, overwrite=False):
  """Generates the corrupted versions of `split` for every (corruption, severity) in `jobs`.

  Reads the clean split once, in its fixed order, in batches of `batch_size`; each batch is
  corrupted for every pending job (in `processes` worker processes if > 0) and written as one
  shard per job; meta.json is written when a job's last shard is on disk.

  Args:
    dataset: a `dataset_api.Dataset`.
    split: the clean split (e.g. `dataset.spec.eval_split`).
    jobs: iterable of (corruption, severity).
    cache_dir: cache root.
    table: severity table, default `resolve_table(dataset)`.
    base_seed: replicate seed, part of the key.
    batch_size: examples per shard.
    processes: worker processes (0: in this process).
    overwrite: regenerate complete entries too.

  Returns:
    The list of `CacheKey`s generated (complete ones are skipped unless `overwrite`).

  Raises:
    dataset_api.DataError / tables.CorruptionError: unknown split, corruption or severity.
  """
  dataset.check_split(split)
  table = resolve_table(dataset, table)
  keys = []
  for corruption, severity in jobs:
    corruption_registry.check(corruption, severity)
    key = CacheKey(dataset.spec.name, split, corruption, int(severity), table, int(base_seed))
    if overwrite or not is_complete(key, cache_dir):
      keys.append(key)
  if not keys:
    return []
  counts = {key: [] for key in keys}
  encoding = encoding_for_shape(dataset.spec.image_shape)
  examples = hashlib.sha256()  # the clean examples' ids and labels, in order
  # "spawn": workers import only the registry (numpy / scipy / cv2), never TensorFlow.
  pool = (concurrent.futures.ProcessPoolExecutor(
      processes, mp_context=multiprocessing.get_context("spawn")) if processes > 0 else None)
  try:
    for index, batch in enumerate(dataset.batches(split, batch_size)):
      examples.update(np.asarray(batch.ids, np.int64).tobytes())
      examples.update(np.asarray(batch.labels, np.int64).tobytes())
      results = {}
      for key in keys:
        seeds = corruption_registry.example_seeds(key.dataset, batch.ids, key.corruption,
                                                  key.severity, key.base_seed)
        args = (key.corruption, batch.images, key.severity, seeds, table)
        results[key] = (pool.submit(corruption_registry.apply, *args) if pool
                        else corruption_registry.apply(*args))
      for key in keys:
        images = results[key].result() if pool else results[key]
        arrays = dict(images=images, labels=np.asarray(batch.labels, np.int64),
                      ids=np.asarray(batch.ids, np.int64))
        arrays.update({_ATTR + k: np.asarray(v, bool) for k, v in batch.attributes.items()})
        fileio.write_bytes(os.path.join(key.directory(cache_dir), f"part-{index:05d}.npz"),
                           _encode_shard(encoding, **arrays))
        counts[key].append(int(len(batch)))
  finally:
    if pool:
      pool.shutdown()
  inputs = {"split": predictions.split_identity(dataset.spec.name, dataset.spec.options, split),
            "examples": examples.hexdigest()}
  for key in keys:
    # `seed_derivation` is a recorded label: meta.json's sha256 is the split's identity
    # (`CorruptedSplit.identity`), so it stays as first written.
    fileio.write_json(os.path.join(key.directory(cache_dir), "meta.json"), dict(
        inputs=inputs,
        schema_version=SCHEMA_VERSION, encoding=encoding, dataset=key.dataset, split=key.split,
        corruption=key.corruption, severity=key.severity, table=key.table,
        base_seed=key.base_seed, seed_derivation="registry.example_seeds (sha256)",
        image_shape=list(dataset.spec.image_shape), options=_json_safe(dataset.spec.options),
        shards=[f"part-{i:05d}.npz" for i in range(len(counts[key]))],
        shard_sizes=counts[key], num_examples=int(sum(counts[key]))))
  return keys


class CorruptedSplit:
  """A cached corrupted split, iterable as `Examples` (see module docstring).

  Attributes:
    key: the `CacheKey`.
    name: the split name `<corruption>@<severity>` (docs/spec.md §1.1).
    meta: the entry's meta.json.
  """

  def __init__(self, dataset, split, corruption, severity, cache_dir, table=None, base_seed=0):
    corruption_registry.check(corruption, severity)
    self.key = CacheKey(dataset.spec.name, split, corruption, int(severity),
                        resolve_table(dataset, table), int(base_seed))
    self.name = self.key.split_name
    self._dir = self.key.directory(cache_dir)
    if not is_complete(self.key, cache_dir):
      raise CacheError(f"corrupted split {self.name} of {dataset.spec.name}/{split} "
                       f"(table {self.key.table}, seed {base_seed}) is not cached in "
                       f"{cache_dir}: run tf_forget/corruptions/generate_corruptions.py")
    try:
      self.meta = _read_meta(self._dir)
    except errors.ReadError as e:
      raise CacheError(str(e)) from e
    if (self.meta.get("options") != _json_safe(dataset.spec.options) or
        tuple(self.meta["image_shape"]) != tuple(dataset.spec.image_shape)):
      raise CacheError(f"cached split {self._dir} was made with other data set options or "
                       f"image shape; regenerate it with --overwrite")

  def __len__(self):
    return int(self.meta["num_examples"])

  def identity(self):
    """sha256 of this entry's meta.json: the identity of the split predictions record."""
    return hashing.sha256_bytes(fileio.read_bytes(os.path.join(self._dir, "meta.json")))

  def _shards(self):
    for shard in self.meta["shards"]:
      path = os.path.join(self._dir, shard)
      try:
        arrays = fileio.read_npz(path, "corrupted shard")
      except errors.ReadError as e:
        raise CacheError(f"{e}: regenerate it (generate_corruptions --overwrite)") from e
      try:
        images = _decode_images(self.meta.get("encoding", "raw"), arrays, path)
      except KeyError as e:
        raise CacheError(f"{path}: shard lacks {e}: regenerate it "
                         f"(generate_corruptions --overwrite)") from e
      attrs = {k[len(_ATTR):]: v for k, v in arrays.items() if k.startswith(_ATTR)}
      yield dataset_api.Examples(images=images, labels=arrays["labels"], ids=arrays["ids"],
                                 attributes=attrs)

  def batches(self, batch_size):
    """Yields the split in its fixed order as `Examples` of at most `batch_size` examples."""
    if batch_size < 1:
      raise CacheError(f"batch_size must be >= 1, got {batch_size}")
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

  def __init__(self, dataset, cache_dir, corrupted_splits, source_split=None, table=None,
               base_seed=0, generate=False):
    names = tuple(corrupted_splits)
    for name in names:
      corruption_registry.parse_split_name(name)
    spec = dataclasses.replace(dataset.spec, splits=tuple(dataset.spec.splits) + names)
    super().__init__(spec)
    self.base = dataset
    self.cache_dir = cache_dir
    self.source_split = source_split or dataset.spec.eval_split
    self.table = resolve_table(dataset, table)
    self.base_seed = base_seed
    self.generate = generate

  def corrupted_split(self, name):
    """The `CorruptedSplit` of `name` (`<corruption>@<severity>`)."""
    self.check_split(name)
    corruption, severity = corruption_registry.parse_split_name(name)
    if self.generate:
      fill(self.base, self.source_split, [(corruption, severity)], self.cache_dir,
           table=self.table, base_seed=self.base_seed)
    return CorruptedSplit(self.base, self.source_split, corruption, severity, self.cache_dir,
                          table=self.table, base_seed=self.base_seed)

  def batches(self, split, batch_size):
    if split in self.base.spec.splits:
      return self.base.batches(split, batch_size)
    return self.corrupted_split(split).batches(batch_size)
