"""Behaviour of the corruption suite beyond the reference: sizes, grayscale, seeds, tables,
errors."""

import hashlib
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from tf_forget.corruptions import blur
from tf_forget.corruptions import corruption_registry
from tf_forget.corruptions import digital
from tf_forget.corruptions import frost_textures
from tf_forget.corruptions import glass_kernel
from tf_forget.corruptions import noise_corruptions
from tf_forget.corruptions import reference
from tf_forget.corruptions import tables

NAMES = tuple(corruption_registry.CORRUPTIONS)


@pytest.fixture(scope="module")
def digits():
  """8x8 grayscale, digit-like images (sklearn's digits are 8x8 with 17 grey levels)."""
  return reference.synthetic_images(6, 8, 8, seed=3, channels=1)


@pytest.mark.parametrize("name", NAMES)
def test_all_severities_on_tiny_gray_and_rgb(digits, name):
  rgb = reference.synthetic_images(3, 8, 8, seed=4)
  for images in (digits, rgb):
    seeds = np.arange(len(images))
    for severity in tables.SEVERITIES:
      out = corruption_registry.apply(name, images, severity, seeds)
      assert out.shape == images.shape and out.dtype == np.uint8
    # Meaningful at 8 px: severity 5 changes the image (saturate leaves gray images alone).
    if not (name == "saturate" and images.shape[-1] == 1):
      assert np.mean(out != images) > 0.01, name


@pytest.mark.parametrize("shape", [(2, 28, 28, 1), (2, 64, 64, 3), (1, 218, 178, 3)])
def test_all_corruptions_at_other_sizes(shape):
  images = reference.synthetic_images(*shape[:3], seed=5, channels=shape[3])
  for name in NAMES:
    out = corruption_registry.apply(name, images, 3, np.arange(shape[0]))
    assert out.shape == images.shape and out.dtype == np.uint8
    if not (name == "saturate" and shape[-1] == 1):
      assert np.mean(out != images) > 0.01, name


def test_blurs_keep_the_mean_brightness_on_tiny_images(digits):
  # Clipped kernels are renormalised (defocus disk, motion taps): no darkening at 8 px.
  for name in ("defocus_blur", "motion_blur", "gaussian_blur", "zoom_blur"):
    out = corruption_registry.apply(name, digits, 5, np.arange(len(digits)), table="224")
    assert abs(out.mean() - digits.mean()) < 6, name


def test_motion_blur_reference_mode_darkens_clipped_kernels(digits):
  seeds = np.arange(len(digits))
  kept = corruption_registry.apply("motion_blur", digits, 5, seeds, table="224")
  dropped = corruption_registry.apply(
    "motion_blur", digits, 5, seeds, table="224", renormalize=False
  )
  assert dropped.mean() < kept.mean() - 5


def test_seeds_make_each_example_independent_of_its_batch():
  images = reference.synthetic_images(5, 32, 32, seed=6)
  seeds = corruption_registry.example_seeds("cifar10", np.arange(5), "glass_blur", 3)
  full = corruption_registry.apply("glass_blur", images, 3, seeds)
  part = corruption_registry.apply("glass_blur", images[2:4], 3, seeds[2:4])
  np.testing.assert_array_equal(full[2:4], part)
  again = corruption_registry.apply("glass_blur", images, 3, seeds)
  np.testing.assert_array_equal(full, again)
  other = corruption_registry.apply("glass_blur", images, 3, seeds + 1)
  assert np.any(other != full)


def test_example_seeds_golden():
  # Independent computation of the documented derivation: sha256 of the NUL-joined key.
  key = "digits\x00fog\x003\x000\x0042"
  expected = int.from_bytes(hashlib.sha256(key.encode()).digest()[:4], "little")
  seeds = corruption_registry.example_seeds("digits", np.array([42, 43]), "fog", 3)
  assert seeds[0] == expected and seeds[1] != expected
  assert corruption_registry.example_seeds("digits", [42], "fog", 4)[0] != expected
  assert corruption_registry.example_seeds("digits", [42], "fog", 3, base_seed=1)[0] != expected


