"""Severity constants of the corruption suite, one table per resolution family.

Hendrycks & Dietterich (ICLR 2019, cited by 000 §4 and 003 §5, docs/papers.md) generated
CIFAR-10-C, ImageNet-64x64-C and ImageNet-C with three scripts that share the corruption code
but hard-code different constants and image sizes:

  * `"32"`  — `ImageNet-C/create_c/make_cifar_c.py` (32 px, CIFAR-10-C);
  * `"64"`  — `ImageNet-C/create_c/make_imagenet_64_c.py` (64 px);
  * `"224"` — `ImageNet-C/create_c/make_imagenet_c.py` (224 px, ImageNet-C);
  * `"imagecorruptions"` — `imagecorruptions` 1.1.2 (Michaelis et al. 2019), the size-generic
    rewrite of the 224 px script that 003 appendix D calls VOC-C: ImageNet constants at every
    size, a different elastic transform, NEAREST upsampling in pixelate, top-left trimming in
    zoom, and frost textures rescaled to fit the image. The validation tests compare against it.

Each table maps a corruption name to five parameter entries (severities 1..5), copied from the
script named above (numbers re-typed, not code). `VARIANTS` records the algorithmic choices that
differ between the scripts. `family_for_shape` picks the family from the image size (the largest
side: < 45 -> "32", < 120 -> "64", else "224"; the thresholds are the geometric midpoints), and the
suite records the family it used (docs/spec.md §1.1 names the split `<corruption>@<severity>`).
"""

import math

import numpy as np

from tf_forget.artifacts import errors


class CorruptionError(errors.Error):
  """An unknown corruption, severity, table or a malformed image batch."""


FAMILIES = ("32", "64", "224", "imagecorruptions")

# The image side each script hard-codes; elastic (affine) and frost scale with side / native.
NATIVE_SIZE = {"32": 32, "64": 64, "224": 224, "imagecorruptions": 224}


def _arange(start, stop, step):
  """The zoom factors of zoom_blur, as the scripts build them with `np.arange`."""
  return (start, stop, step)


_CIFAR = {
  "gaussian_noise": (0.04, 0.06, 0.08, 0.09, 0.10),
  "shot_noise": (500, 250, 100, 75, 50),
  "impulse_noise": (0.01, 0.02, 0.03, 0.05, 0.07),
  "speckle_noise": (0.06, 0.1, 0.12, 0.16, 0.2),
  "gaussian_blur": (0.4, 0.6, 0.7, 0.8, 1),
  # (sigma, max_delta, iterations)
  "glass_blur": ((0.05, 1, 1), (0.25, 1, 1), (0.4, 1, 1), (0.25, 1, 2), (0.4, 1, 2)),
  # (radius, alias_blur)
  "defocus_blur": ((0.3, 0.4), (0.4, 0.5), (0.5, 0.6), (1, 0.2), (1.5, 0.1)),
  # (radius, sigma) of the motion kernel
  "motion_blur": ((6, 1), (6, 1.5), (6, 2), (8, 2), (9, 2.5)),
  "zoom_blur": (
    _arange(1, 1.06, 0.01),
    _arange(1, 1.11, 0.01),
    _arange(1, 1.16, 0.01),
    _arange(1, 1.21, 0.01),
    _arange(1, 1.26, 0.01),
  ),
  # (loc, scale, zoom, threshold, blur radius, blur sigma, image weight)
  "snow": (
    (0.1, 0.2, 1, 0.6, 8, 3, 0.95),
    (0.1, 0.2, 1, 0.5, 10, 4, 0.9),
    (0.15, 0.3, 1.75, 0.55, 10, 4, 0.9),
    (0.25, 0.3, 2.25, 0.6, 12, 6, 0.85),
    (0.3, 0.3, 1.25, 0.65, 14, 12, 0.8),
  ),
  # (image weight, frost weight)
  "frost": ((1, 0.2), (1, 0.3), (0.9, 0.4), (0.85, 0.4), (0.75, 0.45)),
  # (strength, wibble decay)
  "fog": ((0.2, 3), (0.5, 3), (0.75, 2.5), (1, 2), (1.5, 1.75)),
  "brightness": (0.05, 0.1, 0.15, 0.2, 0.3),
  "contrast": (0.75, 0.5, 0.4, 0.3, 0.15),
  # (alpha, sigma, affine) at the native size (IMSIZE * fraction in the script)
  "elastic_transform": (
    (32 * 0, 32 * 0, 32 * 0.08),
    (32 * 0.05, 32 * 0.2, 32 * 0.07),
    (32 * 0.08, 32 * 0.06, 32 * 0.06),
    (32 * 0.1, 32 * 0.04, 32 * 0.05),
    (32 * 0.1, 32 * 0.03, 32 * 0.03),
  ),
  "pixelate": (0.95, 0.9, 0.85, 0.75, 0.65),
  "jpeg_compression": (80, 65, 58, 50, 40),
  # (loc, scale, sigma, threshold, intensity, mud?)
  "spatter": (
    (0.62, 0.1, 0.7, 0.7, 0.5, 0),
    (0.65, 0.1, 0.8, 0.7, 0.5, 0),
    (0.65, 0.3, 1, 0.69, 0.5, 0),
    (0.65, 0.1, 0.7, 0.69, 0.6, 1),
    (0.65, 0.1, 0.5, 0.68, 0.6, 1),
  ),
  # (saturation factor, offset)
  "saturate": ((0.3, 0), (0.1, 0), (1.5, 0), (2, 0.1), (2.5, 0.2)),
}

