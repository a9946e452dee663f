"""How a corruption-cache shard stores its images: PNG per image, or one deflated array.

A shard is an npz: the images as PNG bytes with their offsets and shape (`png`: exact pixels,
about 2x smaller than deflate on natural images) or as one `np.savez_compressed` array
(`deflate`, better below `PNG_MIN_PIXELS`), beside the labels, ids and attributes as they are.
`raw` (an uncompressed array) is read only, from shards written by an older version.
"""

import io

import numpy as np

from tf_forget.artifacts import errors

ENCODINGS = ("png", "deflate", "raw")
PNG_MIN_PIXELS = 32 * 32  # PNG's per-image overhead loses to deflate below this (8x8 digits)
PNG_LEVEL = 1  # measured: x1.87 at 6.8 ms an image vs level 6's x1.95 at 18 ms (218x178x3)


def encoding_for_shape(image_shape):
  """The shard encoding for images of `image_shape` (H, W, C): "png" or "deflate"."""
  height, width = image_shape[:2]
  return "png" if int(height) * int(width) >= PNG_MIN_PIXELS else "deflate"


def encode(encoding, images, **arrays):
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
    import cv2  # OpenCV: only where PNG is used

    chunks = []
    for image in images:
      ok, png = cv2.imencode(".png", image, [cv2.IMWRITE_PNG_COMPRESSION, PNG_LEVEL])
      if not ok:
        raise errors.Error(f"OpenCV could not PNG-encode an image of shape {image.shape}")
      chunks.append(png.reshape(-1))
    offsets = np.zeros(len(chunks) + 1, np.int64)
    offsets[1:] = np.cumsum([len(c) for c in chunks])
    data = np.concatenate(chunks) if chunks else np.zeros(0, np.uint8)
    np.savez(
      buf,
      png_bytes=data,
      png_offsets=offsets,
      png_shape=np.asarray(images.shape, np.int64),
      **arrays,
    )
  elif encoding == "deflate":
    np.savez_compressed(buf, images=images, **arrays)
  else:
    raise errors.Error(f"unknown corruption cache encoding {encoding!r}")
  return buf.getvalue()


def decode_images(encoding, arrays):
  """uint8 `[n, H, W, C]` images of a shard read by `fileio.read_npz` (exact pixels)."""
  if encoding in ("raw", "deflate"):
    return arrays.pop("images")
  import cv2

  data, offsets = arrays.pop("png_bytes"), arrays.pop("png_offsets")
  shape = tuple(int(v) for v in arrays.pop("png_shape"))
  images = np.empty(shape, np.uint8)
  for i in range(shape[0]):
    image = cv2.imdecode(data[offsets[i] : offsets[i + 1]], cv2.IMREAD_UNCHANGED)
    if image is None or image.size != images[i].size:
      raise errors.ReadError(f"PNG image {i} does not decode to {shape[1:]}")
    images[i] = image.reshape(shape[1:])
  return images