def _reference_shuffle(x, deltas, d, iterations):
  """Hendrycks' loop verbatim in numpy: the tuple assignment through views."""
  k = 0
  for _ in range(iterations):
    for h in range(x.shape[0] - d, d, -1):
      for w in range(x.shape[1] - d, d, -1):
        dx, dy = deltas[k]
        k += 1
        hp, wp = h + dy, w + dx
        x[h, w], x[hp, wp] = x[hp, wp], x[h, w]
  return x


@pytest.mark.parametrize("use_numba", [True, False] if glass_kernel.HAVE_NUMBA else [False])
def test_glass_shuffle_copies_like_the_reference(use_numba):
  images = reference.synthetic_images(3, 12, 10, seed=7)
  deltas = glass_kernel.draw_deltas([1, 2, 3], (12, 10), 2, 2)
  ours = glass_kernel.shuffle(images.copy(), deltas, 2, 2, use_numba=use_numba)
  for i in range(3):
    np.testing.assert_array_equal(ours[i], _reference_shuffle(images[i].copy(), deltas[i], 2, 2))
  swapped = glass_kernel.shuffle(images.copy(), deltas, 2, 2, swap=True, use_numba=use_numba)
  for i in range(3):  # a true swap permutes the pixels; the copy does not
    np.testing.assert_array_equal(
      np.sort(swapped[i].reshape(-1, 3), axis=0), np.sort(images[i].reshape(-1, 3), axis=0)
    )
  assert np.any(swapped != ours)


def test_glass_numba_and_numpy_agree():
  if not glass_kernel.HAVE_NUMBA:
    pytest.skip("numba not installed")
  images = reference.synthetic_images(4, 32, 32, seed=8)
  a = blur.glass_blur(images, 5, np.arange(4), "224", use_numba=True)
  b = blur.glass_blur(images, 5, np.arange(4), "224", use_numba=False)
  np.testing.assert_array_equal(a, b)


def test_family_for_shape():
  assert tables.family_for_shape(8, 8) == "32"
  assert tables.family_for_shape(32, 32) == "32"
  assert tables.family_for_shape(28, 28) == "32"
  assert tables.family_for_shape(64, 64) == "64"
  assert tables.family_for_shape(218, 178) == "224"
  assert tables.family_for_shape(224, 224) == "224"


def test_tables_match_the_scripts():
  # Spot checks re-read from make_cifar_c.py / make_imagenet_64_c.py / make_imagenet_c.py.
  assert tables.params("32", "gaussian_noise", 3) == 0.08
  assert tables.params("32", "glass_blur", 5) == (0.4, 1, 2)
  assert tables.params("64", "saturate", 5) == (30, 0.2)
  assert tables.params("224", "motion_blur", 3) == (15, 8)
  assert tables.params("imagecorruptions", "elastic_transform", 1) == 250 * 0.05
  assert len(tables.zoom_factors("224", 5)) == len(np.arange(1, 1.31, 0.03))
  for table in tables.FAMILIES:
    assert set(tables.TABLES[table]) == set(corruption_registry.CORRUPTIONS)
    assert all(len(v) == 5 for v in tables.TABLES[table].values())


@pytest.mark.parametrize(
  "bad",
  [
    dict(name="nope"),
    dict(severity=0),
    dict(severity=6),
    dict(severity=True),
    dict(images=np.zeros((1, 8, 8, 3), np.float32)),
    dict(images=np.zeros((1, 8, 8, 4), np.uint8)),
    dict(images=np.zeros((8, 8, 3), np.uint8)),
    dict(seeds=np.arange(3)),
    dict(table="128"),
  ],
)
def test_bad_input_raises(bad):
  args = dict(
    name="fog", images=np.zeros((2, 8, 8, 3), np.uint8), severity=3, seeds=np.arange(2), table=None
  )
  args.update(bad)
  with pytest.raises(tables.CorruptionError):
    corruption_registry.apply(
      args["name"], args["images"], args["severity"], args["seeds"], args["table"]
    )