_IMAGENET64 = {
  "gaussian_noise": (0.04, 0.08, 0.12, 0.15, 0.18),
  "shot_noise": (250, 100, 50, 30, 15),
  "impulse_noise": (0.01, 0.02, 0.05, 0.08, 0.14),
  "speckle_noise": (0.15, 0.2, 0.25, 0.3, 0.35),
  "gaussian_blur": (0.5, 0.75, 1, 1.25, 1.5),
  "glass_blur": ((0.1, 1, 1), (0.5, 1, 1), (0.6, 1, 2), (0.7, 2, 1), (0.9, 2, 2)),
  "defocus_blur": ((0.5, 0.6), (1, 0.1), (1.5, 0.1), (2.5, 0.01), (3, 0.1)),
  "motion_blur": ((10, 1), (10, 1.5), (10, 2), (10, 2.5), (12, 3)),
  "zoom_blur": _CIFAR["zoom_blur"],
  "snow": (
    (0.1, 0.2, 1, 0.6, 8, 3, 0.8),
    (0.1, 0.2, 1, 0.5, 10, 4, 0.8),
    (0.15, 0.3, 1.75, 0.55, 10, 4, 0.7),
    (0.25, 0.3, 2.25, 0.6, 12, 6, 0.65),
    (0.3, 0.3, 1.25, 0.65, 14, 12, 0.6),
  ),
  "frost": ((1, 0.3), (0.9, 0.4), (0.8, 0.45), (0.75, 0.5), (0.7, 0.55)),
  "fog": ((0.4, 3), (0.7, 3), (1, 2.5), (1.5, 2), (2, 1.75)),
  "brightness": (0.1, 0.2, 0.3, 0.4, 0.5),
  "contrast": (0.4, 0.3, 0.2, 0.1, 0.05),
  "elastic_transform": (
    (64 * 0, 64 * 0, 64 * 0.08),
    (64 * 0.05, 64 * 0.3, 64 * 0.06),
    (64 * 0.1, 64 * 0.08, 64 * 0.06),
    (64 * 0.1, 64 * 0.03, 64 * 0.03),
    (64 * 0.16, 64 * 0.03, 64 * 0.02),
  ),
  "pixelate": (0.9, 0.8, 0.7, 0.6, 0.5),
  "jpeg_compression": (65, 58, 50, 40, 25),
  "spatter": (
    (0.62, 0.1, 0.7, 0.7, 0.6, 0),
    (0.65, 0.1, 0.8, 0.7, 0.6, 0),
    (0.65, 0.3, 1, 0.69, 0.6, 0),
    (0.65, 0.1, 0.7, 0.68, 0.6, 1),
    (0.65, 0.1, 0.5, 0.67, 0.6, 1),
  ),
  "saturate": ((0.3, 0), (0.1, 0), (2, 0), (5, 0.1), (30, 0.2)),
}

