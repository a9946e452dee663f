"""Shared helpers of the corruption families: batch checks, seeds, filters, zoom and motion.

Every corruption takes a batch of uint8 images `[N, H, W, C]` (C in {1, 3}) and returns a uint8
batch of the same shape. Random draws come from one `np.random.RandomState(seed)` per image
(the legacy generator the reference scripts draw from through the global `np.random`), so the
same seed gives the same draws as `np.random.seed(seed)` before a call of the reference; the
computation itself is vectorised over the batch wherever the reference's arithmetic allows it.

Grayscale (C = 1) images are corrupted as grayscale, following the grayscale branches inside
`imagecorruptions` 1.1.2's functions (not its `corrupt()` wrapper, which replicates to RGB and
returns 3 channels): channel-wise corruptions treat the single channel like any other; colour
steps use the luma (ITU-R 601) where the reference converts to gray. See each function.
"""

import math
import threading

import numpy as np
from scipy import ndimage

from tf_forget.corruptions import tables


def check_batch(images):
  """Validates a uint8 batch `[N, H, W, C]` with C in {1, 3}; returns it unchanged.

  Raises:
    tables.CorruptionError: wrong dtype, rank or channel count, or an empty side.
  """
  if not isinstance(images, np.ndarray) or images.dtype != np.uint8:
    raise tables.CorruptionError(
      f"images must be a uint8 numpy array, got {getattr(images, 'dtype', type(images))}"
    )
  if images.ndim != 4 or images.shape[-1] not in (1, 3) or min(images.shape[1:3]) < 1:
    raise tables.CorruptionError(
      f"images must have shape [N, H, W, C] with C in {{1, 3}}, got {images.shape}"
    )
  return images


_LOCAL = threading.local()


def rng(seed):
  """The legacy generator (`RandomState`) seeded with `seed`, as `np.random.seed(seed)`.

  One generator per thread is re-seeded on every call (constructing a `RandomState` costs
  ~0.2 ms, re-seeding ~4 us), so the previous image's generator is invalid after the call:
  draw everything an image needs before seeding the next one.
  """
  state = getattr(_LOCAL, "state", None)
  if state is None:
    state = _LOCAL.state = np.random.RandomState()
  state.seed(int(seed))
  return state


def to_float(images):
  """uint8 `[N, H, W, C]` -> float64 in [0, 1], as `np.array(x) / 255.` in the scripts."""
  return images / 255.0


def to_uint8(values):
  """float `[...]` in [0, 255] -> uint8 by truncation, as `np.uint8(...)` in the reference."""
  return np.clip(values, 0, 255).astype(np.uint8)


def gaussian(batch, sigma, truncate=4.0, mode="nearest"):
  """skimage's `gaussian(x, sigma, channel_axis=-1)` over a batch `[N, H, W, C]` or `[N, H, W]`.

  skimage calls `scipy.ndimage.gaussian_filter` with sigma 0 on the channel axis, mode
  'nearest', truncate 4; the batch axis gets sigma 0 too, so each image is filtered alone and
  the arithmetic is identical to the per-image call.

  Args:
    batch: float `[N, H, W, C]` or `[N, H, W]`.
    sigma: scalar or (sigma_h, sigma_w).
    truncate: kernel half-width in sigmas.
    mode: border mode.

  Returns:
    Filtered array of the same shape and dtype.
  """
  sh, sw = (sigma, sigma) if np.isscalar(sigma) else sigma
  sig = [0, sh, sw] + [0] * (batch.ndim - 3)
  return ndimage.gaussian_filter(batch, sig, mode=mode, truncate=truncate)


def _linear_taps(in_len, out_len):
  """Source indices and weights of `scipy.ndimage.zoom(order=1)` along one axis.

  Returns:
    (low `[out_len]`, high `[out_len]`, frac `[out_len]`): output o = (1 - frac) * in[low] +
    frac * in[high], with scipy's mapping o * (in_len - 1) / (out_len - 1).
  """
  if out_len == 1 or in_len == 1:
    zeros = np.zeros(out_len, dtype=int)
    return zeros, zeros, np.zeros(out_len)
  coord = np.arange(out_len) * ((in_len - 1) / (out_len - 1))
  low = np.minimum(np.floor(coord).astype(int), in_len - 1)
  return low, np.minimum(low + 1, in_len - 1), coord - low


def zoom_taps(height, width, zoom_factor, trim):
  """Source taps of `clipped_zoom` for the output pixels inside the image.

  Args:
    height: image height H.
    width: image width W.
    zoom_factor: z >= 1.
    trim: "center" or "topleft" (see `clipped_zoom`).

  Returns:
    ((lo, hi, frac) for rows, (lo, hi, frac) for columns): output pixel (i, j) of the zoomed
    layer, cut to at most H x W, is the separable linear blend of the image at rows lo/hi and
    columns lo/hi (indices into the full image) with weights 1 - frac and frac.
  """
  taps = []
  for side in (height, width):
    crop = int(np.ceil(side / float(zoom_factor)))
    top = (side - crop) // 2
    out = int(round(crop * zoom_factor))
    first = 0 if trim == "topleft" else (out - side) // 2
    lo, hi, frac = (a[first : first + side] for a in _linear_taps(crop, out))
    taps.append((lo + top, hi + top, frac))
  return tuple(taps)


