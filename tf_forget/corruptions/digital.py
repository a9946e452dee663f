"""Digital corruptions: brightness, contrast, saturate, elastic, pixelate, JPEG (Hendrycks 2019).

Re-implementations of the scripts named in `tables.py` (000 §4 Table 3; 003 §5 / Table 11).
Batch in, batch out (uint8 `[N, H, W, C]`). The HSV conversions are numpy re-implementations of
skimage's `rgb2hsv` / `hsv2rgb` (same formulas, so outputs agree within one grey level; with
numba installed brightness / saturate run as the per-pixel `hsv_kernel`, equal to the numpy form);
pixelate and JPEG use Pillow as the scripts do (JPEG bytes depend on Pillow's libjpeg).

Grayscale (C = 1): brightness adds c to the value (imagecorruptions' grayscale branch);
saturate leaves gray images unchanged (the reference's grayscale branch returns the red channel
of hsv2rgb(h=0, s, v), which is v); contrast, elastic and pixelate are channel-wise; JPEG
encodes a grayscale JPEG (imagecorruptions encodes an RGB copy and converts back to 'L').
Elastic: "affine" = the scripts' random affine + smoothed displacement field, with constants
scaled by (largest side / native side); "generic" = imagecorruptions' size-generic field.
"""

import io

import cv2
import numpy as np
from PIL import Image
from scipy import ndimage

from tf_forget.corruptions import corruption_kit
from tf_forget.corruptions import glass_kernel
from tf_forget.corruptions import hsv_kernel
from tf_forget.corruptions import tables


def rgb2hsv(rgb):
  """RGB float `[..., 3]` in [0, 1] -> HSV `[..., 3]` (skimage.color.rgb2hsv's formulas).

  skimage assigns the hue for "red is max", then overwrites where green, then blue is max;
  the nested `np.where` keeps that precedence without boolean fancy indexing.
  """
  r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
  v = rgb.max(-1)
  delta = v - rgb.min(-1)
  flat = delta == 0.0
  with np.errstate(invalid="ignore", divide="ignore"):
    s = np.where(flat, 0.0, delta / v)
    h = np.where(
      b == v, 4.0 + (r - g) / delta, np.where(g == v, 2.0 + (b - r) / delta, (g - b) / delta)
    )
    h = np.where(flat, 0.0, (h / 6.0) % 1.0)
  return np.stack([h, s, v], axis=-1)


def hsv2rgb(hsv):
  """HSV float `[..., 3]` -> RGB `[..., 3]` (skimage.color.hsv2rgb's formulas)."""
  h, s, v = hsv[..., 0], hsv[..., 1], hsv[..., 2]
  hi = np.floor(h * 6)
  f = h * 6 - hi
  p = v * (1 - s)
  q = v * (1 - f * s)
  t = v * (1 - (1 - f) * s)
  hi = hi.astype(np.uint8) % 6
  choices = [(v, t, p), (q, v, p), (p, v, t), (p, q, v), (t, p, v), (v, p, q)]
  out = np.empty_like(hsv)
  for k in range(3):
    out[..., k] = np.choose(hi, [c[k] for c in choices])
  return out


def _numba(use_numba):
  return glass_kernel.HAVE_NUMBA if use_numba is None else use_numba


def brightness(images, severity, seeds, table, use_numba=None):
  """Adds c to the HSV value (to the gray value for C = 1); numba kernel if installed."""
  del seeds  # deterministic
  c = tables.params(table, "brightness", severity)
  if images.shape[-1] == 3 and _numba(use_numba):
    return hsv_kernel.adjust(images, hsv_kernel.BRIGHTNESS, c)
  x = corruption_kit.to_float(images)
  if x.shape[-1] == 1:
    x = np.clip(x + c, 0, 1)
  else:
    x = rgb2hsv(x)
    x[..., 2] = np.clip(x[..., 2] + c, 0, 1)
    x = hsv2rgb(x)
  return corruption_kit.to_uint8(np.clip(x, 0, 1) * 255)


def saturate(images, severity, seeds, table, use_numba=None):
  """Scales the HSV saturation by c0 and adds c1 (gray images: unchanged, see module doc)."""
  del seeds  # deterministic
  factor, offset = tables.params(table, "saturate", severity)
  if images.shape[-1] == 3 and _numba(use_numba):
    return hsv_kernel.adjust(images, hsv_kernel.SATURATE, factor, offset)
  x = corruption_kit.to_float(images)
  if x.shape[-1] == 3:
    x = rgb2hsv(x)
    x[..., 1] = np.clip(x[..., 1] * factor + offset, 0, 1)
    x = hsv2rgb(x)
  return corruption_kit.to_uint8(np.clip(x, 0, 1) * 255)


