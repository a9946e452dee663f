"""Benchmark: the seconds a user waits around a finished own-model audit, A/B against a base.

Builds (once, in `--work`) what a user brings: the 10,000 MNIST test images as PNGs in 10 class
folders (from the IDX files in `--mnist`), a small Keras CNN trained briefly on MNIST's train
split (its own Rescaling: raw 0-255 pixels in) saved as model.keras and its dynamic-range int8
file from the plain converter. The audit is

    tf-forget audit --dataset=folder:<images> --reference=model.keras
      --candidate=mine=model_dyn8.tflite --compress=float16,dynamic_int8 --out=<run>

Each code tree (`--trees`: this checkout and, e.g., the base commit's in /tmp/h53_base) gets its
own run directory, audited once outside the clock (`--fresh` also times that first audit and
its time before its first stage). Then, alternating the trees `--repeats` times, it times:

  import      `python -c "import tensorflow"` (the yardstick);
  rerun       the same audit command again (nothing to redo);
  report      `tf-forget report <run>`;

and prints each one's median seconds, its ratio to `import`, and the ratio tree / first tree.
The command's own wall time (what it prints) is the time from its start; these are measured
from outside, process start to exit.

    PYTHONPATH=. TF_USE_LEGACY_KERAS=1 .venv/bin/python benchmarks/rerun_bench.py \
        --trees=/tmp/h53_base,. [--repeats=3] [--fresh] [--work=/tmp/rerun_bench]
"""

import argparse
import gzip
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np

from benchmarks import code_trees

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MNIST = "/work/shared/data/mnist"
HEADER = re.compile(r"^== (\d+)/(\d+) (.+?)\s+\[(\d+) s\]\s*$")


def _idx(path):
  """The array of one gzip IDX file."""
  with gzip.open(path, "rb") as f:
    data = f.read()
  dims = data[3]
  shape = [int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(dims)]
  return np.frombuffer(data, np.uint8, offset=4 + 4 * dims).reshape(shape)


def _png(image):
  """A grey PNG of `image` (uint8 [H, W]) from the standard library alone."""
  import struct
  import zlib

  height, width = image.shape
  raw = b"".join(b"\0" + image[r].tobytes() for r in range(height))

  def chunk(kind, body):
    return (
      struct.pack(">I", len(body))
      + kind
      + body
      + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)
    )

  header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
  return (
    b"\x89PNG\r\n\x1a\n"
    + chunk(b"IHDR", header)
    + chunk(b"IDAT", zlib.compress(raw, 6))
    + chunk(b"IEND", b"")
  )


def build_inputs(work, mnist, n_images, steps):
  """images/, model.keras and model_dyn8.tflite in `work` (kept: made once); {name: path}."""
  paths = {
    "images": os.path.join(work, "images"),
    "reference": os.path.join(work, "model.keras"),
    "candidate": os.path.join(work, "model_dyn8.tflite"),
  }
  if all(os.path.exists(p) for p in paths.values()):
    return paths
  os.makedirs(work, exist_ok=True)
  test_x = _idx(os.path.join(mnist, "t10k-images-idx3-ubyte.gz"))[:n_images]
  test_y = _idx(os.path.join(mnist, "t10k-labels-idx1-ubyte.gz"))[:n_images]
  tmp = paths["images"] + ".tmp"
  shutil.rmtree(tmp, ignore_errors=True)
  for c in range(10):
    os.makedirs(os.path.join(tmp, str(c)))
  for i, (x, y) in enumerate(zip(test_x, test_y)):
    with open(os.path.join(tmp, str(y), f"{i:05d}.png"), "wb") as f:
      f.write(_png(x))
  os.replace(tmp, paths["images"])

  import tensorflow as tf
  import tf_keras as keras

  keras.utils.set_random_seed(0)
  train_x = _idx(os.path.join(mnist, "train-images-idx3-ubyte.gz"))[..., None]
  train_y = _idx(os.path.join(mnist, "train-labels-idx1-ubyte.gz"))
  layers = keras.layers
  model = keras.Sequential(
    [
      keras.Input((28, 28, 1)),
      layers.Rescaling(1 / 255.0),
      layers.Conv2D(16, 3, activation="relu"),
      layers.MaxPooling2D(),
      layers.Conv2D(32, 3, activation="relu"),
      layers.MaxPooling2D(),
      layers.Flatten(),
      layers.Dense(10),
    ]
  )
  model.compile(
    "adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"]
  )
  model.fit(train_x, train_y, batch_size=64, epochs=1, steps_per_epoch=steps, verbose=0)
  model.save(paths["reference"])
  converter = tf.lite.TFLiteConverter.from_keras_model(model)
  converter.optimizations = [tf.lite.Optimize.DEFAULT]
  with open(paths["candidate"], "wb") as f:
    f.write(converter.convert())
  return paths


