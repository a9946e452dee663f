"""The user's data identified by its content: files hashed, images checked.

A split of the user's data (`user_sets`: a folder's images, a TFRecord set's files, plus the
`labels.txt`, spec and attributes files that give them labels and attributes) is identified by
`digest(entries)`: the sha256 of its files' relative paths, sizes and sha256 in path order. A
file moved to another class folder, edited in place, added or removed changes it; `describe`
says how ("10 moved, 20 added").

Hashing 50,000 images on every run would cost more than the audit's own reading of them, so
`fingerprint` reuses the sha256 of a file whose path, size, mtime, ctime (ns) and inode equal
those recorded by the previous fingerprint (`cache`, which the audit keeps in the run
directory, docs/artifacts/runs.md); an unchanged folder is checked by one `stat` per file.
Size and mtime alone are not enough: a file edited in place keeping its size, its mtime set
back (`touch -r`, `os.utime`, a copy that keeps times), has a new ctime, and a file replaced by
a rename a new inode; either is read and hashed again, and its content decides. A URL file
(no ctime, no inode) is judged by its size and mtime.

Images are checked when they are hashed, before anything is written (`check_image`): a file the
audit would fail to decode half way through an evaluation — empty, truncated, not an image,
a dangling link — and an image over `max_pixels` (a decompression bomb: a 389 KB PNG of
20000x20000 decodes to 1.2 GB) are refused in one line naming the file. Pillow reads the
header (format, size, mode) without decoding; a PNG's chunks are read to its end and their
CRCs checked (`Image.verify`), which finds a cut file; a JPEG must end with its EOI marker.
A file is opened only if it is a regular file (a FIFO, a device or a link to one is refused,
`tf_forget.data.image_files`), and an image's header is checked before it is read whole
(`check_header`): a file that is no image, or larger than its declared width x height can
take, is refused unread.
"""

import collections
import dataclasses
import hashlib
import io
from typing import Mapping, Optional, Sequence, Tuple

from tf_forget.artifacts import filesystem
from tf_forget.data import dataset_api
from tf_forget.data import held_files
from tf_forget.data import image_files
from tf_forget.data import png_chunks

# Pillow's own guard warns at 89 megapixels and refuses twice that; a photo of a modern phone
# is 12-50 megapixels. `--max_image_pixels` changes it.
DEFAULT_MAX_PIXELS = 50_000_000
IMAGE_SUFFIXES = (".bmp", ".gif", ".jpeg", ".jpg", ".png")
_FORMATS = {".bmp": "BMP", ".gif": "GIF", ".jpeg": "JPEG", ".jpg": "JPEG", ".png": "PNG"}


@dataclasses.dataclass(frozen=True)
class Entry:
  """One file of a split: its relative path, size, mtime (ns), sha256, for an image its
  (width, height) (so that a cached image is held to a lower `max_pixels` too), and its ctime
  (ns) and inode when it was hashed (None: not known, a URL file or an older record)."""

  path: str
  size: int
  mtime_ns: int
  sha256: str
  shape: Tuple[int, int] = (0, 0)
  ctime_ns: Optional[int] = None
  inode: Optional[int] = None

  def to_json(self):
    return [
      self.path,
      self.size,
      self.mtime_ns,
      self.sha256,
      list(self.shape),
      self.ctime_ns,
      self.inode,
    ]

  @classmethod
  def from_json(cls, row):
    path, size, mtime_ns, sha, shape = row[:5]
    ctime_ns, inode = (list(row[5:7]) + [None, None])[:2]
    width, height = shape
    return cls(
      str(path),
      int(size),
      int(mtime_ns),
      str(sha),
      (int(width), int(height)),
      None if ctime_ns is None else int(ctime_ns),
      None if inode is None else int(inode),
    )

  def unchanged(self, st):
    """Whether the file now stat'ed as `st` (`filesystem.FileStat`) is the one this entry
    hashed: the same size, a known and equal mtime, and, where the file system has them
    (local files), the same ctime and inode."""
    if not st.mtime_ns or (self.size, self.mtime_ns) != (st.size, st.mtime_ns):
      return False
    if st.ctime_ns is None and st.inode is None:  # a URL file: size and mtime are all it has
      return True
    return (self.ctime_ns, self.inode) == (st.ctime_ns, st.inode)


@dataclasses.dataclass(frozen=True)
class Fingerprint:
  """The files of a split and how many of them were read (not taken from the cache)."""

  entries: Tuple[Entry, ...]
  hashed: int

  @property
  def digest(self):
    return digest(self.entries)


def digest(entries):
  """sha256 of the (path, size, sha256) of `entries`, in path order (mtime is not content)."""
  h = hashlib.sha256()
  for e in sorted(entries, key=lambda e: e.path):
    h.update(f"{e.path}\0{e.size}\0{e.sha256}\n".encode("utf-8"))
  return h.hexdigest()


