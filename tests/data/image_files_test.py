"""The user's data files read as regular files only, an image's header checked before it is
read whole (`tf_forget.data.image_files`, `fingerprint.check_header`), through `fingerprint`:
the reader of every file of a split, also of those no folder listing checks (a `labels.txt`,
an attributes CSV, the files of a `gs://` folder).

A FIFO is opened under an alarm, so that a regression fails instead of hanging; memory is
measured with `tracemalloc` (the bytes of a file read are Python's).
"""

import io
import os
import tracemalloc

from PIL import Image
import pytest

from tests import files
from tf_forget.data import dataset_api
from tf_forget.data import fingerprint


def _png(size=(8, 8)):
  buffer = io.BytesIO()
  Image.new("L", size, 7).save(buffer, format="PNG")
  return buffer.getvalue()


def _refusal(path, rel):
  """The one-line refusal of fingerprinting `path` as `rel` (with the image check), and the
  peak of Python's allocations meanwhile (Pillow's format plugins loaded before)."""
  Image.init()
  tracemalloc.start()
  try:
    with files.time_bound(60), pytest.raises(dataset_api.DataError) as info:
      fingerprint.fingerprint([(rel, str(path))], check=fingerprint.image_check(str))
    peak = tracemalloc.get_traced_memory()[1]
  finally:
    tracemalloc.stop()
  assert "\n" not in str(info.value)
  return str(info.value), peak


def test_a_fifo_or_a_link_to_a_device_is_refused_unopened(tmp_path):
  os.mkfifo(tmp_path / "labels.txt")
  assert _refusal(tmp_path / "labels.txt", "labels.txt")[0] == (
    "labels.txt is a FIFO (named pipe), not a regular file; only regular files are read"
  )
  os.symlink("/dev/zero", tmp_path / "y.png")
  message, peak = _refusal(tmp_path / "y.png", "0/y.png")
  assert message == (
    "0/y.png is a link to /dev/zero, a character device; only regular files are read"
  )
  assert peak < 1_000_000


def test_a_large_file_is_refused_by_its_first_bytes(tmp_path):
  zeros = tmp_path / "z.png"
  with open(zeros, "wb") as f:
    f.truncate(300_000_000)  # sparse: no disk used
  message, peak = _refusal(zeros, "0/z.png")
  assert message == (
    "0/z.png is not an image (its bytes start "
    "b'\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00', not a PNG, JPEG, GIF or BMP "
    "header)"
  )
  assert peak < 1_000_000  # its first 64 kB only
  padded = tmp_path / "p.png"
  with open(padded, "wb") as f:
    f.write(_png())
    f.truncate(50_000_000)  # an 8x8 PNG header, then 50 MB
  message, peak = _refusal(padded, "0/p.png")
  assert message == "0/p.png is 50 MB, more than a 8x8 image takes (16 MB)"
  assert peak < 1_000_000


def test_a_regular_image_is_read_and_checked_as_before(tmp_path):
  (tmp_path / "a.png").write_bytes(_png((12, 9)))
  os.symlink("a.png", tmp_path / "b.png")  # a link to a regular file is read
  fp = fingerprint.fingerprint(
    [("a.png", str(tmp_path / "a.png")), ("b.png", str(tmp_path / "b.png"))],
    check=fingerprint.image_check(str),
  )
  assert [e.shape for e in fp.entries] == [(12, 9), (12, 9)]
  assert fp.entries[0].sha256 == fp.entries[1].sha256
