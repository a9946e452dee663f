"""The corrupted-split cache: generation, keys, re-batching, parallel workers, the Dataset view."""

import json
import os

import numpy as np
import pytest

from tf_forget.artifacts import lineage
from tf_forget.corruptions import cache
from tf_forget.corruptions import corrupted_split
from tf_forget.corruptions import corruption_registry
from tf_forget.corruptions import reference
from tf_forget.data import dataset_api


class _Tiny(dataset_api.Dataset):
  """50 gray 8x8 images with labels, ids 100.. and one attribute; fixed order."""

  def __init__(self, size=8):
    super().__init__(
      dataset_api.DatasetSpec(
        name="tiny",
        num_classes=3,
        image_shape=(size, size, 1),
        splits=("train", "test"),
        attribute_names=("Bright",),
        options={"size": size},
      )
    )
    self.images = reference.synthetic_images(50, size, size, seed=11, channels=1)
    self.labels = np.arange(50, dtype=np.int64) % 3
    self.ids = np.arange(100, 150, dtype=np.int64)

  def batches(self, split, batch_size):
    self.check_split(split)
    for i in range(0, 50, batch_size):
      s = slice(i, i + batch_size)
      yield dataset_api.Examples(
        self.images[s],
        self.labels[s],
        self.ids[s],
        {"Bright": self.images[s].mean(axis=(1, 2, 3)) > 100},
      )


def test_fill_and_read_back(tmp_path):
  data = _Tiny()
  keys = cache.fill(data, "test", [("fog", 2), ("glass_blur", 3)], str(tmp_path), batch_size=16)
  assert [k.split_name for k in keys] == ["fog@2", "glass_blur@3"]
  split = corrupted_split.CorruptedSplit(data, "test", "glass_blur", 3, str(tmp_path))
  assert split.name == "glass_blur@3" and len(split) == 50 and split.key.table == "32"
  with open(os.path.join(keys[1].directory(str(tmp_path)), "meta.json")) as f:
    meta = json.load(f)
  assert meta["shard_sizes"] == [16, 16, 16, 2] and meta["table"] == "32"
  got = dataset_api.concatenate(split.batches(7))
  np.testing.assert_array_equal(got.ids, data.ids)
  np.testing.assert_array_equal(got.labels, data.labels)
  np.testing.assert_array_equal(got.attributes["Bright"], data.images.mean(axis=(1, 2, 3)) > 100)
  seeds = corruption_registry.example_seeds("tiny", data.ids, "glass_blur", 3)
  np.testing.assert_array_equal(
    got.images, corruption_registry.apply("glass_blur", data.images, 3, seeds)
  )
  assert [len(b) for b in split.batches(7)] == [7] * 7 + [1]


def test_complete_entries_are_skipped_and_keys_separate(tmp_path):
  data = _Tiny()
  assert cache.fill(data, "test", [("fog", 2)], str(tmp_path))
  assert cache.fill(data, "test", [("fog", 2)], str(tmp_path)) == []
  assert cache.fill(data, "test", [("fog", 2)], str(tmp_path), overwrite=True)
  other = cache.fill(data, "test", [("fog", 2)], str(tmp_path), table="224", base_seed=1)
  assert other[0].directory(str(tmp_path)).endswith(os.path.join("fog@2", "table=224,seed=1"))
  a = corrupted_split.CorruptedSplit(data, "test", "fog", 2, str(tmp_path)).batches(50)
  b = corrupted_split.CorruptedSplit(
    data, "test", "fog", 2, str(tmp_path), table="224", base_seed=1
  ).batches(50)
  assert np.any(next(a).images != next(b).images)


