"""Weather corruptions: snow, frost, fog and spatter (Hendrycks & Dietterich 2019).

Re-implementations of the scripts named in `tables.py` (000 §4 Table 3; 003 §5 / Table 11 use
fog and frost in the test distribution, snow in training). Batch in, batch out (uint8
`[N, H, W, C]`); per-image draws in the reference's order from `RandomState(seed)`.

Size handling: the fog fractal is generated at the next power of two of the largest side
(imagecorruptions; equal to the scripts' sizes for 32/64/224); the snow layer is zoomed and
motion-blurred by shift-and-add (no ImageMagick, see `corruption_kit.motion_blur_image`); the frost
texture is resized by the family's factor times side / native side (0.2 for CIFAR at 32 px) or by
imagecorruptions' fit rule, then cropped at random.

Grayscale (C = 1), as imagecorruptions' grayscale branches: snow brightens with x * 1.5 + 0.5
instead of the luma; frost and spatter add the luma (0.2989, 0.5870, 0.1140) of their colour
layer (imagecorruptions applies those weights to the BGR frost crop; we use the RGB crop).
"""

import cv2
import numpy as np

from tf_forget.corruptions import corruption_kit
from tf_forget.corruptions import frost_textures
from tf_forget.corruptions import tables

_GRAY_WEIGHTS = np.array([0.2989, 0.5870, 0.1140])


def plasma_fractal(mapsize, wibbledecay, rs):
  """Diamond-square height map `[mapsize, mapsize]` in [0, 1] (the scripts' plasma_fractal).

  Args:
    mapsize: a power of two.
    wibbledecay: roughness decay per level.
    rs: `RandomState` (draws `uniform(-wibble, wibble)` in the reference's order).

  Returns:
    float64 `[mapsize, mapsize]`.
  """
  maparray = np.empty((mapsize, mapsize), dtype=np.float64)
  maparray[0, 0] = 0
  stepsize = mapsize
  wibble = 100

  def wibbledmean(array):
    return array / 4 + wibble * rs.uniform(-wibble, wibble, array.shape)

  while stepsize >= 2:
    half = stepsize // 2
    corners = maparray[0:mapsize:stepsize, 0:mapsize:stepsize]
    squares = corners + np.roll(corners, shift=-1, axis=0)
    squares += np.roll(squares, shift=-1, axis=1)
    maparray[half:mapsize:stepsize, half:mapsize:stepsize] = wibbledmean(squares)
    drgrid = maparray[half:mapsize:stepsize, half:mapsize:stepsize]
    ulgrid = maparray[0:mapsize:stepsize, 0:mapsize:stepsize]
    ltsum = (drgrid + np.roll(drgrid, 1, axis=0)) + (ulgrid + np.roll(ulgrid, -1, axis=1))
    maparray[0:mapsize:stepsize, half:mapsize:stepsize] = wibbledmean(ltsum)
    ttsum = (drgrid + np.roll(drgrid, 1, axis=1)) + (ulgrid + np.roll(ulgrid, -1, axis=0))
    maparray[half:mapsize:stepsize, 0:mapsize:stepsize] = wibbledmean(ttsum)
    stepsize //= 2
    wibble /= wibbledecay
  maparray -= maparray.min()
  return maparray / maparray.max()


def _next_power_of_2(x):
  return 1 if x == 0 else 2 ** (x - 1).bit_length()


def fog(images, severity, seeds, table):
  """Adds a plasma-fractal haze and rescales by max / (max + c)."""
  strength, decay = tables.params(table, "fog", severity)
  x = corruption_kit.to_float(images)
  h, w = x.shape[1:3]
  mapsize = _next_power_of_2(max(h, w))
  out = np.empty_like(x)
  for n, s in enumerate(seeds):
    xi = x[n]
    max_val = xi.max()
    xi = (
      xi + strength * plasma_fractal(mapsize, decay, corruption_kit.rng(s))[:h, :w][..., np.newaxis]
    )
    out[n] = np.clip(xi * max_val / (max_val + strength), 0, 1) * 255
  return corruption_kit.to_uint8(out)


def frost(images, severity, seeds, table):
  """Blends a random crop of one of the first five frost textures (as the scripts: randint(5))."""
  c_img, c_frost = tables.params(table, "frost", severity)
  scale = tables.variant(table, "frost_scale")
  n_img, h, w, ch = images.shape
  if scale != "fit":
    scale = scale * max(h, w) / tables.NATIVE_SIZE[table]
  out = np.empty(images.shape, dtype=np.uint8)
  for n, s in enumerate(seeds):
    rs = corruption_kit.rng(s)
    idx = rs.randint(5)
    texture = frost_textures.resized(idx, h, w, scale)
    x0, y0 = rs.randint(0, texture.shape[0] - h), rs.randint(0, texture.shape[1] - w)
    crop = texture[x0 : x0 + h, y0 : y0 + w][..., [2, 1, 0]]
    if ch == 1:
      crop = np.dot(crop, _GRAY_WEIGHTS)[..., np.newaxis]
    out[n] = corruption_kit.to_uint8(np.clip(c_img * images[n] + c_frost * crop, 0, 255))
  return out


