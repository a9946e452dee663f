"""A user's Keras model file held to a size cap before anything parses it
(`tf_forget.export.model_archive`): a `.keras` member that records more than the cap is
refused unread, and one that inflates beyond the size its archive records is read no further
than that size. The cap is lowered where that keeps the files small; memory is measured with
`tracemalloc` (the bytes of a member read are Python's).
"""

import json
import struct
import tracemalloc
import zipfile

import pytest

from tf_forget.export import model_archive
from tf_forget.export import model_files


def _lying_archive(path, inflated, recorded):
  """A `.keras` zip whose `config.json` inflates to `inflated` bytes, its local and central
  headers saying `recorded`."""
  with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
    archive.writestr("metadata.json", json.dumps({"keras_version": "2.15.0"}))
    archive.writestr("config.json", b"[" + b"0," * (inflated // 2 - 1) + b"0]")
  data = bytearray(path.read_bytes())
  with zipfile.ZipFile(path) as archive:
    info = archive.getinfo("config.json")
  struct.pack_into("<I", data, info.header_offset + 22, recorded)  # local file header
  for offset in _central_entries(data):
    name_len = struct.unpack_from("<H", data, offset + 28)[0]
    if bytes(data[offset + 46 : offset + 46 + name_len]) == b"config.json":
      struct.pack_into("<I", data, offset + 24, recorded)  # its central directory entry
  path.write_bytes(bytes(data))
  return path


def _central_entries(data):
  """Offsets of the central directory's file headers ("PK\\x01\\x02")."""
  offset = data.find(b"PK\x01\x02")
  while offset != -1:
    yield offset
    offset = data.find(b"PK\x01\x02", offset + 4)


def test_a_member_inflating_beyond_its_recorded_size_is_read_no_further(tmp_path):
  bomb = _lying_archive(tmp_path / "bomb.keras", inflated=50_000_000, recorded=1000)
  with zipfile.ZipFile(bomb) as archive:
    assert archive.getinfo("config.json").file_size == 1000  # what a reader is told
  tracemalloc.start()
  try:
    with pytest.raises(model_archive.ArchiveError) as info:
      model_files.detect(str(bomb))
    peak = tracemalloc.get_traced_memory()[1]
  finally:
    tracemalloc.stop()
  assert str(info.value).startswith(
    f"model file {bomb}: its config.json does not unpack to the 1 kB its archive records"
  )
  assert peak < 5_000_000  # not the 50 MB it holds


def test_a_member_recording_more_than_the_cap_is_refused_unread(tmp_path, monkeypatch):
  monkeypatch.setattr(model_archive, "MAX_JSON_BYTES", 10_000)
  path = tmp_path / "big.keras"
  with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
    archive.writestr("metadata.json", json.dumps({"keras_version": "3.10.0"}))
    archive.writestr("config.json", json.dumps({"pad": "x" * 20_000}))
  with pytest.raises(
    model_archive.ArchiveError,
    match=(
      r"its config.json unpacks to 20 kB, over the 10 kB a model's configuration may take "
      r"\(refused unread\)$"
    ),
  ):
    model_archive.check(str(path))
  monkeypatch.setattr(model_archive, "MAX_JSON_BYTES", 30_000)
  assert model_files.detect(str(path)) == "keras3"  # under the cap: read as before