def _pil():
  from PIL import Image  # only where images are checked

  return Image


def check_size(shape, name, max_pixels):
  """Raises `dataset_api.DataError` if an image of `shape` (width, height) has over `max_pixels`."""
  width, height = shape
  if width * height > max_pixels:
    mp = width * height / 1e6
    shown = f"{mp:.0f}" if mp >= 1 else f"{mp:.2g}"
    raise dataset_api.DataError(
      f"{name} is {width}x{height} = {shown} megapixels, over the limit of "
      f"{max_pixels / 1e6:g} (--max_image_pixels)"
    )


def check_image(data, name, max_pixels=DEFAULT_MAX_PIXELS):
  """(width, height) of `data` (a file's bytes), if it is a whole PNG, JPEG, GIF or BMP image
  (as `tf.io.decode_image` reads them) of at most `max_pixels` pixels; else `dataset_api.DataError`.

  Args:
    data: the file's bytes.
    name: how the error names the file ("image 3/a.png of folder /data").
    max_pixels: the largest width x height accepted.
  """
  if not data:
    raise dataset_api.DataError(f"{name} is empty (0 bytes)")
  if data[:8] == png_chunks.SIGNATURE:  # its chunks and checksums, without Pillow's image object
    try:
      shape = png_chunks.size_of(data)
    except png_chunks.PngError as e:
      raise dataset_api.DataError(f"{name} is a truncated or corrupt PNG ({e})") from e
    check_size(shape, name, max_pixels)
    return shape
  image_lib = _pil()
  guard, image_lib.MAX_IMAGE_PIXELS = image_lib.MAX_IMAGE_PIXELS, None  # ours is max_pixels
  try:
    image = image_lib.open(io.BytesIO(data))
    fmt, (width, height) = image.format, image.size
  except image_lib.UnidentifiedImageError as e:
    raise dataset_api.DataError(
      f"{name} is not an image (its bytes start {data[:8]!r}, not a PNG, JPEG, GIF or BMP header)"
    ) from e
  except Exception as e:  # Pillow raises many kinds
    raise dataset_api.DataError(
      f"{name} is not a readable image ({type(e).__name__}: {' '.join(str(e).split())[:120]})"
    ) from e
  finally:
    image_lib.MAX_IMAGE_PIXELS = guard
  if fmt not in set(_FORMATS.values()):
    raise dataset_api.DataError(f"{name} is a {fmt} image; the audit reads PNG, JPEG, GIF and BMP")
  check_size((width, height), name, max_pixels)
  if fmt == "JPEG" and b"\xff\xd9" not in data[-64:]:
    raise dataset_api.DataError(f"{name} is a truncated JPEG (no end-of-image marker)")
  return (int(width), int(height))


_MAGIC = (b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"GIF87a", b"GIF89a", b"BM")
BYTES_PER_PIXEL = 8  # the most an image file spends on a pixel: 16-bit RGBA, stored unpacked
METADATA_BYTES = 16_000_000  # what it may hold besides its pixels (ICC profile, EXIF, text)


def check_header(head, size, name, max_pixels=DEFAULT_MAX_PIXELS):
  """The most bytes an image file may hold, from its first bytes `head` and its `size`, before
  it is read whole; `dataset_api.DataError` if `head` is no PNG, JPEG, GIF or BMP header, if
  it declares over `max_pixels` pixels, or if `size` is over what its width x height take
  (`BYTES_PER_PIXEL` each, plus `METADATA_BYTES`).

  A header Pillow cannot read from `head` alone (a JPEG whose metadata segments come first)
  leaves the file to `check_image`, read whole up to `image_files.MAX_IMAGE_BYTES`.
  """
  if size <= len(head):  # `head` is the whole file: `check_image` checks it
    return image_files.MAX_IMAGE_BYTES
  image_lib = _pil()
  guard, image_lib.MAX_IMAGE_PIXELS = image_lib.MAX_IMAGE_PIXELS, None  # ours is max_pixels
  try:
    image = image_lib.open(io.BytesIO(head))
    fmt, (width, height) = image.format, image.size
  except Exception:  # Pillow raises many kinds
    if not head.startswith(_MAGIC):
      raise dataset_api.DataError(
        f"{name} is not an image (its bytes start {head[:8]!r}, not a PNG, JPEG, GIF or BMP header)"
      ) from None
    return image_files.MAX_IMAGE_BYTES  # a header longer than `head`
  finally:
    image_lib.MAX_IMAGE_PIXELS = guard
  if fmt not in set(_FORMATS.values()):
    raise dataset_api.DataError(f"{name} is a {fmt} image; the audit reads PNG, JPEG, GIF and BMP")
  check_size((width, height), name, max_pixels)
  limit = min(width * height * BYTES_PER_PIXEL + METADATA_BYTES, image_files.MAX_IMAGE_BYTES)
  if size > limit:
    raise image_files.too_big(name, size, limit, f"a {width}x{height} image takes")
  return limit