_IMAGENET = {
  "gaussian_noise": (0.08, 0.12, 0.18, 0.26, 0.38),
  "shot_noise": (60, 25, 12, 5, 3),
  "impulse_noise": (0.03, 0.06, 0.09, 0.17, 0.27),
  "speckle_noise": (0.15, 0.2, 0.35, 0.45, 0.6),
  "gaussian_blur": (1, 2, 3, 4, 6),
  "glass_blur": ((0.7, 1, 2), (0.9, 2, 1), (1, 2, 3), (1.1, 3, 2), (1.5, 4, 2)),
  "defocus_blur": ((3, 0.1), (4, 0.5), (6, 0.5), (8, 0.5), (10, 0.5)),
  "motion_blur": ((10, 3), (15, 5), (15, 8), (15, 12), (20, 15)),
  "zoom_blur": (
    _arange(1, 1.11, 0.01),
    _arange(1, 1.16, 0.01),
    _arange(1, 1.21, 0.02),
    _arange(1, 1.26, 0.02),
    _arange(1, 1.31, 0.03),
  ),
  "snow": (
    (0.1, 0.3, 3, 0.5, 10, 4, 0.8),
    (0.2, 0.3, 2, 0.5, 12, 4, 0.7),
    (0.55, 0.3, 4, 0.9, 12, 8, 0.7),
    (0.55, 0.3, 4.5, 0.85, 12, 8, 0.65),
    (0.55, 0.3, 2.5, 0.85, 12, 12, 0.55),
  ),
  "frost": ((1, 0.4), (0.8, 0.6), (0.7, 0.7), (0.65, 0.7), (0.6, 0.75)),
  "fog": ((1.5, 2), (2, 2), (2.5, 1.7), (2.5, 1.5), (3, 1.4)),
  "brightness": (0.1, 0.2, 0.3, 0.4, 0.5),
  "contrast": (0.4, 0.3, 0.2, 0.1, 0.05),
  # The script multiplies by 244 ("should have been 224"); kept as printed.
  "elastic_transform": (
    (244 * 2, 244 * 0.7, 244 * 0.1),
    (244 * 2, 244 * 0.08, 244 * 0.2),
    (244 * 0.05, 244 * 0.01, 244 * 0.02),
    (244 * 0.07, 244 * 0.01, 244 * 0.02),
    (244 * 0.12, 244 * 0.01, 244 * 0.02),
  ),
  "pixelate": (0.6, 0.5, 0.4, 0.3, 0.25),
  "jpeg_compression": (25, 18, 15, 10, 7),
  "spatter": (
    (0.65, 0.3, 4, 0.69, 0.6, 0),
    (0.65, 0.3, 3, 0.68, 0.6, 0),
    (0.65, 0.3, 2, 0.68, 0.5, 0),
    (0.65, 0.3, 1, 0.65, 1.5, 1),
    (0.67, 0.4, 1, 0.65, 1.5, 1),
  ),
  "saturate": ((0.3, 0), (0.1, 0), (2, 0), (5, 0.1), (20, 0.2)),
}

_IMAGECORRUPTIONS = dict(
  _IMAGENET,
  # imagecorruptions' size-generic elastic: (alpha,) with sigma = 0.01 * side and a uniform
  # field in +-0.005 * height, no affine step.
  elastic_transform=(250 * 0.05, 250 * 0.065, 250 * 0.085, 250 * 0.1, 250 * 0.12),
)

TABLES = {
  "32": _CIFAR,
  "64": _IMAGENET64,
  "224": _IMAGENET,
  "imagecorruptions": _IMAGECORRUPTIONS,
}

# Algorithmic differences between the scripts (see the module docstring).
#   elastic: "affine" (Hendrycks: random affine + smoothed field) or "generic" (imagecorruptions);
#   pixelate_up: PIL filter of the upsampling step;
#   zoom_trim: "center" (Hendrycks' clipped_zoom) or "topleft" (imagecorruptions);
#   frost_scale: resize factor of the frost texture at the native size, or "fit"
#     (imagecorruptions: scale the texture to cover 1.1x the image, bicubic).
VARIANTS = {
  "32": dict(elastic="affine", pixelate_up="box", zoom_trim="center", frost_scale=0.2),
  "64": dict(elastic="affine", pixelate_up="box", zoom_trim="center", frost_scale=0.3),
  "224": dict(elastic="affine", pixelate_up="box", zoom_trim="center", frost_scale=1.0),
  "imagecorruptions": dict(
    elastic="generic", pixelate_up="nearest", zoom_trim="topleft", frost_scale="fit"
  ),
}

COMMON = (
  "gaussian_noise",
  "shot_noise",
  "impulse_noise",
  "defocus_blur",
  "glass_blur",
  "motion_blur",
  "zoom_blur",
  "snow",
  "frost",
  "fog",
  "brightness",
  "contrast",
  "elastic_transform",
  "pixelate",
  "jpeg_compression",
)
EXTRA = ("speckle_noise", "gaussian_blur", "spatter", "saturate")
ALL = COMMON + EXTRA
SEVERITIES = (1, 2, 3, 4, 5)


def family_for_shape(height, width):
  """The resolution family for an image of `height` x `width` (largest side decides)."""
  side = max(int(height), int(width))
  if side < math.sqrt(32 * 64):
    return "32"
  if side < math.sqrt(64 * 224):
    return "64"
  return "224"


def check_table(table):
  """Returns `table` if it is a known family name, else raises `CorruptionError`."""
  if table not in TABLES:
    raise CorruptionError(f"unknown severity table {table!r} (tables: {', '.join(FAMILIES)})")
  return table


def params(table, corruption, severity):
  """The parameter entry of `corruption` at `severity` (1..5) in `table`."""
  check_table(table)
  if corruption not in TABLES[table]:
    raise CorruptionError(f"unknown corruption {corruption!r} (known: {', '.join(ALL)})")
  if severity not in SEVERITIES:
    raise CorruptionError(f"severity must be an integer in 1..5, got {severity!r}")
  return TABLES[table][corruption][severity - 1]


def variant(table, key):
  """The algorithmic variant `key` of `table` (see `VARIANTS`)."""
  return VARIANTS[check_table(table)][key]


def zoom_factors(table, severity):
  """The zoom factors of zoom_blur, built with `np.arange` exactly as the scripts do."""
  start, stop, step = params(table, "zoom_blur", severity)
  return np.arange(start, stop, step)