def snow(images, severity, seeds, table, renormalize=True):
  """Zoomed, thresholded, motion-blurred snow layer over a brightened image.

  Args:
    images: uint8 `[N, H, W, C]`.
    severity: 1..5.
    seeds: `[N]` per-image seeds (draws: normal layer, then the blur angle in [-135, -45)).
    table: severity table name.
    renormalize: see `corruption_kit.motion_blur_image`.

  Returns:
    uint8 `[N, H, W, C]`.
  """
  loc, scale, zoom, thresh, radius, sigma, weight = tables.params(table, "snow", severity)
  trim = tables.variant(table, "zoom_trim")
  x = images.astype(np.float32) / 255.0
  n_img, h, w, ch = x.shape
  layers, angles = [], []
  for s in seeds:
    rs = corruption_kit.rng(s)
    layers.append(rs.normal(size=(h, w), loc=loc, scale=scale))
    angles.append(rs.uniform(-135, -45))
  layers = np.stack(layers)
  layers = corruption_kit.clipped_zoom(layers[..., np.newaxis], zoom, trim)
  layers[layers < thresh] = 0
  layers = np.clip(layers[..., 0], 0, 1)
  out = np.empty(images.shape, dtype=np.uint8)
  for n, angle in enumerate(angles):
    layer = corruption_kit.motion_blur_image(layers[n], radius, sigma, angle, renormalize)
    layer = (np.round(layer * 255).astype(np.uint8) / 255.0)[:h, :w, np.newaxis]
    xi = x[n]
    if ch == 3:
      gray = cv2.cvtColor(xi, cv2.COLOR_RGB2GRAY).reshape(h, w, 1)
    else:
      gray = xi
    xi = weight * xi + (1 - weight) * np.maximum(xi, gray * 1.5 + 0.5)
    out[n] = corruption_kit.to_uint8(np.clip(xi + layer + np.rot90(layer, k=2), 0, 1) * 255)
  return out


_SPATTER_KERNEL = np.array([[-2, -1, 0], [-1, 1, 1], [0, 1, 2]])


def _water_mask(liquid):
  """The 'water' branch's mask `[H, W]` float32 (cv2 edge/distance pipeline of the scripts)."""
  liquid = (liquid * 255).astype(np.uint8)
  dist = 255 - cv2.Canny(liquid, 50, 150)
  dist = cv2.distanceTransform(dist, cv2.DIST_L2, 5)
  _, dist = cv2.threshold(dist, 20, 20, cv2.THRESH_TRUNC)
  dist = cv2.blur(dist, (3, 3)).astype(np.uint8)
  dist = cv2.equalizeHist(dist)
  dist = cv2.filter2D(dist, cv2.CV_8U, _SPATTER_KERNEL)
  dist = cv2.blur(dist, (3, 3)).astype(np.float32)
  m = liquid * dist
  peak = np.max(m)
  return m / peak if peak > 0 else m  # the reference divides by 0 (NaN) on an empty mask


def spatter(images, severity, seeds, table):
  """Water (severities 1-3) or mud (4-5) splashes from a thresholded smoothed noise layer."""
  loc, scale, sigma, thresh, intensity, mud = tables.params(table, "spatter", severity)
  x = images.astype(np.float32) / 255.0
  n_img, h, w, ch = x.shape
  liquid = np.stack(
    [corruption_kit.rng(s).normal(size=(h, w), loc=loc, scale=scale) for s in seeds]
  )
  liquid = corruption_kit.gaussian(liquid, sigma)
  liquid[liquid < thresh] = 0
  out = np.empty(images.shape, dtype=np.uint8)
  if mud == 0:
    color = np.array([175 / 255.0, 238 / 255.0, 238 / 255.0], dtype=np.float32)
    for n in range(n_img):
      m = _water_mask(liquid[n])
      m *= intensity
      layer = m[..., np.newaxis] * color
      if ch == 3:
        out[n] = corruption_kit.to_uint8(np.clip(x[n] + layer, 0, 1) * 255)
      else:
        gray = np.dot(np.clip(layer, 0, 1), _GRAY_WEIGHTS)[..., np.newaxis]
        out[n] = corruption_kit.to_uint8(np.clip(x[n] + gray, 0, 1) * 255)
    return out
  color = np.array([63 / 255.0, 42 / 255.0, 20 / 255.0])
  m = corruption_kit.gaussian(np.where(liquid > thresh, 1, 0).astype(np.float32), intensity)
  m[m < 0.8] = 0
  for n in range(n_img):
    layer = color * m[n][..., np.newaxis]
    xi = x[n] * (1 - m[n][..., np.newaxis])
    if ch == 1:
      layer = np.dot(layer, _GRAY_WEIGHTS)[..., np.newaxis]
    out[n] = corruption_kit.to_uint8(np.clip(xi + layer, 0, 1) * 255)
  return out