def contrast(images, severity, seeds, table):
  """Shrinks every image towards its per-channel mean by the factor c."""
  del seeds  # deterministic
  c = tables.params(table, "contrast", severity)
  x = corruption_kit.to_float(images)
  means = np.stack([xi.mean(axis=(0, 1), keepdims=True) for xi in x])
  return corruption_kit.to_uint8(np.clip((x - means) * c + means, 0, 1) * 255)


def _remap(image, dx, dy):
  """Bilinear resampling of `image` `[H, W, C]` at (y + dy, x + dx), mode 'reflect'.

  The reference resamples the 3-D array at integer channel coordinates; resampling each
  channel in 2-D drops only terms of weight exactly 0 (same values, half the work).
  """
  h, w = image.shape[:2]
  xx, yy = np.meshgrid(np.arange(w), np.arange(h))
  coords = np.stack([yy + dy, xx + dx])
  out = np.empty_like(image)
  for c in range(image.shape[2]):
    out[..., c] = ndimage.map_coordinates(image[..., c], coords, order=1, mode="reflect")
  return out


def _elastic_generic(image, alpha, rs):
  """imagecorruptions' elastic_transform on one float32 image `[H, W, C]`."""
  h, w = image.shape[:2]
  sigma = np.array((h, w)) * 0.01
  max_d = h * 0.005
  fields = []
  for _ in range(2):
    noise = rs.uniform(-max_d, max_d, size=(h, w))
    smooth = ndimage.gaussian_filter(noise, sigma, mode="reflect", truncate=3)
    fields.append((smooth * alpha).astype(np.float32))
  return _remap(image, fields[0], fields[1])


def _elastic_affine(image, params, scale, rs):
  """The scripts' elastic_transform (random affine, then a smoothed field) on one image."""
  alpha, sigma, affine = (p * scale for p in params)
  h, w, ch = image.shape
  center = np.float32((h, w)) // 2
  size = min(h, w) // 3
  pts1 = np.float32([center + size, [center[0] + size, center[1] - size], center - size])
  pts2 = pts1 + rs.uniform(-affine, affine, size=pts1.shape).astype(np.float32)
  matrix = cv2.getAffineTransform(pts1, pts2)
  image = cv2.warpAffine(image, matrix, (w, h), borderMode=cv2.BORDER_REFLECT_101)
  image = image.reshape(h, w, ch)
  fields = []
  for _ in range(2):
    noise = rs.uniform(-1, 1, size=(h, w))
    smooth = ndimage.gaussian_filter(noise, sigma, mode="reflect", truncate=3)
    fields.append((smooth * alpha).astype(np.float32))
  return _remap(image, fields[0], fields[1])


def elastic_transform(images, severity, seeds, table):
  """Elastic deformation (see module docstring for the two variants)."""
  params = tables.params(table, "elastic_transform", severity)
  kind = tables.variant(table, "elastic")
  x = images.astype(np.float32) / 255.0
  scale = max(x.shape[1:3]) / tables.NATIVE_SIZE[table]
  out = np.empty(images.shape, dtype=np.uint8)
  for n, s in enumerate(seeds):
    rs = corruption_kit.rng(s)
    if kind == "generic":
      warped = _elastic_generic(x[n], params, rs)
    else:
      warped = _elastic_affine(x[n], params, scale, rs)
    out[n] = corruption_kit.to_uint8(np.clip(warped, 0, 1) * 255)
  return out


def _pil(image):
  return Image.fromarray(image[..., 0] if image.shape[-1] == 1 else image)


def _from_pil(pil, channels):
  arr = np.asarray(pil, dtype=np.uint8)
  return arr[..., np.newaxis] if channels == 1 else arr


def pixelate(images, severity, seeds, table):
  """BOX-downsamples by c and upsamples back (BOX in the scripts, NEAREST in imagecorruptions)."""
  del seeds  # deterministic
  c = tables.params(table, "pixelate", severity)
  up = Image.NEAREST if tables.variant(table, "pixelate_up") == "nearest" else Image.BOX
  h, w, ch = images.shape[1:]
  small = (max(1, int(w * c)), max(1, int(h * c)))
  out = np.empty_like(images)
  for n in range(images.shape[0]):
    out[n] = _from_pil(_pil(images[n]).resize(small, Image.BOX).resize((w, h), up), ch)
  return out


def jpeg_compression(images, severity, seeds, table):
  """Pillow JPEG round trip at quality c."""
  del seeds  # deterministic
  quality = tables.params(table, "jpeg_compression", severity)
  out = np.empty_like(images)
  for n in range(images.shape[0]):
    buf = io.BytesIO()
    _pil(images[n]).save(buf, "JPEG", quality=quality)
    out[n] = _from_pil(Image.open(io.BytesIO(buf.getvalue())), images.shape[-1])
  return out
