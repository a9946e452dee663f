"""MNIST and Fashion-MNIST as their users have them: the four standard IDX files in a directory.

The IDX format (LeCun et al., the MNIST database's page): a big-endian header — two zero bytes,
a type code (0x08: unsigned byte), the number of dimensions d — then d big-endian uint32 sizes,
then the values in row-major order. Images are `idx3` (N × 28 × 28), labels `idx1` (N).

A directory holds `train-images-idx3-ubyte`, `train-labels-idx1-ubyte`, `t10k-images-idx3-ubyte`
and `t10k-labels-idx1-ubyte`, each plain or gzip-compressed (`.gz`; recognised by its magic
bytes, not only its name). Every file is checked against the database's published MD5 — of the
file as distributed (`.gz`) or of its uncompressed bytes — so a truncated, edited or foreign
file is refused in one line naming the file. Fashion-MNIST publishes the MD5 of its `.gz` files
only: its uncompressed files are checked for structure (shape, label range) and recorded by
their own MD5. Nothing is downloaded.
"""

import gzip
import hashlib
import io
import os
import struct

import numpy as np

from tf_forget.data import dataset_api

# The file stems of a split's images and labels (the database's own names).
FILES = {
  "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
  "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}
SIZES = {"train": 60_000, "test": 10_000}
IMAGE_SHAPE = (28, 28)
NUM_CLASSES = 10

# Published MD5s per database and file stem: (of the .gz as distributed, of the raw bytes).
# MNIST: the original database's .gz files and their uncompressed content; Fashion-MNIST: the
# .gz MD5s of its README (zalandoresearch/fashion-mnist), no uncompressed ones published.
CHECKSUMS = {
  "mnist": {
    "train-images-idx3-ubyte": (
      "f68b3c2dcbeaaa9fbdd348bbdeb94873",
      "6bbc9ace898e44ae57da46a324031adb",
    ),
    "train-labels-idx1-ubyte": (
      "d53e105ee54ea40749a09fcbcd1e9432",
      "a25bea736e30d166cdddb491f175f624",
    ),
    "t10k-images-idx3-ubyte": (
      "9fb629c4189551a2d022fa330f9573f3",
      "2646ac647ad5339dbf082846283269ea",
    ),
    "t10k-labels-idx1-ubyte": (
      "ec29112dd5afa0611ce80d1b7f02629c",
      "27ae3e4e09519cfbb04c329615203637",
    ),
  },
  "fashion_mnist": {
    "train-images-idx3-ubyte": ("8d4fb7e6c68d591d4c3dfef9ec88bf0d", None),
    "train-labels-idx1-ubyte": ("25c81989df183df01b3e8a0aad5dffbe", None),
    "t10k-images-idx3-ubyte": ("bef4ecab320f06d8554ea6380940ec79", None),
    "t10k-labels-idx1-ubyte": ("bb300cfdad3c16e7a12a480ee83cd310", None),
  },
}
_GZIP_MAGIC = b"\x1f\x8b"
# The largest uncompressed IDX file of either database (train images), with room for a header.
_MAX_BYTES = 60_000 * 28 * 28 + 64


def find(directory, stem):
  """The path of `stem` or `stem.gz` in `directory`, or None if neither is a file."""
  for name in (stem, stem + ".gz"):
    path = os.path.join(directory, name)
    if os.path.isfile(path):
      return path
  return None


def has_files(directory):
  """True if `directory` holds all four IDX files (plain or gzip)."""
  return bool(directory) and all(find(directory, stem) for pair in FILES.values() for stem in pair)


def parse(data, what="IDX data"):
  """The array an IDX byte string holds.

  Args:
    data: the uncompressed bytes of one IDX file.
    what: how to name the file in an error.

  Returns:
    A uint8 array of the shape the header gives.

  Raises:
    dataset_api.DataError: a bad magic number, a type other than unsigned byte, or a size that
      disagrees with the header (truncated or extended).
  """
  if len(data) < 4 or data[:2] != b"\x00\x00":
    raise dataset_api.DataError(f"{what} is not an IDX file (bad magic number)")
  kind, ndim = data[2], data[3]
  if kind != 0x08:
    raise dataset_api.DataError(f"{what}: IDX type 0x{kind:02x}, expected 0x08 (unsigned byte)")
  header = 4 + 4 * ndim
  if ndim < 1 or len(data) < header:
    raise dataset_api.DataError(f"{what}: IDX header of {ndim} dimensions is truncated")
  shape = struct.unpack(f">{ndim}I", data[4:header])
  expected = header + int(np.prod(shape, dtype=np.int64))
  if len(data) != expected:
    raise dataset_api.DataError(
      f"{what}: {len(data):,} bytes, the header {tuple(shape)} needs "
      f"{expected:,} (truncated or not an IDX file)"
    )
  return np.frombuffer(data, np.uint8, offset=header).reshape(shape)


def _read(path):
  """(uncompressed bytes, MD5 of the file as stored, MD5 of the bytes, compressed?)."""
  with open(path, "rb") as f:
    stored = f.read(_MAX_BYTES + 1)
  if len(stored) > _MAX_BYTES:
    raise dataset_api.DataError(f"{path}: larger than any IDX file of MNIST / Fashion-MNIST")
  stored_md5 = hashlib.md5(stored).hexdigest()
  if stored[:2] != _GZIP_MAGIC:
    return stored, stored_md5, stored_md5, False
  try:
    with gzip.GzipFile(fileobj=io.BytesIO(stored)) as g:
      raw = g.read(_MAX_BYTES + 1)
  except (OSError, EOFError) as e:
    raise dataset_api.DataError(f"{path}: not a readable gzip file ({e})") from e
  if len(raw) > _MAX_BYTES:
    raise dataset_api.DataError(f"{path}: decompresses to more than any IDX file of MNIST")
  return raw, stored_md5, hashlib.md5(raw).hexdigest(), True


def identify(stem, stored_md5, raw_md5):
  """The database whose published checksum the file matches, or None."""
  for database, sums in CHECKSUMS.items():
    gz_md5, plain_md5 = sums[stem]
    if stored_md5 == gz_md5 or raw_md5 in (gz_md5, plain_md5):
      return database
  return None


def _load_file(directory, stem, database):
  """(array, raw MD5, how it was verified) of one file of `database`.

  Raises:
    dataset_api.DataError: missing, unreadable, malformed, or another database's / no
      database's file.
  """
  path = find(directory, stem)
  if path is None:
    raise dataset_api.DataError(f"{database}: {stem} (or {stem}.gz) is missing in {directory}")
  raw, stored_md5, raw_md5, compressed = _read(path)
  array = parse(raw, path)
  found = identify(stem, stored_md5, raw_md5)
  if found == database:
    return array, raw_md5, "published md5"
  if found is not None:
    raise dataset_api.DataError(
      f"{path} is {found}'s file, not {database}'s: use --dataset={found}"
    )
  if CHECKSUMS[database][stem][1] is None and not compressed:
    return array, raw_md5, "structure (no published md5 of the uncompressed file)"
  raise dataset_api.DataError(
    f"{path}: md5 {raw_md5} matches no published {database} file "
    "(truncated, edited, or not the database)"
  )


def load(directory, database):
  """The splits of `database` read from the IDX files in `directory`.

  Args:
    directory: a local directory holding the four files.
    database: "mnist" or "fashion_mnist".

  Returns:
    (splits, checks): {"train" / "test": (images uint8 [N, 28, 28, 1], labels int64 [N])} and
    {file stem: {"md5": raw MD5, "verified": how}}.

  Raises:
    dataset_api.DataError: a missing or bad file, or shapes / labels that are not the
      database's (one line naming the file).
  """
  splits, checks = {}, {}
  for split, (image_stem, label_stem) in FILES.items():
    images, images_md5, images_how = _load_file(directory, image_stem, database)
    labels, labels_md5, labels_how = _load_file(directory, label_stem, database)
    n = SIZES[split]
    if images.shape != (n,) + IMAGE_SHAPE or labels.shape != (n,):
      raise dataset_api.DataError(
        f"{database} {split}: images {images.shape} and labels {labels.shape} in {directory}, "
        f"expected ({n}, 28, 28) and ({n},)"
      )
    if labels.max() >= NUM_CLASSES:
      raise dataset_api.DataError(f"{database} {split}: label {int(labels.max())} out of range")
    splits[split] = (images[..., np.newaxis], labels.astype(np.int64))
    checks[image_stem] = {"md5": images_md5, "verified": images_how}
    checks[label_stem] = {"md5": labels_md5, "verified": labels_how}
  return splits, checks
