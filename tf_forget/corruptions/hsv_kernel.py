"""brightness / saturate per pixel as one numba kernel (uint8 RGB in, uint8 RGB out).

The numpy form (`digital.rgb2hsv` / `digital.hsv2rgb`, skimage's formulas) makes a dozen
float64 temporaries per image; this kernel applies the same float64 operations per pixel —
x / 255., skimage's hue precedence (blue, then green, then red is max), the value or
saturation change with clipping, skimage's hsv2rgb sextants, clip(0, 1) * 255 and truncation
— without temporaries. Used when numba is installed; tests check it against the numpy form.
"""

import math

import numpy as np

from tf_forget.corruptions import glass_kernel

BRIGHTNESS = 0
SATURATE = 1
_KERNEL = None


def _make_kernel():
  numba = glass_kernel.numba_module()

  @numba.njit(cache=False, nogil=True)
  def clip01(v):
    return min(max(v, 0.0), 1.0)

  @numba.njit(cache=False, nogil=True)
  def kernel(x, out, mode, a, b):
    n_img, height, width, _ = x.shape
    for n in range(n_img):
      for i in range(height):
        for j in range(width):
          r = x[n, i, j, 0] / 255.0
          g = x[n, i, j, 1] / 255.0
          bl = x[n, i, j, 2] / 255.0
          v = max(r, g, bl)
          delta = v - min(r, g, bl)
          if delta == 0.0:
            s = 0.0
            h = 0.0
          else:
            s = delta / v
            if bl == v:
              h = 4.0 + (r - g) / delta
            elif g == v:
              h = 2.0 + (bl - r) / delta
            else:
              h = (g - bl) / delta
            h = (h / 6.0) % 1.0
          if mode == 0:
            v = clip01(v + a)
          else:
            s = clip01(s * a + b)
          hi = math.floor(h * 6)
          f = h * 6 - hi
          p = v * (1 - s)
          q = v * (1 - f * s)
          t = v * (1 - (1 - f) * s)
          k = int(hi) % 6
          if k == 0:
            rgb = (v, t, p)
          elif k == 1:
            rgb = (q, v, p)
          elif k == 2:
            rgb = (p, v, t)
          elif k == 3:
            rgb = (p, q, v)
          elif k == 4:
            rgb = (t, p, v)
          else:
            rgb = (v, p, q)
          for c in range(3):
            out[n, i, j, c] = np.uint8(clip01(rgb[c]) * 255)

  return kernel


def adjust(images, mode, a, b=0.0):
  """HSV adjustment of uint8 RGB `[N, H, W, 3]` -> uint8 `[N, H, W, 3]`.

  Args:
    images: uint8 `[N, H, W, 3]`.
    mode: BRIGHTNESS (v = clip(v + a)) or SATURATE (s = clip(s * a + b)).
    a: brightness offset or saturation factor.
    b: saturation offset.
  """
  global _KERNEL
  if _KERNEL is None:
    _KERNEL = _make_kernel()
  out = np.empty_like(images)
  _KERNEL(np.ascontiguousarray(images), out, int(mode), float(a), float(b))
  return out
