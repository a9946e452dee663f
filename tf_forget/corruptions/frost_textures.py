"""The six frost textures of ImageNet-C, read from the installed `imagecorruptions` package.

The textures ship with Hendrycks' scripts and with `imagecorruptions` 1.1.2 (Apache-2.0 code;
the images' own origin and license are unclear), so this project does not vendor them: they are
read from the `imagecorruptions/frost/` directory of the installed package, located with
`importlib.util.find_spec` (which finds a top-level package without executing it — importing
imagecorruptions would pull in scikit-image and the deprecated pkg_resources), and
each file is checked against the SHA-256 below before use. `TF_FORGET_FROST_DIR` overrides
the directory (same files, same checksums).
"""

import functools
import hashlib
import importlib.util
import math
import os

import cv2

from tf_forget.corruptions import tables

FROST_FILES = ("frost1.png", "frost2.png", "frost3.png", "frost4.jpg", "frost5.jpg", "frost6.jpg")

# sha256 of the files in imagecorruptions==1.1.2 (wheel from PyPI).
FROST_SHA256 = {
  "frost1.png": "ff9f907860bd7a835d459e32f9d588062b7f61ee267343cc7222b56753a14755",
  "frost2.png": "fe211a89b336999c207a852ce05818d4545d0b57c5beadd824b4cc9d9a9b6137",
  "frost3.png": "2d0d50b4a9bb213f38b024ef7768731bb83cc08d2f26b5766bbc167cdfa0e504",
  "frost4.jpg": "3f8b91ca1a9fa7167b09e773da53f5ae60d0a1fd88f02a783f6e328a72887f6e",
  "frost5.jpg": "5fc6a19df4a429ba68abdcc8f8a4278d4c9f81c9ccafd2c92ab0c8cf8992ebd2",
  "frost6.jpg": "1f92b2f48408748085b68dd81d816ef239f42cef3029c25d041fcb6760fb4f25",
}

ENV_VAR = "TF_FORGET_FROST_DIR"


class FrostTextureError(tables.CorruptionError):
  """The frost textures cannot be found or do not match their checksums."""


def texture_dir():
  """The directory holding the frost textures (see module docstring).

  Raises:
    FrostTextureError: imagecorruptions is not installed and no override is set.
  """
  override = os.environ.get(ENV_VAR)
  if override:
    return override
  spec = importlib.util.find_spec("imagecorruptions")
  if spec is None or not spec.submodule_search_locations:
    raise FrostTextureError(
      "frost needs the textures of the imagecorruptions package: "
      "pip install imagecorruptions==1.1.2 (or set TF_FORGET_FROST_DIR)"
    )
  return os.path.join(list(spec.submodule_search_locations)[0], "frost")


@functools.lru_cache(maxsize=None)
def load(index):
  """Frost texture `index` (0..5) as a BGR uint8 array `[h, w, 3]`, as `cv2.imread` gives it.

  Raises:
    FrostTextureError: missing file or checksum mismatch.
  """
  name = FROST_FILES[index]
  path = os.path.join(texture_dir(), name)
  try:
    with open(path, "rb") as f:
      data = f.read()
  except OSError as e:
    raise FrostTextureError(f"cannot read frost texture {path}: {e.strerror}") from e
  digest = hashlib.sha256(data).hexdigest()
  if digest != FROST_SHA256[name]:
    raise FrostTextureError(
      f"frost texture {path} has sha256 {digest}, expected {FROST_SHA256[name]}"
    )
  image = cv2.imread(path)
  if image is None:
    raise FrostTextureError(f"cannot decode frost texture {path}")
  image.setflags(write=False)
  return image


def fit_scale(texture_shape, height, width):
  """imagecorruptions' rescale factor: the texture covers the image, times 1.1."""
  fh, fw = texture_shape[:2]
  if fh >= height and fw >= width:
    scale = 1
  elif fh < height and fw >= width:
    scale = height / fh
  elif fh >= height and fw < width:
    scale = width / fw
  else:
    scale = max(height / fh, width / fw)
  return scale * 1.1


@functools.lru_cache(maxsize=64)
def resized(index, height, width, scale):
  """Texture `index` resized for an image of `height` x `width`.

  Args:
    index: texture index.
    height: image height.
    width: image width.
    scale: "fit" (imagecorruptions: `fit_scale`, bicubic, ceil of the new size) or a factor
      (Hendrycks: `cv2.resize(fx=fy=scale)`, bilinear; 1.0 = no resize). If the result is not
      larger than the image in both sides, the "fit" rule is used instead (small factors on
      large images).

  Returns:
    BGR uint8 `[h, w, 3]`, read-only.
  """
  texture = load(index)
  if scale != "fit":
    out = texture if scale == 1.0 else cv2.resize(texture, (0, 0), fx=scale, fy=scale)
    if out.shape[0] > height and out.shape[1] > width:
      return out
  factor = fit_scale(texture.shape, height, width)
  size = (int(math.ceil(texture.shape[1] * factor)), int(math.ceil(texture.shape[0] * factor)))
  out = cv2.resize(texture, dsize=size, interpolation=cv2.INTER_CUBIC)
  out.setflags(write=False)
  return out