def test_split_names():
  assert corruption_registry.split_name("glass_blur", 3) == "glass_blur@3"
  assert corruption_registry.parse_split_name("glass_blur@3") == ("glass_blur", 3)
  for bad in ("glass_blur", "glass_blur@6", "blur@3", "glass_blur@x"):
    with pytest.raises(tables.CorruptionError):
      corruption_registry.parse_split_name(bad)


def test_frost_textures_are_checksummed(tmp_path, monkeypatch):
  for i in range(6):
    assert frost_textures.load(i).ndim == 3
  src = frost_textures.texture_dir()
  for name in frost_textures.FROST_FILES:
    shutil.copy(os.path.join(src, name), tmp_path / name)
  with open(tmp_path / "frost2.png", "r+b") as f:
    f.seek(100)
    f.write(b"\x00\x01")
  monkeypatch.setenv(frost_textures.ENV_VAR, str(tmp_path))
  frost_textures.load.cache_clear()
  try:
    with pytest.raises(frost_textures.FrostTextureError, match="sha256"):
      frost_textures.load(1)
  finally:
    frost_textures.load.cache_clear()


def test_linf_noise_float_and_uint8():
  gen = np.random.default_rng(0)
  x = gen.normal(size=(4, 5, 5, 3)).astype(np.float32)
  y = noise_corruptions.linf_uniform_noise(x, 0.3, np.random.default_rng(1))
  assert y.dtype == np.float32 and y.shape == x.shape
  assert np.max(np.abs(y - x)) <= 0.3 + 1e-6 and np.max(np.abs(y - x)) > 0.25
  np.testing.assert_array_equal(
    noise_corruptions.linf_uniform_noise(x, 0.0, np.random.default_rng(1)), x
  )
  with pytest.raises(tables.CorruptionError):
    noise_corruptions.linf_uniform_noise(x, -0.1, np.random.default_rng(1))
  images = reference.synthetic_images(2, 8, 8, seed=9)
  out = noise_corruptions.linf_uniform_noise_uint8(images, 8 / 255, [1, 2])
  assert np.max(np.abs(out.astype(int) - images)) <= 8


def test_corruption_functions_import_neither_tensorflow_nor_skimage():
  code = (
    "import sys\n"
    "from tf_forget.corruptions import corruption_registry\n"
    "import numpy as np\n"
    "corruption_registry.apply('frost', np.zeros((1, 8, 8, 3), np.uint8), 3, [0])\n"
    "bad = [m for m in ('tensorflow', 'skimage', 'imagecorruptions') if m in sys.modules]\n"
    "assert not bad, bad\n"
  )
  root = os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(corruption_registry.__file__)))
  )
  env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
  subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=120)


def test_zoom_numba_kernel_matches_numpy_form():
  if not glass_kernel.HAVE_NUMBA:
    pytest.skip("numba not installed")
  for table, shape in (("imagecorruptions", (3, 40, 52)), ("32", (3, 32, 32)), ("224", (2, 9, 7))):
    images = reference.synthetic_images(*shape, seed=10)
    for severity in (1, 5):
      a = blur.zoom_blur(images, severity, None, table, use_numba=True)
      b = blur.zoom_blur(images, severity, None, table, use_numba=False)
      np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("fn", [digital.brightness, digital.saturate])
def test_hsv_numba_kernel_matches_numpy_form(fn):
  if not glass_kernel.HAVE_NUMBA:
    pytest.skip("numba not installed")
  images = reference.synthetic_images(6, 30, 26, seed=12)
  images[0, :4, :4] = [[0, 0, 0], [255, 255, 255], [255, 0, 0], [7, 7, 7]]  # grey, primaries
  for table in ("32", "64", "224"):
    for severity in tables.SEVERITIES:
      np.testing.assert_array_equal(
        fn(images, severity, None, table, use_numba=True),
        fn(images, severity, None, table, use_numba=False),
      )
