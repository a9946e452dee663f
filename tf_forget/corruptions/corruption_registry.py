"""The corruption registry: a plain dict of names -> functions, `apply`, seeds and split names.

    out = corruption_registry.apply("glass_blur", images, severity=3, seeds=seeds)

All 15 common + 4 extra corruptions of Hendrycks & Dietterich (2019), as used by 000 §4 (Table 3,
ImageNet-C) and 003 §5 (CIFAR10-C at severity 3; Table 11's train/test split of corruptions).
Corrupted splits are named `<corruption>@<severity>` (docs/spec.md §1.1), e.g. `glass_blur@3`.

Reproducibility: every example gets its own seed, derived from (data set, example id, corruption,
severity, base seed) by SHA-256 (`example_seeds`), so an example's corrupted image does not depend
on the batch it is in, on the order of the split or on which process made it.
"""

import hashlib

import numpy as np

from tf_forget.artifacts import names
from tf_forget.corruptions import blur
from tf_forget.corruptions import corruption_kit
from tf_forget.corruptions import digital
from tf_forget.corruptions import noise_corruptions
from tf_forget.corruptions import tables
from tf_forget.corruptions import weather

CorruptionError = tables.CorruptionError

CORRUPTIONS = {
  "gaussian_noise": noise_corruptions.gaussian_noise,
  "shot_noise": noise_corruptions.shot_noise,
  "impulse_noise": noise_corruptions.impulse_noise,
  "defocus_blur": blur.defocus_blur,
  "glass_blur": blur.glass_blur,
  "motion_blur": blur.motion_blur,
  "zoom_blur": blur.zoom_blur,
  "snow": weather.snow,
  "frost": weather.frost,
  "fog": weather.fog,
  "brightness": digital.brightness,
  "contrast": digital.contrast,
  "elastic_transform": digital.elastic_transform,
  "pixelate": digital.pixelate,
  "jpeg_compression": digital.jpeg_compression,
  "speckle_noise": noise_corruptions.speckle_noise,
  "gaussian_blur": blur.gaussian_blur,
  "spatter": weather.spatter,
  "saturate": digital.saturate,
}

FAMILY_OF = {
  **{n: "noise" for n in ("gaussian_noise", "shot_noise", "impulse_noise", "speckle_noise")},
  **{
    n: "blur" for n in ("defocus_blur", "glass_blur", "motion_blur", "zoom_blur", "gaussian_blur")
  },
  **{n: "weather" for n in ("snow", "frost", "fog", "spatter")},
  **{
    n: "digital"
    for n in (
      "brightness",
      "contrast",
      "saturate",
      "elastic_transform",
      "pixelate",
      "jpeg_compression",
    )
  },
}


def split_name(corruption, severity):
  """`glass_blur@3` (docs/spec.md §1.1; grammar: `tf_forget.artifacts.names`)."""
  check(corruption, severity)
  return names.split_name(corruption, severity)


def parse_split_name(name):
  """`"glass_blur@3"` -> ("glass_blur", 3); raises `CorruptionError` on anything else."""
  try:
    parsed = names.parse_split(name)
  except names.SplitNameError as e:
    raise CorruptionError(str(e)) from e
  if parsed is None:
    raise CorruptionError(f"corrupted split names are <corruption>@<severity>, got {name!r}")
  check(*parsed)
  return parsed


def check(corruption, severity):
  """Raises `CorruptionError` for an unknown corruption or a severity outside 1..5."""
  if corruption not in CORRUPTIONS:
    raise CorruptionError(f"unknown corruption {corruption!r} (known: {', '.join(CORRUPTIONS)})")
  if isinstance(severity, bool) or severity not in tables.SEVERITIES:
    raise CorruptionError(f"severity must be an integer in 1..5, got {severity!r}")


def example_seeds(dataset, ids, corruption, severity, base_seed=0):
  """Per-example seeds in [0, 2**32) from (data set, id, corruption, severity, base seed).

  Args:
    dataset: data set name (`Dataset.spec.name`).
    ids: int `[N]` stable example ids.
    corruption: corruption name.
    severity: 1..5.
    base_seed: an extra integer to draw independent replicates (recorded in the cache key).

  Returns:
    uint32 `[N]`.
  """
  prefix = f"{dataset}\x00{corruption}\x00{int(severity)}\x00{int(base_seed)}\x00"
  out = np.empty(len(ids), dtype=np.uint32)
  for i, example_id in enumerate(np.asarray(ids).tolist()):
    digest = hashlib.sha256(f"{prefix}{int(example_id)}".encode()).digest()
    out[i] = int.from_bytes(digest[:4], "little")
  return out


def resolve_table(images_shape, table=None):
  """The severity table for images of shape `[N, H, W, C]`: `table` or the size family."""
  if table is None:
    return tables.family_for_shape(images_shape[1], images_shape[2])
  return tables.check_table(table)


def apply(name, images, severity, seeds, table=None, **options):
  """Corrupts a batch of uint8 images.

  Args:
    name: a key of `CORRUPTIONS`.
    images: uint8 `[N, H, W, C]`, C in {1, 3}, any H, W >= 1.
    severity: integer 1..5.
    seeds: uint32 `[N]` per-example seeds (`example_seeds`), or one int from which N seeds are
      derived with `np.random.SeedSequence(seed)` (ad-hoc use; the cache always uses
      `example_seeds`).
    table: severity table ("32", "64", "224", "imagecorruptions"); default: the resolution
      family of the image size (`tables.family_for_shape`).
    **options: corruption-specific switches (glass_blur: swap, use_numba; motion_blur / snow:
      renormalize).

  Returns:
    uint8 `[N, H, W, C]`.

  Raises:
    CorruptionError: unknown name / table, bad severity, bad batch or seeds.
  """
  check(name, severity)
  corruption_kit.check_batch(images)
  n = images.shape[0]
  if np.isscalar(seeds):
    seeds = np.random.SeedSequence(int(seeds)).generate_state(n, dtype=np.uint32)
  seeds = np.asarray(seeds)
  if seeds.shape != (n,):
    raise CorruptionError(f"need one seed per image ({n}), got shape {seeds.shape}")
  table = resolve_table(images.shape, table)
  if n == 0:
    return images.copy()
  return CORRUPTIONS[name](images, severity, seeds, table, **options)
