"""PNG structure check: sizes and verdicts equal Pillow's (open + verify) on valid, truncated and
corrupted files."""

import io
import struct
import zlib

import numpy as np
from PIL import Image
from PIL import PngImagePlugin
import pytest

from tf_forget.data import png_chunks


def _png(mode, size=(7, 5), text=False):
  image = Image.fromarray(np.random.default_rng(0).integers(0, 256, size[::-1], np.uint8))
  image = image.convert(mode) if mode != "I;16" else image.convert("I").convert("I;16")
  info = PngImagePlugin.PngInfo()
  if text:
    info.add_text("Comment", "an ancillary chunk")
  buffer = io.BytesIO()
  image.save(buffer, format="PNG", pnginfo=info)
  return buffer.getvalue()


FILES = [
  _png("L"),
  _png("RGB", (3, 9), text=True),
  _png("RGBA"),
  _png("P"),
  _png("1"),
  _png("I;16"),
]


def _pillow_size(data):
  """(width, height) if Pillow opens and verifies `data` as a PNG, else None."""
  try:
    image = Image.open(io.BytesIO(data))
    size = image.size
    if image.format != "PNG":
      return None
    image.verify()
    return size
  except Exception:
    return None


def _ours(data):
  try:
    return png_chunks.size_of(data)
  except png_chunks.PngError:
    return None


@pytest.mark.parametrize("index", range(len(FILES)))
def test_valid_files_have_pillows_size(index):
  assert png_chunks.size_of(FILES[index]) == _pillow_size(FILES[index]) is not None


def test_truncations_and_byte_flips_get_pillows_verdict():
  rng = np.random.default_rng(1)
  cases = 0
  for data in FILES:
    variants = [data[:n] for n in range(0, len(data))]
    for _ in range(150):
      flipped = bytearray(data)
      flipped[rng.integers(len(data))] ^= int(rng.integers(1, 256))
      variants.append(bytes(flipped))
    for variant in variants:
      assert _ours(variant) == _pillow_size(variant), (len(data), variant[:40])
      cases += 1
  assert cases > 900


@pytest.mark.parametrize(
  "data, message",
  [
    (b"GIF89a", "no PNG signature"),
    (FILES[0][:-12], "ends at byte"),
    (FILES[0][:8] + FILES[0][33:], "not a 13-byte IHDR"),
    (FILES[0][:-13] + b"\0" + FILES[0][-12:], "CRC mismatch in the IDAT chunk"),
    (FILES[0][:12] + b"IHDX" + FILES[0][16:], "CRC mismatch in the IHDX chunk"),
  ],
)
def test_errors_say_where(data, message):
  with pytest.raises(png_chunks.PngError, match=message):
    png_chunks.size_of(data)


def _with_header(width, height, depth, colour, compression=0, filtering=0, interlace=0):
  """FILES[0] with another IHDR (its CRC right)."""
  body = struct.pack(">IIBBBBB", width, height, depth, colour, compression, filtering, interlace)
  chunk = b"IHDR" + body
  data = FILES[0]
  return data[:8] + struct.pack(">I", 13) + chunk + struct.pack(">I", zlib.crc32(chunk)) + data[33:]


@pytest.mark.parametrize(
  "header, message",
  [
    ((7, 5, 16, 3), "colour type 3 with bit depth 16"),  # Pillow refuses these too
    ((7, 5, 8, 5), "colour type 5 with bit depth 8"),
    ((0, 5, 8, 0), "size 0x5"),
    ((7, 5, 8, 0, 1), "methods 1/0/0"),  # Pillow opens and verifies these two; no decoder
    ((7, 5, 8, 0, 0, 0, 2), "methods 0/0/2"),  # reads them (§10.1, §8.1)
  ],
)
def test_headers_no_decoder_reads_are_refused(header, message):
  with pytest.raises(png_chunks.PngError, match=message):
    png_chunks.size_of(_with_header(*header))
  assert png_chunks.size_of(_with_header(7, 5, 8, 0, 0, 0, 1)) == (7, 5)  # Adam7 interlace