def test_missing_or_stale_entries_raise_and_fill_makes_them_again(tmp_path):
  data = _Tiny()
  with pytest.raises(cache.CacheError, match="not cached .*: run the same command again"):
    corrupted_split.CorruptedSplit(data, "test", "fog", 2, str(tmp_path))
  cache.fill(data, "test", [("fog", 2)], str(tmp_path))
  changed = _Tiny()
  changed.spec = dataset_api.DatasetSpec(**{**changed.spec.__dict__, "options": {"size": 9}})
  with pytest.raises(
    cache.CacheError,
    match=r"is stale \(its input split changed since it "
    r"was generated\): run the same command again",
  ):
    corrupted_split.CorruptedSplit(changed, "test", "fog", 2, str(tmp_path))
  # No flag needed: the data changed, so `fill` generates the entry again (and only then).
  assert [k.split_name for k in cache.fill(changed, "test", [("fog", 2)], str(tmp_path))] == [
    "fog@2"
  ]
  assert cache.fill(changed, "test", [("fog", 2)], str(tmp_path)) == []
  assert len(corrupted_split.CorruptedSplit(changed, "test", "fog", 2, str(tmp_path))) == 50
  with pytest.raises(dataset_api.DataError):
    cache.fill(data, "validation", [("fog", 2)], str(tmp_path))


def _garbage(path):
  with open(path, "r+b") as f:  # the same size, other bytes
    size = f.seek(0, 2)
    f.seek(0)
    f.write(os.urandom(size))


def test_a_damaged_shard_is_made_again(tmp_path):
  data = _Tiny()
  (key,) = cache.fill(data, "test", [("fog", 2)], str(tmp_path), batch_size=20)
  before = dataset_api.concatenate(
    corrupted_split.CorruptedSplit(data, "test", "fog", 2, str(tmp_path))
  )
  directory = key.directory(str(tmp_path))
  _garbage(os.path.join(directory, "part-00001.npz"))
  state = cache.entry_status(key, str(tmp_path), data, verify=True)
  assert not state and "shard part-00001.npz is not the one written" in state.reason
  assert cache.fill(data, "test", [("fog", 2)], str(tmp_path)) == [key]
  again = dataset_api.concatenate(
    corrupted_split.CorruptedSplit(data, "test", "fog", 2, str(tmp_path))
  )
  np.testing.assert_array_equal(again.images, before.images)


def test_an_unreadable_shard_read_discards_its_entry(tmp_path):
  """An entry whose meta.json records no shard digests (written before them): a damaged shard
  is found while it is read; the one-line error says to run the command again, and then the
  entry is missing, so that it is generated again."""
  data = _Tiny()
  (key,) = cache.fill(data, "test", [("fog", 2)], str(tmp_path), batch_size=20)
  directory = key.directory(str(tmp_path))
  with open(os.path.join(directory, "meta.json")) as f:
    meta = json.load(f)
  del meta["shard_sha256"]
  with open(os.path.join(directory, "meta.json"), "w") as f:
    json.dump(meta, f)
  _garbage(os.path.join(directory, "part-00000.npz"))
  split = corrupted_split.CorruptedSplit(data, "test", "fog", 2, str(tmp_path))
  with pytest.raises(
    cache.CacheError, match="its cached split was discarded; run the same command again"
  ) as e:
    list(split.batches(10))
  assert "\n" not in str(e.value) and "--overwrite" not in str(e.value)
  assert cache.entry_status(key, str(tmp_path), data) == lineage.MISSING
  assert cache.fill(data, "test", [("fog", 2)], str(tmp_path)) == [key]
  assert (
    len(
      dataset_api.concatenate(corrupted_split.CorruptedSplit(data, "test", "fog", 2, str(tmp_path)))
    )
    == 50
  )


def test_parallel_workers_write_the_same_images(tmp_path):
  data = _Tiny()
  cache.fill(data, "test", [("snow", 4)], str(tmp_path / "a"), batch_size=25)
  cache.fill(data, "test", [("snow", 4)], str(tmp_path / "b"), batch_size=10, processes=2)
  a = dataset_api.concatenate(
    corrupted_split.CorruptedSplit(data, "test", "snow", 4, str(tmp_path / "a"))
  )
  b = dataset_api.concatenate(
    corrupted_split.CorruptedSplit(data, "test", "snow", 4, str(tmp_path / "b"))
  )
  np.testing.assert_array_equal(a.images, b.images)


