"""The local pixel shuffle of glass_blur: a numba kernel over a batch, with a numpy fallback.

Hendrycks' scripts (and imagecorruptions 1.1.2) visit every pixel (h, w) with
h in range(H - d, d, -1), w in range(W - d, d, -1), draw (dx, dy) = randint(-d, d, size=2) and
"swap" `x[h, w], x[h', w'] = x[h', w'], x[h, w]` with h' = h + dy, w' = w + dx. On an RGB image
`x[h, w]` is a view, so the tuple assignment first copies pixel (h', w') into (h, w) and then
copies (h, w) — already overwritten — back into (h', w'): it copies, it does not swap. The
published CIFAR-10-C / ImageNet-C were made this way; `swap=False` (default) reproduces it, and
`swap=True` does the swap the code intended. The visit order matters (a pixel may be copied
twice along a chain), so the loop is sequential per image; numba compiles it once per process.

Draws: one `RandomState(seed)` per image, `randint(-d, d, size=(iterations * n_h * n_w, 2))`,
which yields the same numbers as the reference's per-pixel `randint(-d, d, size=(2,))` calls.
"""

import importlib.util

import numpy as np

from tf_forget.corruptions import corruption_kit

# numba is optional, and imported (a third of a second) only when a kernel is compiled.
HAVE_NUMBA = importlib.util.find_spec("numba") is not None


def numba_module():
  """The numba module (only called when `HAVE_NUMBA`)."""
  import numba

  return numba


def _make_numba_kernel():
  """Compiles the batch kernel (numba.njit of the reference loop)."""
  numba = numba_module()

  @numba.njit(cache=False, nogil=True)
  def kernel(x, deltas, d, iterations, swap):
    n_img, h_size, w_size, n_ch = x.shape
    for n in range(n_img):
      k = 0
      for _ in range(iterations):
        for h in range(h_size - d, d, -1):
          for w in range(w_size - d, d, -1):
            dx = deltas[n, k, 0]
            dy = deltas[n, k, 1]
            k += 1
            hp = h + dy
            wp = w + dx
            for c in range(n_ch):
              v = x[n, hp, wp, c]
              if swap:
                x[n, hp, wp, c] = x[n, h, w, c]
              x[n, h, w, c] = v

  return kernel


_KERNEL = None


def _numpy_fallback(x, deltas, d, iterations, swap):
  """Pure-numpy fallback: the sequential loop over positions, vectorised over the batch."""
  n_img, h_size, w_size = x.shape[:3]
  rows = np.arange(n_img)
  k = 0
  for _ in range(iterations):
    for h in range(h_size - d, d, -1):
      for w in range(w_size - d, d, -1):
        hp = h + deltas[:, k, 1]
        wp = w + deltas[:, k, 0]
        k += 1
        v = x[rows, hp, wp].copy()
        if swap:
          x[rows, hp, wp] = x[:, h, w]
        x[:, h, w] = v


def draw_deltas(seeds, shape, d, iterations):
  """Per-image shift draws `[N, iterations * n_h * n_w, 2]` (dx, dy), as the reference draws."""
  n_h = len(range(shape[0] - d, d, -1))
  n_w = len(range(shape[1] - d, d, -1))
  count = iterations * n_h * n_w
  return (
    np.stack([corruption_kit.rng(s).randint(-d, d, size=(count, 2)) for s in seeds])
    .astype(np.int64)
    .reshape(len(seeds), count, 2)
  )


def shuffle(x, deltas, d, iterations, swap=False, use_numba=None):
  """Shuffles pixels of a uint8 batch in place.

  Args:
    x: uint8 `[N, H, W, C]`, modified in place.
    deltas: int64 `[N, K, 2]` from `draw_deltas`.
    d: max_delta.
    iterations: number of passes.
    swap: swap pixels instead of the reference's copy (see module docstring).
    use_numba: force (True) or forbid (False) the numba kernel; default: use it if installed.

  Returns:
    `x`.
  """
  global _KERNEL
  if use_numba is None:
    use_numba = HAVE_NUMBA
  if deltas.shape[1] == 0:
    return x
  if use_numba:
    if _KERNEL is None:
      _KERNEL = _make_numba_kernel()
    _KERNEL(x, deltas, int(d), int(iterations), bool(swap))
  else:
    _numpy_fallback(x, deltas, int(d), int(iterations), bool(swap))
  return x
