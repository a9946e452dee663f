"""The IDX reader on files made here: good, truncated, wrong magic, wrong checksum, gzip or not."""

import gzip
import hashlib
import os
import struct

import numpy as np
import pytest

from tf_forget.data import dataset_api
from tf_forget.data import idx_files

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
SHARED_MNIST = os.path.join(os.path.dirname(ROOT), "shared", "data", "mnist")


def _idx(array):
  """The IDX bytes of a uint8 array, written by hand from the format's definition."""
  array = np.asarray(array, np.uint8)
  header = bytes([0, 0, 0x08, array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape)
  return header + array.tobytes()


def _small_set(directory, n_train=6, n_test=4, compress=True, seed=0):
  """Writes a four-file set of tiny splits; returns {stem: raw bytes}."""
  rng = np.random.default_rng(seed)
  raw = {}
  for split, n in (("train", n_train), ("test", n_test)):
    image_stem, label_stem = idx_files.FILES[split]
    raw[image_stem] = _idx(rng.integers(0, 256, (n, 28, 28)))
    raw[label_stem] = _idx(np.arange(n) % 10)
  os.makedirs(directory, exist_ok=True)
  for stem, data in raw.items():
    path = os.path.join(directory, stem + (".gz" if compress else ""))
    with open(path, "wb") as f:
      f.write(gzip.compress(data, mtime=0) if compress else data)
  return raw


@pytest.fixture
def small(monkeypatch):
  """The tiny set's sizes and its own checksums stand in for a published database's."""
  monkeypatch.setattr(idx_files, "SIZES", {"train": 6, "test": 4})

  def publish(raw):
    sums = {stem: (None, hashlib.md5(data).hexdigest()) for stem, data in raw.items()}
    monkeypatch.setitem(idx_files.CHECKSUMS, "mnist", sums)

  return publish


def test_parse_reads_the_header_by_hand():
  data = bytes([0, 0, 8, 2, 0, 0, 0, 2, 0, 0, 0, 3, 1, 2, 3, 4, 5, 6])
  np.testing.assert_array_equal(idx_files.parse(data), [[1, 2, 3], [4, 5, 6]])


@pytest.mark.parametrize(
  "data, problem",
  [
    (b"\x01\x00\x08\x01\x00\x00\x00\x01\x07", "bad magic"),
    (b"\x00\x00\x0d\x01\x00\x00\x00\x01\x07\x00\x00\x00", "type 0x0d"),
    (bytes([0, 0, 8, 2, 0, 0, 0, 2, 0, 0, 0, 3, 1, 2, 3]), "truncated"),
    (bytes([0, 0, 8, 1, 0, 0, 0, 1, 7, 8]), "truncated"),
    (bytes([0, 0, 8, 3, 0, 0]), "header"),
  ],
)
def test_parse_refuses_malformed_files(data, problem):
  with pytest.raises(dataset_api.DataError, match=problem):
    idx_files.parse(data, "f")


@pytest.mark.parametrize("compress", [True, False])
def test_good_files_load_gzip_or_not(tmp_path, small, compress):
  raw = _small_set(str(tmp_path), compress=compress)
  small(raw)
  splits, checks = idx_files.load(str(tmp_path), "mnist")
  images, labels = splits["train"]
  assert images.shape == (6, 28, 28, 1) and images.dtype == np.uint8
  np.testing.assert_array_equal(labels, np.arange(6) % 10)
  np.testing.assert_array_equal(images[..., 0], idx_files.parse(raw["train-images-idx3-ubyte"]))
  assert {c["verified"] for c in checks.values()} == {"published md5"}
  assert (
    checks["t10k-labels-idx1-ubyte"]["md5"]
    == hashlib.md5(raw["t10k-labels-idx1-ubyte"]).hexdigest()
  )


def test_a_truncated_file_is_refused_naming_it(tmp_path, small):
  small(_small_set(str(tmp_path), compress=False))
  path = tmp_path / "t10k-images-idx3-ubyte"
  path.write_bytes(path.read_bytes()[:-5])
  with pytest.raises(dataset_api.DataError, match="t10k-images-idx3-ubyte.*truncated"):
    idx_files.load(str(tmp_path), "mnist")


def test_an_edited_file_fails_its_checksum(tmp_path, small):
  raw = _small_set(str(tmp_path))
  small(raw)
  edited = bytearray(raw["train-images-idx3-ubyte"])
  edited[100] ^= 0xFF
  (tmp_path / "train-images-idx3-ubyte.gz").write_bytes(gzip.compress(bytes(edited)))
  with pytest.raises(
    dataset_api.DataError,
    match="train-images-idx3-ubyte.gz: md5 .* matches no published mnist file",
  ):
    idx_files.load(str(tmp_path), "mnist")


def test_a_missing_file_and_a_broken_gzip_are_one_line(tmp_path, small):
  small(_small_set(str(tmp_path)))
  (tmp_path / "t10k-labels-idx1-ubyte.gz").write_bytes(b"\x1f\x8b\x08garbage")
  with pytest.raises(dataset_api.DataError, match="not a readable gzip file"):
    idx_files.load(str(tmp_path), "mnist")
  os.remove(tmp_path / "t10k-labels-idx1-ubyte.gz")
  with pytest.raises(
    dataset_api.DataError,
    match=r"t10k-labels-idx1-ubyte \(or .*\.gz\) is "
    "missing",
  ):
    idx_files.load(str(tmp_path), "mnist")
  assert not idx_files.has_files(str(tmp_path))


def test_another_databases_file_names_the_right_data_set(tmp_path, monkeypatch):
  monkeypatch.setattr(idx_files, "SIZES", {"train": 6, "test": 4})
  raw = _small_set(str(tmp_path), compress=False)
  # These files stand for Fashion-MNIST's (their MD5s published as its .gz MD5s here).
  monkeypatch.setitem(
    idx_files.CHECKSUMS,
    "fashion_mnist",
    {stem: (hashlib.md5(data).hexdigest(), None) for stem, data in raw.items()},
  )
  with pytest.raises(
    dataset_api.DataError, match="fashion_mnist's file, not mnist's: use --dataset=fashion_mnist"
  ):
    idx_files.load(str(tmp_path), "mnist")


def test_uncompressed_fashion_files_are_checked_for_structure_only(tmp_path, monkeypatch):
  monkeypatch.setattr(idx_files, "SIZES", {"train": 6, "test": 4})
  _small_set(str(tmp_path), compress=False)
  splits, checks = idx_files.load(str(tmp_path), "fashion_mnist")
  assert splits["test"][0].shape == (4, 28, 28, 1)
  assert all(c["verified"].startswith("structure") for c in checks.values())
  # Compressed, the same files must match Fashion-MNIST's published .gz MD5s: they do not.
  _small_set(str(tmp_path / "gz"), compress=True)
  with pytest.raises(dataset_api.DataError, match="matches no published fashion_mnist file"):
    idx_files.load(str(tmp_path / "gz"), "fashion_mnist")


def test_wrong_shapes_are_refused(tmp_path, small):
  raw = _small_set(str(tmp_path), n_train=5)  # 5 train examples where 6 are expected
  small(raw)
  with pytest.raises(dataset_api.DataError, match=r"mnist train: images \(5, 28, 28\)"):
    idx_files.load(str(tmp_path), "mnist")


@pytest.mark.skipif(not os.path.isdir(SHARED_MNIST), reason="the real MNIST files are not here")
def test_the_real_mnist_matches_its_published_checksums():
  splits, checks = idx_files.load(SHARED_MNIST, "mnist")
  assert {c["verified"] for c in checks.values()} == {"published md5"}
  # The test split's class counts, as the database's README lists them.
  np.testing.assert_array_equal(
    np.bincount(splits["test"][1]), [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]
  )
  assert splits["train"][0].shape == (60_000, 28, 28, 1)
