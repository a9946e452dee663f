"""The `imagecorruptions` 1.1.2 reference, patched for today's stack (tests and benchmark only).

imagecorruptions 1.1.2 (Michaelis et al. 2019, the size-generic version of Hendrycks' scripts)
breaks on numpy >= 2 (`np.float_` in fog's plasma_fractal) and scikit-image >= 0.19/0.25
(the removed `multichannel=True` of `skimage.filters.gaussian` in gaussian_blur / glass_blur).
`load()` imports it and patches only its module globals — a numpy shim with `float_`, a
`gaussian` that maps `multichannel=True` to `channel_axis=-1`, and a `random_noise` that draws
from a `Generator` we seed — without touching numpy or skimage themselves.

`corrupt(name, image, severity, seed)` runs one reference corruption with the same draws as
`corruption_registry.apply(name, ..., seeds=[seed], table="imagecorruptions")`:
`np.random.seed(seed)` for the legacy global draws and `np.random.default_rng(seed)` for skimage's
impulse noise. imagecorruptions is a test-only dependency; nothing in the library imports this
module.
"""

import types
import warnings

import numpy as np
from PIL import Image
from scipy import ndimage

_STATE = {}


class _NumpyShim(types.ModuleType):
  """numpy with the `float_` alias numpy 2 removed."""

  float_ = np.float64

  def __getattr__(self, name):
    return getattr(np, name)


def load():
  """Imports and patches `imagecorruptions.corruptions`; returns the module (cached)."""
  if "module" in _STATE:
    return _STATE["module"]
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from imagecorruptions import corruptions as icc
    import skimage
    import skimage.color
    import skimage.util
  original_gaussian = icc.gaussian

  def gaussian(image, sigma=1, multichannel=None, **kwargs):
    if multichannel:
      kwargs["channel_axis"] = -1
    return original_gaussian(image, sigma=sigma, **kwargs)

  def random_noise(image, mode="gaussian", **kwargs):
    return skimage.util.random_noise(image, mode=mode, rng=_STATE["generator"], **kwargs)

  icc.np = _NumpyShim("numpy")
  icc.gaussian = gaussian
  icc.sk = types.SimpleNamespace(
    util=types.SimpleNamespace(random_noise=random_noise), color=skimage.color
  )
  _STATE["module"] = icc
  return icc


def corrupt(name, image, severity, seed):
  """One reference corruption of a uint8 image `[H, W, 3]` with draws seeded by `seed`.

  Returns:
    uint8 `[H, W, 3]`, as `imagecorruptions.corrupt` returns it (`np.uint8` of the result).
  """
  icc = load()
  np.random.seed(int(seed))
  _STATE["generator"] = np.random.default_rng(int(seed))
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    out = getattr(icc, name)(Image.fromarray(image), severity)
    return np.uint8(np.asarray(out))  # NaN (spatter's empty mask) casts with a warning


def synthetic_images(n, height, width, seed=0, channels=3):
  """Deterministic natural-looking test images: smooth fields, texture noise and a block.

  Args:
    n: number of images.
    height: image height.
    width: image width.
    seed: generator seed.
    channels: 1 or 3.

  Returns:
    uint8 `[n, height, width, channels]`.
  """
  gen = np.random.default_rng(seed)
  shape = (n, height, width, channels)
  smooth = ndimage.gaussian_filter(gen.normal(size=shape), (0, 3, 3, 0))
  low = smooth.min(axis=(1, 2, 3), keepdims=True)
  span = np.ptp(smooth, axis=(1, 2, 3), keepdims=True) + 1e-12
  images = (smooth - low) / span * 200 + gen.normal(size=shape) * 8 + 20
  for i in range(n):
    y, x = gen.integers(0, max(1, height // 2)), gen.integers(0, max(1, width // 2))
    images[i, y : y + max(1, height // 3), x : x + max(1, width // 3)] = gen.integers(
      0, 256, channels
    )
  return np.clip(images, 0, 255).astype(np.uint8)