def test_corrupted_dataset_serves_corrupted_and_clean_splits(tmp_path):
  data = _Tiny()
  view = corrupted_split.CorruptedDataset(data, str(tmp_path), ["contrast@5"], generate=True)
  assert view.spec.splits == ("train", "test", "contrast@5") and view.spec.name == "tiny"
  corrupted = view.load("contrast@5")
  clean = view.load("test")
  np.testing.assert_array_equal(corrupted.ids, clean.ids)
  assert corrupted.images.std() < clean.images.std()
  with pytest.raises(dataset_api.DataError):
    view.load("fog@2")


@pytest.mark.parametrize(
  "size, channels, encoding", [(8, 1, "deflate"), (32, 1, "png"), (32, 3, "png"), (40, 3, "png")]
)
def test_encodings_round_trip_uint8_exactly(tmp_path, size, channels, encoding):
  data = _Tiny(size)
  gen = np.random.default_rng(size + channels)
  # Worst case for the codecs: uniform noise over the full 0..255 range, plus flat extremes.
  data.images = gen.integers(0, 256, (50, size, size, channels), dtype=np.uint8)
  data.images[0] = 0
  data.images[1] = 255
  data.spec = dataset_api.DatasetSpec(
    **{**data.spec.__dict__, "image_shape": (size, size, channels)}
  )
  (key,) = cache.fill(data, "test", [("contrast", 1)], str(tmp_path), batch_size=16)
  with open(os.path.join(key.directory(str(tmp_path)), "meta.json")) as f:
    meta = json.load(f)
  assert meta["encoding"] == encoding and meta["schema_version"] == cache.SCHEMA_VERSION
  got = dataset_api.concatenate(
    corrupted_split.CorruptedSplit(data, "test", "contrast", 1, str(tmp_path))
  )
  seeds = corruption_registry.example_seeds("tiny", data.ids, "contrast", 1)
  want = corruption_registry.apply("contrast", data.images, 1, seeds)
  assert got.images.dtype == np.uint8 and got.images.shape == want.shape
  np.testing.assert_array_equal(got.images, want)
  np.testing.assert_array_equal(got.ids, data.ids)


def test_shards_are_compressed(tmp_path):
  data = _Tiny(32)
  data.images = reference.synthetic_images(50, 32, 32, seed=5, channels=3)
  data.spec = dataset_api.DatasetSpec(**{**data.spec.__dict__, "image_shape": (32, 32, 3)})
  (key,) = cache.fill(data, "test", [("glass_blur", 3)], str(tmp_path), batch_size=50)
  shard = os.path.join(key.directory(str(tmp_path)), "part-00000.npz")
  assert os.path.getsize(shard) < 0.85 * data.images.nbytes  # measured: 0.75 of raw


def test_schema_1_uncompressed_entries_are_still_read(tmp_path):
  data = _Tiny()
  (key,) = cache.fill(data, "test", [("fog", 2)], str(tmp_path), batch_size=20)
  new = dataset_api.concatenate(
    corrupted_split.CorruptedSplit(data, "test", "fog", 2, str(tmp_path))
  )
  # Rewrite the entry as schema 1 wrote it: uncompressed `images`, no `encoding` in meta.json.
  directory = key.directory(str(tmp_path))
  with open(os.path.join(directory, "meta.json")) as f:
    meta = json.load(f)
  for i, shard in enumerate(meta["shards"]):
    part = new.take(slice(20 * i, 20 * (i + 1)))
    np.savez(
      os.path.join(directory, shard),
      images=part.images,
      labels=part.labels,
      ids=part.ids,
      attr__Bright=part.attributes["Bright"],
    )
  del meta["encoding"], meta["shard_sha256"]
  meta["schema_version"] = 1
  with open(os.path.join(directory, "meta.json"), "w") as f:
    json.dump(meta, f)
  old = dataset_api.concatenate(
    corrupted_split.CorruptedSplit(data, "test", "fog", 2, str(tmp_path))
  )
  np.testing.assert_array_equal(old.images, new.images)
  np.testing.assert_array_equal(old.attributes["Bright"], new.attributes["Bright"])
  assert cache.fill(data, "test", [("fog", 2)], str(tmp_path)) == []  # complete: not redone