def clipped_zoom(batch, zoom_factor, trim, exact=True):
  """Zooms into the centre of every image of `batch` and crops back to its size.

  Crops the central ceil(side / z) window and zooms it by z with linear interpolation
  (`scipy.ndimage.zoom`, order 1, as the scripts).

  Args:
    batch: float `[N, H, W, C]`.
    zoom_factor: z >= 1.
    trim: "center" (Hendrycks' clipped_zoom) or "topleft" (imagecorruptions' zoom_blur /
      snow, which slice `[:H, :W]`).
    exact: True: one `scipy.ndimage.zoom` call (bit-identical to the reference); False: the
      same linear weights applied separably (rows, then columns) in float64, only
      for the output pixels kept (faster; equal to the reference up to float rounding, i.e.
      rare one-level differences after truncation to uint8).

  Returns:
    `[N, H, W, C]` (for "center"); for "topleft" the zoomed array, which may exceed H x W and
    is cut by the caller exactly where the reference cuts it.
  """
  h, w = batch.shape[1:3]
  ch0 = int(np.ceil(h / float(zoom_factor)))
  ch1 = int(np.ceil(w / float(zoom_factor)))
  top0, top1 = (h - ch0) // 2, (w - ch1) // 2
  crop = batch[:, top0 : top0 + ch0, top1 : top1 + ch1]
  out_h, out_w = int(round(ch0 * zoom_factor)), int(round(ch1 * zoom_factor))
  if trim == "topleft":
    rows, cols = slice(0, out_h), slice(0, out_w)
  else:
    t0, t1 = (out_h - h) // 2, (out_w - w) // 2
    rows, cols = slice(t0, t0 + h), slice(t1, t1 + w)
  if not exact:
    out = crop.astype(np.float64)
    for axis, (n_in, n_out, keep) in ((1, (ch0, out_h, rows)), (2, (ch1, out_w, cols))):
      lo, hi, f = (a[keep] for a in _linear_taps(n_in, n_out))
      f = f.reshape((-1,) + (1,) * (batch.ndim - axis - 1))
      low = np.take(out, lo, axis=axis)
      low *= 1 - f
      high = np.take(out, hi, axis=axis)
      high *= f
      low += high
      out = low
    return out.astype(batch.dtype)
  # All images and channels in one 3-D call laid out as [H, W, N * C] (as fast as the
  # reference's per-image [H, W, C] call; the factor-1 axis adds only exact zero terms).
  lead = crop.shape[0]
  stacked = np.moveaxis(crop.reshape(crop.shape[:3] + (-1,)), 0, 2).reshape(ch0, ch1, -1)
  out = ndimage.zoom(stacked, (zoom_factor, zoom_factor, 1), order=1)
  out = np.moveaxis(out.reshape(out.shape[:2] + (lead, -1)), 2, 0)
  out = out.reshape((lead,) + out.shape[1:3] + batch.shape[3:])
  return out[:, rows, cols]


def motion_kernel(radius, sigma):
  """The one-sided Gaussian tap weights of the shift-and-add motion blur (width 2r + 1)."""
  width = int(radius) * 2 + 1
  k = np.exp(-(np.arange(width) ** 2) / (2 * (sigma**2))) / (np.sqrt(2 * np.pi) * sigma)
  return k / np.sum(k)


def motion_blur_image(image, radius, sigma, angle, renormalize=True):
  """Shift-and-add motion blur of one image, as `imagecorruptions._motion_blur`.

  ImageMagick's `-motion-blur` (used by Hendrycks' scripts through Wand) is replaced, as in
  imagecorruptions, by summing copies of the image shifted along `angle` with one-sided
  Gaussian weights; shifted-in borders repeat the edge pixel. Differences from ImageMagick:
  the kernel is sampled on integer pixel shifts (no sub-pixel interpolation) and its width is
  2r + 1 taps. When a shift would leave the image (small images), the reference stops and
  drops the remaining weights, darkening the image; with `renormalize` (default) the used taps
  are rescaled to sum to one instead — identical whenever the kernel fits in the image.

  Args:
    image: `[H, W]` or `[H, W, C]` array (uint8 or float).
    radius: kernel radius r (width 2r + 1).
    sigma: Gaussian sigma of the tap weights.
    angle: motion direction in degrees.
    renormalize: rescale the taps kept when the kernel is clipped to the image.

  Returns:
    float64 array of the image's shape.
  """
  kernel = motion_kernel(radius, sigma)
  width = kernel.shape[0]
  point = (width * np.sin(np.deg2rad(angle)), width * np.cos(np.deg2rad(angle)))
  hypot = math.hypot(point[0], point[1])
  h, w = image.shape[:2]
  shifts = []
  for i in range(width):
    dy = -math.ceil(((i * point[0]) / hypot) - 0.5)
    dx = -math.ceil(((i * point[1]) / hypot) - 0.5)
    if abs(dy) >= h or abs(dx) >= w:
      break  # the motion left the image: the kernel is clipped here
    shifts.append((dy, dx))
  pad = max(max(abs(dy), abs(dx)) for dy, dx in shifts)
  widths = ((pad, pad), (pad, pad)) + ((0, 0),) * (image.ndim - 2)
  padded = np.pad(image, widths, mode="edge") if pad else image
  blurred = np.zeros(image.shape, dtype=np.float64)
  for i, (dy, dx) in enumerate(shifts):
    blurred = blurred + kernel[i] * padded[pad - dy : pad - dy + h, pad - dx : pad - dx + w]
  if renormalize and len(shifts) < width:
    blurred = blurred / np.sum(kernel[: len(shifts)])
  return blurred


def luma(batch):
  """ITU-R 601 luma of float RGB `[..., 3]` -> `[..., 1]` (as cv2's RGB2GRAY)."""
  return batch[..., 0:1] * 0.299 + batch[..., 1:2] * 0.587 + batch[..., 2:3] * 0.114
