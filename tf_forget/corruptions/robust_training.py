"""Robust training's corruptions: one drawn per training image, on the fly (docs/spec.md §6.8).

003 §6 and appendix E.1 (Table 11) train and retrain with "each training image corrupted with a
CIFAR10-C corruption (or no corruption) uniformly at random", at severity 3; the train and test
distributions share no corruption (docs/spec.md §6.8):

* `ROBUST_TRAIN_CORRUPTIONS`: none, impulse_noise, shot_noise, motion_blur, zoom_blur, snow,
  contrast, elastic_transform, pixelate (a training preset's `train_corruptions`);
* `ROBUST_TEST_CORRUPTIONS`: gaussian_noise, defocus_blur, glass_blur, brightness, fog, frost,
  jpeg_compression (the audit's corrupted splits under `--robust_training`); the test
  distribution's CIFAR-10.1 is a published set (`tf_forget.corruptions.published_suites`).

Determinism: the corruption drawn for an image and the seed of its randomness are a pure function
of (member seed, position of the image in the training stream) — `draw`, by
`np.random.SeedSequence([STREAM_TAG, seed, position])` — so a resumed stream corrupts every image
exactly as an uninterrupted one does, and an image's result does not depend on the batch it is
corrupted in (`corruption_registry.apply` seeds every image on its own). The severity table is the
one of the image size (`tables.family_for_shape`), as for the test distribution's cached splits.

Pure numpy (the image functions of `tf_forget.corruptions.corruption_registry`; no TensorFlow): the
training input pipeline (`tf_forget.train.inputs`) calls `corrupt_batch` through
`tf.numpy_function`.
"""

import numpy as np

from tf_forget.corruptions import tables

CorruptionError = tables.CorruptionError


def _registry():
  """`corruption_registry`, imported where a corruption is named or applied (its kernels import
  SciPy and Numba: the names above are read by the flags' help)."""
  from tf_forget.corruptions import corruption_registry

  return corruption_registry


NONE = "none"  # the clean image: "or no corruption" (003 appendix E.1)
ROBUST_TRAIN_CORRUPTIONS = (
  NONE,
  "impulse_noise",
  "shot_noise",
  "motion_blur",
  "zoom_blur",
  "snow",
  "contrast",
  "elastic_transform",
  "pixelate",
)
ROBUST_TEST_CORRUPTIONS = (
  "gaussian_noise",
  "defocus_blur",
  "glass_blur",
  "brightness",
  "fog",
  "frost",
  "jpeg_compression",
)
ROBUST_SEVERITY = 3
# First word of every draw's SeedSequence entropy: keeps these draws apart from any other use of
# (seed, position) (the augmentations use stateless TF ops keyed on seed * 1,000,003 + position).
STREAM_TAG = 20030608


def check(corruptions, severity=ROBUST_SEVERITY):
  """Raises `CorruptionError` unless `corruptions` can be drawn from (one line).

  Args:
    corruptions: names of `corruption_registry.CORRUPTIONS` or "none", at least one, no repeats (a
      repeat would weight the uniform draw).
    severity: integer 1..5.

  Raises:
    CorruptionError: an empty list, a repeated or unknown name, a bad severity.
  """
  corruptions = tuple(corruptions)
  if not corruptions:
    raise CorruptionError("train corruptions: need at least one name")
  corruption_registry = _registry()
  for name in corruptions:
    if name != NONE and name not in corruption_registry.CORRUPTIONS:
      raise CorruptionError(
        f"unknown train corruption {name!r} (known: {NONE}, "
        f"{', '.join(corruption_registry.CORRUPTIONS)})"
      )
    if corruptions.count(name) > 1:
      raise CorruptionError(f"train corruption {name!r} is repeated")
  if isinstance(severity, bool) or severity not in tables.SEVERITIES:
    raise CorruptionError(f"train corruption severity must be an integer in 1..5, got {severity!r}")


def draw(num_corruptions, seed, position):
  """The corruption drawn for the image at `position` of a member's stream, and its seed.

  Args:
    num_corruptions: how many names are drawn from (uniformly).
    seed: the member's seed, >= 0.
    position: the image's position in the (infinite, shuffled) training stream, >= 0.

  Returns:
    (index in [0, num_corruptions), uint32 seed of the corruption's randomness). The index is a
    uint32 word modulo `num_corruptions` (a bias below 1e-8 for 9 names).
  """
  words = np.random.SeedSequence([STREAM_TAG, int(seed), int(position)]).generate_state(
    2, dtype=np.uint32
  )
  return int(words[0]) % int(num_corruptions), words[1]


def corrupt_batch(images, positions, corruptions, severity, seed):
  """Corrupts each image with the corruption drawn for its stream position (`draw`).

  Images that draw the same corruption are corrupted in one `corruption_registry.apply` call (faster
  than one by one; the same pixels, as every image has its own seed).

  Args:
    images: uint8 `[N, H, W, C]`, C in {1, 3}.
    positions: int `[N]` stream positions of the images.
    corruptions: names as `check` accepts them.
    severity: integer 1..5.
    seed: the member's seed.

  Returns:
    uint8 `[N, H, W, C]`: "none" images unchanged, the others corrupted.
  """
  images = np.asarray(images)
  positions = np.asarray(positions).reshape(-1)
  corruptions = tuple(corruptions)
  if positions.shape[0] != images.shape[0]:
    raise CorruptionError(
      f"need one position per image ({images.shape[0]}), got {positions.shape[0]}"
    )
  drawn = [draw(len(corruptions), seed, p) for p in positions.tolist()]
  choice = np.asarray([c for c, _ in drawn], np.int64)
  seeds = np.asarray([s for _, s in drawn], np.uint32)
  out = images.copy()
  for index, name in enumerate(corruptions):
    rows = np.flatnonzero(choice == index)
    if name == NONE or not rows.size:
      continue
    out[rows] = _registry().apply(name, images[rows], severity, seeds[rows])
  return out


def corrupt(image, position, corruptions, severity, seed):
  """`corrupt_batch` of one uint8 `[H, W, C]` image at stream `position`; uint8 `[H, W, C]`."""
  image = np.asarray(image)
  return corrupt_batch(image[None], [position], corruptions, severity, seed)[0]
