"""Noise corruptions (Hendrycks & Dietterich 2019; 000 §4 Table 3; 003 §5) and l-inf noise.

Gaussian, shot (Poisson), impulse (salt & pepper) and speckle noise re-implement the scripts
named in `tables.py`; with the same draws they are bit-identical to `imagecorruptions` 1.1.2
(tests/corruptions/reference_test.py). Draws are per image: `RandomState(seed)` for gaussian,
shot and speckle (the reference's global `np.random`), and `np.random.default_rng(seed)` for
impulse noise, because `skimage.util.random_noise` draws from a fresh `Generator` (unseeded in
the reference; the tests hand it the same seeded `Generator`). Grayscale: channel-wise.

The l-inf uniform noise of 003 §4.1 / docs/spec.md §6.7 is added to the *normalized float* model
input and is not cached as uint8: `linf_uniform_noise` works on float arrays of any shape.
`linf_uniform_noise_uint8` is the pixel-space variant (eps in units of the [0, 1] pixel range)
for data sets whose models normalise inside the model.
"""

import numpy as np

from tf_forget.corruptions import corruption_kit
from tf_forget.corruptions import tables


def gaussian_noise(images, severity, seeds, table):
  """Additive N(0, c^2) noise in [0, 1] pixel units; uint8 `[N, H, W, C]` -> same."""
  c = tables.params(table, "gaussian_noise", severity)
  x = corruption_kit.to_float(images)
  noise = np.stack([corruption_kit.rng(s).normal(size=x.shape[1:], scale=c) for s in seeds])
  return corruption_kit.to_uint8(np.clip(x + noise, 0, 1) * 255)


def shot_noise(images, severity, seeds, table):
  """Poisson noise with c photons per unit intensity; uint8 `[N, H, W, C]` -> same."""
  c = tables.params(table, "shot_noise", severity)
  x = corruption_kit.to_float(images)
  counts = np.stack([corruption_kit.rng(s).poisson(xi * c) for s, xi in zip(seeds, x)])
  return corruption_kit.to_uint8(np.clip(counts / float(c), 0, 1) * 255)


def impulse_noise(images, severity, seeds, table):
  """Salt & pepper noise on a fraction c of the values (skimage's 's&p', 50 % salt).

  Args:
    images: uint8 `[N, H, W, C]`.
    severity: 1..5.
    seeds: `[N]` per-image seeds (a `np.random.default_rng(seed)` each).
    table: severity table name.

  Returns:
    uint8 `[N, H, W, C]`.
  """
  c = tables.params(table, "impulse_noise", severity)
  x = corruption_kit.to_float(images)
  out = x.copy()
  for i, s in enumerate(seeds):
    gen = np.random.default_rng(int(s))
    flipped = gen.random(x.shape[1:]) <= c
    salted = gen.random(x.shape[1:]) <= 0.5
    out[i][flipped & salted] = 1
    out[i][flipped & ~salted] = 0
  return corruption_kit.to_uint8(np.clip(out, 0, 1) * 255)


def speckle_noise(images, severity, seeds, table):
  """Multiplicative noise x + x * N(0, c^2); uint8 `[N, H, W, C]` -> same."""
  c = tables.params(table, "speckle_noise", severity)
  x = corruption_kit.to_float(images)
  noise = np.stack([corruption_kit.rng(s).normal(size=x.shape[1:], scale=c) for s in seeds])
  return corruption_kit.to_uint8(np.clip(x + x * noise, 0, 1) * 255)


def linf_uniform_noise(inputs, eps, rng):
  """Adds U(-eps, eps) noise to normalized float inputs (003 §4.1, docs/spec.md §6.7).

  Args:
    inputs: float array of any shape (e.g. `[N, H, W, C]` after the model's normalisation).
    eps: l-inf radius, >= 0 (docs/spec.md §6.7 grid: linspace(0, 0.7, 15)).
    rng: a `np.random.Generator` (one per draw set; docs/spec.md §6.7 uses 100 draws per image).

  Returns:
    float array of the same shape and dtype (no clipping: the input is already normalized).

  Raises:
    tables.CorruptionError: negative eps.
  """
  if eps < 0:
    raise tables.CorruptionError(f"eps must be >= 0, got {eps}")
  inputs = np.asarray(inputs)
  noise = rng.uniform(-eps, eps, size=inputs.shape)
  return (inputs + noise).astype(inputs.dtype, copy=False)


def linf_uniform_noise_uint8(images, eps, seeds):
  """Pixel-space l-inf noise: clip(x / 255 + U(-eps, eps), 0, 1), truncated to uint8.

  Args:
    images: uint8 `[N, H, W, C]`.
    eps: l-inf radius in [0, 1] pixel units.
    seeds: `[N]` per-image seeds (`np.random.default_rng(seed)`).

  Returns:
    uint8 `[N, H, W, C]`.
  """
  corruption_kit.check_batch(images)
  x = corruption_kit.to_float(images)
  out = np.stack(
    [linf_uniform_noise(xi, eps, np.random.default_rng(int(s))) for s, xi in zip(seeds, x)]
  )
  return corruption_kit.to_uint8(np.clip(out, 0, 1) * 255)