def fingerprint(files, cache=None, check=None, name=str):
  """The `Fingerprint` of `files`, reading only files the cache does not know.

  Args:
    files: sequence of (relative path, path) to identify.
    cache: optional {relative path: Entry} of a previous fingerprint; an entry of equal path
      whose file is unchanged (`Entry.unchanged`: size, mtime, ctime, inode) is reused without
      reading the file.
    check: optional callable(bytes, relative path) -> (width, height) or None, run on every
      file read (`image_check`); a cached entry was checked when it was read, and its recorded
      shape is held to `check.max_pixels` (if the check has one) again. Its optional
      `header(head, size, relative path)` checks a file's first bytes before it is read whole
      (`image_files.read`).
    name: callable(relative path) -> how an error names the file.

  Within `held_files.holding()`, the bytes of a split whose every file was read are held there.

  Raises:
    dataset_api.DataError: a file cannot be read (missing, a dangling link), or `check` refuses it.
  """
  cache = cache or {}
  entries, hashed = [], 0
  read, size = ({}, 0) if held_files.active() else (None, 0)  # every byte read, for `held_files`
  for rel, path in files:
    st = image_files.stat(path, name(rel), filesystem.stat)
    old = cache.get(rel)
    if old is not None and old.unchanged(st):
      if getattr(check, "max_pixels", None):
        check_size(old.shape, name(rel), check.max_pixels)
      entries.append(old)
      continue
    header = getattr(check, "header", None)
    try:  # a regular file only, its header checked before the rest is read (`image_files`)
      data = image_files.read(
        path, name(rel), st.size, header and (lambda head, size, rel=rel: header(head, size, rel))
      )
    except (OSError,) + tuple(filesystem.io_errors()) as e:
      raise dataset_api.DataError(f"cannot read {name(rel)}: {' '.join(str(e).split())}") from e
    shape = check(data, rel) if check is not None else None
    if read is not None:
      read[rel], size = data, size + len(data)
      read = read if size <= held_files.HELD_BYTES else None
    entries.append(
      Entry(
        rel,
        len(data),
        st.mtime_ns,
        hashlib.sha256(data).hexdigest(),
        tuple(shape or (0, 0)),
        st.ctime_ns,
        st.inode,
      )
    )
    hashed += 1
  found = Fingerprint(tuple(entries), hashed)
  if read is not None and hashed == len(entries):
    held_files.keep(found.digest, read)
  return found


def describe(old, new):
  """How the files changed: "10 moved, 20 added, 3 edited, 2 removed" ("" if equal).

  A file under a new path with the bytes of a file that left its old path is "moved" (an image
  moved to another class folder); a path whose bytes changed is "edited".

  Args:
    old, new: sequences of `Entry`.
  """
  before = {e.path: e for e in old}
  after = {e.path: e for e in new}
  gone = [before[p] for p in before if p not in after]
  came = [after[p] for p in after if p not in before]
  edited = sum(1 for p in after if p in before and after[p].sha256 != before[p].sha256)
  left = collections.Counter(e.sha256 for e in gone)
  moved = 0
  for e in came:
    if left[e.sha256] > 0:
      left[e.sha256] -= 1
      moved += 1
  counts = (
    ("moved", moved),
    ("added", len(came) - moved),
    ("edited", edited),
    ("removed", len(gone) - moved),
  )
  return ", ".join(f"{n} {what}" for what, n in counts if n)


def image_check(describe_file, max_pixels=DEFAULT_MAX_PIXELS):
  """A `fingerprint` check running `check_image` on files with an image suffix.

  Args:
    describe_file: callable(relative path) -> how an error names it.
    max_pixels: see `check_image`.
  """

  def check(data, rel):
    if rel.lower().endswith(IMAGE_SUFFIXES):
      return check_image(data, describe_file(rel), max_pixels)
    return None

  def header(head, size, rel):  # `check_header` before an image is read whole
    if rel.lower().endswith(IMAGE_SUFFIXES):
      return check_header(head, size, describe_file(rel), max_pixels)
    return None

  check.max_pixels = max_pixels
  check.header = header
  return check


def entries_from_json(rows) -> Sequence[Entry]:
  return tuple(Entry.from_json(r) for r in rows or ())


def cache_of(entries: Optional[Sequence[Entry]]) -> Mapping[str, Entry]:
  return {e.path: e for e in entries or ()}
