"""Benchmark: why and repair on 10,000 images of a forgetting model.

Builds what a user with a forgetting int8 file has: an ordinary BN-free CNN trained on the embedded
digits with the range fault planted (`tests/planted.py`: the float function kept, a plain full-int8
file breaks many examples), saved as model.keras, and the digits test split repeated to `--images`
PNGs (each copy after the first rolled by up to 2 pixels, seeded) in images/test/<label>/, the train
split (the calibration data) in images/train/<label>/. Then runs, in one process, the audit as a
user runs it (a subprocess):

    eval/audit.py --dataset=folder:<images> --reference=model.keras --compress=full_int8
      --repair=auto --out=<tmp>/audit

and prints each stage's seconds and the "why and repair" section's share of the wall time
(the causal ranking's ablations, the range diagnosis, the search and the chosen file's
evaluation; the target: <= 30%), with the numbers the search recorded. Timings are
meant as ratios (run it on an idle machine).

    PYTHONPATH=. .venv/bin/python benchmarks/planted_repair_bench.py [--images=10000] [--keep=DIR]
"""

import argparse
import json
import os
import shutil
import sys
import tempfile

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np

import user_audit_bench


def make_files(tmp, n_images, seed=0):
  """model.keras (the planted range fault) and images/<label>/<iiiii>.png under `tmp`."""
  import tensorflow as tf

  from tests import planted
  from tf_forget.compat import keras2
  from tf_forget.data import registry

  data = registry.get("digits")
  train, test = data.load("train"), data.load("test")
  keras = keras2.keras()
  model = planted.plant(
    planted.train(keras, planted.cnn(keras), train.images, train.labels), "range"
  )
  model.save(os.path.join(tmp, "model.keras"))
  rng = np.random.default_rng(seed)
  pick = np.arange(n_images) % len(test.labels)
  shifts = rng.integers(-2, 3, (n_images, 2))
  shifts[: len(test.labels)] = 0
  images = [
    ("test", test.labels[j], np.roll(test.images[j], tuple(shift), axis=(0, 1)))
    for j, shift in zip(pick, shifts)
  ]
  images += [("train", label, image) for image, label in zip(train.images, train.labels)]
  for i, (split, label, image) in enumerate(images):
    folder = os.path.join(tmp, "images", split, str(int(label)))
    os.makedirs(folder, exist_ok=True)
    tf.io.write_file(os.path.join(folder, f"{i:05d}.png"), tf.io.encode_png(image))


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--images", type=int, default=10_000)
  parser.add_argument("--keep", help="build and keep everything in this directory instead")
  args = parser.parse_args()
  tmp = args.keep or tempfile.mkdtemp(prefix="planted_repair_bench_")
  try:
    if not os.path.exists(os.path.join(tmp, "model.keras")):
      make_files(tmp, args.images)
    out = os.path.join(tmp, "audit")
    shutil.rmtree(out, ignore_errors=True)
    wall, stages, _, code, _ = user_audit_bench.run_or_exit(
      [
        f"--dataset=folder:{tmp}/images",
        f"--reference={tmp}/model.keras",
        "--compress=full_int8",
        "--repair=auto",
        f"--out={out}",
      ]
    )
    print(
      f"\naudit of a planted range fault on {args.images} images (exit {code}): wall {wall:.1f} s"
    )
    why = user_audit_bench.print_stages(wall, stages)
    print(f"why and repair: {why:.1f} s = {why / wall:.1%} of the audit (target <= 30%)")
    with open(os.path.join(out, "layers", "dense", "0", "full_int8.json")) as f:
      doc = json.load(f)
    print(
      f"analysis: {doc['seconds']:.1f} s, {doc['ablation']['ablated']} ops ablated on "
      f"{doc['ablation']['forgotten']} forgotten + {doc['ablation']['stable']} stable "
      "examples"
    )
    with open(os.path.join(out, "tflite", "dense", "0", "full_int8~auto.json")) as f:
      meta = json.load(f)
    for trial in meta["repair"]["search"]:
      print(
        f"  search {trial['candidate']:8s} {trial.get('size_vs_int8', 0):.3f}x broken "
        f"{trial.get('broken')} of {trial.get('n')} (choose half) "
        f"{'; '.join(trial['failed']) or 'holds'}"
      )
  finally:
    if not args.keep:
      shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
  main()