def audit_args(paths, out):
  return [
    f"--dataset=folder:{paths['images']}",
    f"--reference={paths['reference']}",
    f"--candidate=mine={paths['candidate']}",
    "--compress=float16,dynamic_int8",
    f"--out={out}",
  ]


def run(tree, args, stages=False):
  """Runs `python -m tf_forget <args>` from the code tree `tree`; (wall seconds, seconds before
  the first stage header or None, exit code, output lines)."""
  env = code_trees.env(tree, TF_CPP_MIN_LOG_LEVEL="2")
  cmd = [sys.executable, *args] if args[0] == "-c" else [sys.executable, "-m", "tf_forget", *args]
  start = time.perf_counter()
  proc = subprocess.Popen(
    cmd, cwd=tree, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
  )
  first, lines = None, []
  for line in proc.stdout:
    lines.append(line.rstrip("\n"))
    if first is None and HEADER.match(line.strip()):
      first = time.perf_counter() - start
  code = proc.wait()
  return time.perf_counter() - start, first, code, lines


def checked(tree, args):
  wall, first, code, lines = run(tree, args)
  if code not in (0, 3):
    print("\n".join(lines[-30:]))
    raise SystemExit(f"{' '.join(args[:2])} failed in {tree} (exit {code})")
  return wall, first, lines


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--trees", default=ROOT, help="comma-separated code trees; first = base")
  parser.add_argument("--work", default="/tmp/rerun_bench")
  parser.add_argument("--mnist", default=MNIST)
  parser.add_argument("--images", type=int, default=10_000)
  parser.add_argument("--steps", type=int, default=300, help="training steps of the reference")
  parser.add_argument("--repeats", type=int, default=3)
  parser.add_argument("--fresh", action="store_true", help="also time the first audit")
  parser.add_argument("--only", default="import,rerun,report")
  args = parser.parse_args()
  trees = code_trees.compiled(args.trees.split(","))
  paths = build_inputs(args.work, args.mnist, args.images, args.steps)
  outs = {t: os.path.join(args.work, f"run_{i}") for i, t in enumerate(trees)}
  times = {}
  for t in trees:
    if args.fresh:
      shutil.rmtree(outs[t], ignore_errors=True)
    if args.fresh or not os.path.exists(os.path.join(outs[t], "report.json")):
      wall, first, _ = checked(t, ["audit", *audit_args(paths, outs[t])])
      print(f"first audit {t}: {wall:.1f} s, {first or float('nan'):.1f} s before stage 1")
      times.setdefault(("fresh", t), []).append(wall)
      times.setdefault(("before stage 1", t), []).append(first or float("nan"))
  only = args.only.split(",")
  for r in range(args.repeats):
    for t in trees:
      if "import" in only:
        times.setdefault(("import", None), []).append(checked(t, ["-c", "import tensorflow"])[0])
      if "rerun" in only:
        wall, first, lines = checked(t, ["audit", *audit_args(paths, outs[t])])
        times.setdefault(("rerun", t), []).append(wall)
        if r == 0:
          print(
            f"rerun {t}:",
            *[x for x in lines if "read (" in x or "report" in x.lower()][:4],
            sep="\n  ",
          )
      if "report" in only:
        times.setdefault(("report", t), []).append(checked(t, ["report", outs[t]])[0])
  imp = statistics.median(times.get(("import", None), [float("nan")]))
  print(f"\nimport tensorflow: median {imp:.2f} s over {len(times.get(('import', None), []))}")
  print(f"{'path':16s} {'tree':40s} {'median s':>9s} {'/import':>8s} {'/base':>7s}  runs")
  for what in ("fresh", "before stage 1", "rerun", "report"):
    base = None
    for t in trees:
      if (what, t) not in times:
        continue
      m = statistics.median(times[(what, t)])
      base = m if base is None else base
      runs = " ".join(f"{x:.1f}" for x in times[(what, t)])
      print(f"{what:16s} {t:40s} {m:9.2f} {m / imp:8.2f} {m / base:7.2f}  {runs}")


if __name__ == "__main__":
  main()
