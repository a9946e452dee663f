"""The user's files identified by content (`tf_forget.data.fingerprint`)."""

import hashlib
import io
import os

from PIL import Image
import pytest

from tf_forget.data import dataset_api
from tf_forget.data import fingerprint


def _png(size=(8, 8), value=0):
  buffer = io.BytesIO()
  Image.new("L", size, value).save(buffer, format="PNG")
  return buffer.getvalue()


def _jpeg():
  buffer = io.BytesIO()
  Image.effect_noise((64, 64), 40).convert("RGB").save(buffer, format="JPEG")
  return buffer.getvalue()


def _folder(root, files):
  for rel, data in files.items():
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
  return [(rel, str(root / rel)) for rel in sorted(files)]


def test_entries_are_path_size_and_sha256(tmp_path):
  data = {"a/1.png": _png(value=1), "b/2.png": _png(value=2)}
  fp = fingerprint.fingerprint(_folder(tmp_path, data))
  assert fp.hashed == 2
  for entry in fp.entries:  # the sha256 of the bytes, computed here by hashlib directly
    assert entry.sha256 == hashlib.sha256(data[entry.path]).hexdigest()
    assert entry.size == len(data[entry.path])
  # The digest is a function of (path, size, sha256) only: the same bytes elsewhere, later
  # (another mtime), give the same digest.
  again = fingerprint.fingerprint(_folder(tmp_path / "copy", data))
  assert again.digest == fp.digest


def test_an_unchanged_file_is_not_read_again(tmp_path):
  files = _folder(tmp_path, {f"c/{i}.png": _png(value=i) for i in range(20)})
  first = fingerprint.fingerprint(files, check=fingerprint.image_check(str))
  assert {e.shape for e in first.entries} == {(8, 8)}
  cache = fingerprint.cache_of(first.entries)
  second = fingerprint.fingerprint(files, cache=cache)
  assert (first.hashed, second.hashed) == (20, 0)
  assert second.digest == first.digest
  # A cached image is held to a lower pixel limit too (its shape is recorded).
  with pytest.raises(dataset_api.DataError, match=r"c/0.png is 8x8 = 6.4e-05 megapixels"):
    fingerprint.fingerprint(files, cache=cache, check=fingerprint.image_check(str, max_pixels=50))
  # An edit in place (same size, new mtime) is read again and changes the digest.
  path = tmp_path / "c" / "3.png"
  path.write_bytes(_png(value=200))
  os.utime(path, ns=(1, 1))
  third = fingerprint.fingerprint(files, cache=cache)
  assert third.hashed == 1 and third.digest != first.digest


def test_an_edit_keeping_size_and_mtime_is_read_again(tmp_path):
  """Size and mtime say "unchanged"; the ctime (an edit in place) or the inode (a file
  renamed over it) does not, and the content decides."""
  files = _folder(tmp_path, {f"c/{i}.png": _png(value=i) for i in range(4)})
  first = fingerprint.fingerprint(files)
  cache = fingerprint.cache_of(first.entries)
  path = tmp_path / "c" / "1.png"
  st = path.stat()
  path.write_bytes(_png(value=99))  # the same size: an 8x8 PNG of one value
  os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
  assert (path.stat().st_size, path.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
  edited = fingerprint.fingerprint(files, cache=cache)
  assert edited.hashed == 1 and edited.digest != first.digest
  assert fingerprint.describe(first.entries, edited.entries) == "1 edited"
  cache = fingerprint.cache_of(edited.entries)
  other = tmp_path / "other.png"
  other.write_bytes(_png(value=2))
  os.utime(other, ns=(st.st_atime_ns, (tmp_path / "c" / "2.png").stat().st_mtime_ns))
  os.replace(other, tmp_path / "c" / "2.png")  # the same bytes under a new inode
  renamed = fingerprint.fingerprint(files, cache=cache)
  assert renamed.hashed == 1 and renamed.digest == edited.digest
  again = fingerprint.fingerprint(files, cache=fingerprint.cache_of(renamed.entries))
  assert again.hashed == 0
  # Records written before ctime and inode were (five fields) are read again once.
  old = [fingerprint.Entry.from_json(e.to_json()[:5]) for e in again.entries]
  assert fingerprint.fingerprint(files, cache=fingerprint.cache_of(old)).hashed == 4


def test_describe_counts_moved_added_edited_removed():
  e = fingerprint.Entry
  old = [
    e("3/a.png", 1, 1, "A"),
    e("3/b.png", 1, 1, "B"),
    e("4/c.png", 1, 1, "C"),
    e("4/d.png", 1, 1, "D"),
    e("7/e.png", 1, 1, "E"),
  ]
  # a.png and b.png moved from class 3 to class 5; c edited; d removed; two new files.
  new = [
    e("5/a.png", 1, 2, "A"),
    e("5/b.png", 1, 2, "B"),
    e("4/c.png", 1, 2, "C2"),
    e("7/e.png", 1, 1, "E"),
    e("8/f.png", 1, 1, "F"),
    e("8/g.png", 1, 1, "G"),
  ]
  assert fingerprint.describe(old, new) == "2 moved, 2 added, 1 edited, 1 removed"
  assert fingerprint.describe(old, old) == ""
  assert fingerprint.digest(old) != fingerprint.digest(new)


@pytest.mark.parametrize(
  "data, expected",
  [
    (b"", r"is empty \(0 bytes\)"),
    (b"hello, I am text", "is not an image"),
    (_png()[:60], "truncated or corrupt PNG"),
    (_png()[:-13], "truncated or corrupt PNG"),  # IEND chunk cut off
    (_jpeg()[:-100], "truncated JPEG"),
  ],
)
def test_bad_images_are_one_line(data, expected):
  with pytest.raises(dataset_api.DataError, match=expected) as info:
    fingerprint.check_image(data, "image x.png")
  assert "\n" not in str(info.value) and str(info.value).startswith("image x.png")


def test_whole_images_pass_and_the_pixel_limit_refuses():
  fingerprint.check_image(_png(), "a.png")
  fingerprint.check_image(_jpeg(), "a.jpg")
  with pytest.raises(
    dataset_api.DataError,
    match=r"is 80x80 = 0.0064 megapixels, over the limit of "
    r"0.005 \(--max_image_pixels\)",
  ):
    fingerprint.check_image(_png((80, 80)), "big.png", max_pixels=5000)
  # A 20000 x 20000 PNG of zeros is a few hundred KB; only its header is read for the check.
  bomb = _png((20000, 20000))
  assert len(bomb) < 2_000_000
  with pytest.raises(dataset_api.DataError, match="is 20000x20000 = 400 megapixels"):
    fingerprint.check_image(bomb, "bomb.png")


def test_a_dangling_link_is_named(tmp_path):
  link = tmp_path / "x.png"
  os.symlink(tmp_path / "nowhere.png", link)
  with pytest.raises(dataset_api.DataError, match="x.png is a dangling link"):
    fingerprint.fingerprint([("x.png", str(link))])
