"""Benchmark: the corruption suite vs imagecorruptions 1.1.2, same images, same run.

    .venv/bin/python benchmarks/corruptions_bench.py [--severity=3] [--sizes=32x32:64,...]

For each image size, times every corruption of `tf_forget.corruptions.corruption_registry` on one
batch (after a warm-up call that compiles the numba glass kernel and loads the frost textures) and
the patched reference (`tf_forget.corruptions.reference`) image by image on the same images, with
the same seeds and the same severity table ("imagecorruptions"), and prints a markdown table of
ms/image and speedups, plus the whole-suite ratio. Targets: suite >= 10x at 218x178,
>= 5x at 32x32, glass_blur >= 100x. The reference at 218x178 costs ~0.6 s/image for the suite,
so that size uses few images.
"""

import time

from absl import app
from absl import flags
import numpy as np

from tf_forget.corruptions import corruption_registry
from tf_forget.corruptions import reference

_SEVERITY = flags.DEFINE_integer("severity", 3, "Severity 1..5.", lower_bound=1, upper_bound=5)
_SIZES = flags.DEFINE_list(
  "sizes", ["32x32:128", "64x64:48", "218x178:6"], "HxW:num_images per benchmarked size."
)
_REPEATS = flags.DEFINE_integer(
  "repeats", 1, "Timed repetitions of ours (min is kept).", lower_bound=1
)


def _parse_size(text):
  try:
    shape, count = text.split(":")
    h, w = shape.lower().split("x")
    return int(h), int(w), int(count)
  except ValueError as e:
    raise app.UsageError(f"--sizes entries are HxW:N, got {text!r}") from e


def bench_size(h, w, n, severity, repeats):
  """Returns rows (name, ref ms/img, ours ms/img) for one image size."""
  images = reference.synthetic_images(n, h, w, seed=h * 1000 + w)
  seeds = np.arange(n, dtype=np.uint32) + 12345
  rows = []
  for name in corruption_registry.CORRUPTIONS:
    # warm-up
    corruption_registry.apply(name, images[:2], severity, seeds[:2], table="imagecorruptions")
    best = float("inf")
    for _ in range(repeats):
      start = time.perf_counter()
      corruption_registry.apply(name, images, severity, seeds, table="imagecorruptions")
      best = min(best, time.perf_counter() - start)
    start = time.perf_counter()
    for i in range(n):
      reference.corrupt(name, images[i], severity, seeds[i])
    ref = time.perf_counter() - start
    rows.append((name, ref * 1e3 / n, best * 1e3 / n))
  return rows


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
  sizes = [_parse_size(s) for s in _SIZES.value]
  reference.load()
  for h, w, n in sizes:
    rows = bench_size(h, w, n, _SEVERITY.value, _REPEATS.value)
    print(f"\n### {h}x{w}, {n} images, severity {_SEVERITY.value}\n")
    print("| corruption | imagecorruptions 1.1.2 ms/img | ours ms/img | speedup |")
    print("|---|---:|---:|---:|")
    for name, ref, ours in rows:
      print(f"| {name} | {ref:.2f} | {ours:.3f} | {ref / ours:.1f}x |")
    ref_total = sum(r[1] for r in rows)
    ours_total = sum(r[2] for r in rows)
    print(
      f"| **suite (19)** | {ref_total:.2f} | {ours_total:.3f} | **{ref_total / ours_total:.1f}x** |"
    )


if __name__ == "__main__":
  app.run(main)
