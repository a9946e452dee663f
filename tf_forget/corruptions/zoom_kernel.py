"""zoom_blur's inner loop as a numba kernel: blend, cast to float32 and accumulate in one pass.

`blur.zoom_blur` sums the image's centre zooms (`corruption_kit.clipped_zoom`). The numpy form
builds two float64 temporaries per zoom factor; this kernel computes each output value with the same
float64 operations in the same order — rows first: a * (1 - fy) + c * fy, then columns: r_lo * (1 -
fx) + r_hi * fx — casts it to float32 and adds it to the float32 sum, as the numpy form does,
without temporaries. Used when numba is installed (see `glass_kernel.HAVE_NUMBA`); tests check it
against the numpy form.
"""

import numpy as np

from tf_forget.corruptions import glass_kernel

_KERNEL = None


def _make_kernel():
  numba = glass_kernel.numba_module()

  @numba.njit(cache=False, nogil=True)
  def kernel(x, out, lo_h, hi_h, fy, lo_w, hi_w, fx):
    n_img, _, _, n_ch = x.shape
    for n in range(n_img):
      for i in range(lo_h.shape[0]):
        wy1 = fy[i]
        wy0 = 1.0 - wy1
        for j in range(lo_w.shape[0]):
          wx1 = fx[j]
          wx0 = 1.0 - wx1
          for c in range(n_ch):
            r_lo = (
              np.float64(x[n, lo_h[i], lo_w[j], c]) * wy0
              + np.float64(x[n, hi_h[i], lo_w[j], c]) * wy1
            )
            r_hi = (
              np.float64(x[n, lo_h[i], hi_w[j], c]) * wy0
              + np.float64(x[n, hi_h[i], hi_w[j], c]) * wy1
            )
            out[n, i, j, c] += np.float32(r_lo * wx0 + r_hi * wx1)

  return kernel


def accumulate(x, out, taps):
  """out[:, :len(rows), :len(cols)] += zoom layer (float32), in place.

  Args:
    x: float32 `[N, H, W, C]` image batch.
    out: float32 `[N, H, W, C]` running sum.
    taps: `corruption_kit.zoom_taps(...)`.
  """
  global _KERNEL
  if _KERNEL is None:
    _KERNEL = _make_kernel()
  (lo_h, hi_h, fy), (lo_w, hi_w, fx) = taps
  _KERNEL(
    x,
    out,
    lo_h.astype(np.int64),
    hi_h.astype(np.int64),
    fy.astype(np.float64),
    lo_w.astype(np.int64),
    hi_w.astype(np.int64),
    fx.astype(np.float64),
  )
