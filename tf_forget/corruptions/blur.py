"""Blur corruptions: defocus, glass, motion, zoom and gaussian blur (Hendrycks & Dietterich 2019).

Re-implementations of the scripts named in `tables.py` (000 §4 Table 3 and 003 §5 use these
corruptions through ImageNet-C / CIFAR-10-C); batch in, batch out (uint8 `[N, H, W, C]`).

Small images (e.g. 8x8 digits): the defocus disk is cropped to the image (at most 2H - 1 by
2W - 1 taps) and renormalised if that cropped any weight; the motion kernel stops at the image
border and the kept taps are renormalised (`corruption_kit.motion_blur_image`); glass_blur's shuffle
visits no pixel when max_delta leaves no interior (it is then two Gaussian blurs); Gaussian
filters and zooms work at any size. Grayscale: every blur is channel-wise.
"""

import cv2
import numpy as np

from tf_forget.corruptions import corruption_kit
from tf_forget.corruptions import glass_kernel
from tf_forget.corruptions import tables
from tf_forget.corruptions import zoom_kernel


def gaussian_blur(images, severity, seeds, table):
  """Gaussian blur with sigma c (skimage semantics: mode 'nearest', truncate 4)."""
  del seeds  # deterministic
  c = tables.params(table, "gaussian_blur", severity)
  x = corruption_kit.gaussian(corruption_kit.to_float(images), c)
  return corruption_kit.to_uint8(np.clip(x, 0, 1) * 255)


def glass_blur(images, severity, seeds, table, swap=False, use_numba=None):
  """Gaussian blur, local pixel shuffle, Gaussian blur (see `glass_kernel` for the quirk).

  Args:
    images: uint8 `[N, H, W, C]`.
    severity: 1..5.
    seeds: `[N]` per-image seeds.
    table: severity table name; entries are (sigma, max_delta, iterations).
    swap: swap instead of the reference's copy (default False: reference-faithful).
    use_numba: None (auto), True or False (pure numpy).

  Returns:
    uint8 `[N, H, W, C]`.
  """
  sigma, d, iterations = tables.params(table, "glass_blur", severity)
  x = (corruption_kit.gaussian(corruption_kit.to_float(images), sigma) * 255).astype(np.uint8)
  deltas = glass_kernel.draw_deltas(seeds, images.shape[1:3], d, iterations)
  x = np.ascontiguousarray(x)
  glass_kernel.shuffle(x, deltas, d, iterations, swap=swap, use_numba=use_numba)
  out = corruption_kit.gaussian(x / 255.0, sigma)
  return corruption_kit.to_uint8(np.clip(out, 0, 1) * 255)


def disk(radius, alias_blur):
  """The anti-aliased disk kernel of the scripts (float32, 17x17 for radius <= 8)."""
  if radius <= 8:
    grid = np.arange(-8, 8 + 1)
    ksize = (3, 3)
  else:
    grid = np.arange(-radius, radius + 1)
    ksize = (5, 5)
  xx, yy = np.meshgrid(grid, grid)
  aliased = np.array((xx**2 + yy**2) <= radius**2, dtype=np.float32)
  aliased /= np.sum(aliased)
  return cv2.GaussianBlur(aliased, ksize=ksize, sigmaX=alias_blur)


def _clip_kernel(kernel, height, width):
  """Crops a centred kernel to at most (2H - 1) x (2W - 1), renormalising lost weight."""
  half_h, half_w = kernel.shape[0] // 2, kernel.shape[1] // 2
  keep_h, keep_w = min(half_h, height - 1), min(half_w, width - 1)
  if keep_h == half_h and keep_w == half_w:
    return kernel
  cropped = kernel[half_h - keep_h : half_h + keep_h + 1, half_w - keep_w : half_w + keep_w + 1]
  lost = float(np.sum(kernel)) - float(np.sum(cropped))
  return cropped / np.sum(cropped) if lost > 0 else np.ascontiguousarray(cropped)


def defocus_blur(images, severity, seeds, table):
  """Convolution with an anti-aliased disk (cv2.filter2D, border reflect-101, per channel)."""
  del seeds  # deterministic
  radius, alias = tables.params(table, "defocus_blur", severity)
  kernel = _clip_kernel(disk(radius, alias), *images.shape[1:3])
  x = corruption_kit.to_float(images)
  out = np.empty_like(x)
  for n in range(x.shape[0]):
    for d in range(x.shape[3]):
      out[n, :, :, d] = cv2.filter2D(np.ascontiguousarray(x[n, :, :, d]), -1, kernel)
  return corruption_kit.to_uint8(np.clip(out, 0, 1) * 255)


def motion_blur(images, severity, seeds, table, renormalize=True):
  """Shift-and-add motion blur at a random angle in [-45, 45) degrees (no ImageMagick).

  Args:
    images: uint8 `[N, H, W, C]`.
    severity: 1..5.
    seeds: `[N]` per-image seeds (one `uniform(-45, 45)` draw each).
    table: severity table name; entries are (radius, sigma).
    renormalize: see `corruption_kit.motion_blur_image`.

  Returns:
    uint8 `[N, H, W, C]`.
  """
  radius, sigma = tables.params(table, "motion_blur", severity)
  out = np.empty(images.shape, dtype=np.uint8)
  for n, s in enumerate(seeds):
    angle = corruption_kit.rng(s).uniform(-45, 45)
    blurred = corruption_kit.motion_blur_image(images[n], radius, sigma, angle, renormalize)
    out[n] = corruption_kit.to_uint8(blurred)
  return out


def zoom_blur(images, severity, seeds, table, exact=False, use_numba=None):
  """Mean of the image and its centre zooms by each factor of the table (float32 as the scripts).

  Args:
    images: uint8 `[N, H, W, C]`.
    severity: 1..5.
    seeds: unused (deterministic).
    table: severity table name.
    exact: bit-identical scipy zooms (True) or the faster separable form (default; within
      one grey level of the reference, see `corruption_kit.clipped_zoom`).
    use_numba: run the separable form as the `zoom_kernel` numba kernel (default: if numba is
      installed) or in numpy (False).

  Returns:
    uint8 `[N, H, W, C]`.
  """
  del seeds  # deterministic
  if use_numba is None:
    use_numba = glass_kernel.HAVE_NUMBA
  factors = tables.zoom_factors(table, severity)
  trim = tables.variant(table, "zoom_trim")
  x = (images / 255.0).astype(np.float32)
  h, w = x.shape[1:3]
  out = np.zeros_like(x)
  for z in factors:
    if not exact and use_numba:
      zoom_kernel.accumulate(x, out, corruption_kit.zoom_taps(h, w, z, trim))
    else:
      out += corruption_kit.clipped_zoom(x, z, trim, exact)[:, :h, :w]
  x = (x + out) / (len(factors) + 1)
  return corruption_kit.to_uint8(np.clip(x, 0, 1) * 255)
