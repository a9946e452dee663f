"""Benchmark: the tutorial's files audited on 10,000 28x28 PNGs.

Makes what a user has after TensorFlow's post-training integer quantization tutorial with
Keras 3 (`examples/tutorial/make_files.py --size=28 --test_images=N`: the digits resized to
MNIST's 28x28, the test split repeated as shifted copies to N images): `model.keras`, its
dynamic-range and uint8 full-integer `.tflite` files, and the image folder. Then, in one run:

  (a) the audit as a user runs it (a subprocess, its defaults, with the tutorial's own files
      and tf_forget's two):
        eval/audit.py --dataset=folder:<images> --reference=model.keras
          --candidate=dynamic=mnist_model_dynamic.tflite --candidate=quant=mnist_model_quant.tflite
          --preprocess=unit --compress=dynamic_int8,full_int8 --out=<tmp>/audit
      its wall time and each stage's;
  (b) the baseline: the test images decoded once through the audit's data set, and every
      `.tflite` the audit evaluated on them (the reference's float32 conversion, tf_forget's
      dynamic_int8 and full_int8, the two user files) run once through the raw batched
      interpreter (`user_audit_bench.raw_seconds`: inputs quantized outside the clock), and a
      bare `import tensorflow` in a fresh process (a cost every TensorFlow tool pays).

Prints wall / (decode + raw): the target is <= 2. Timings are meant as ratios (run it
on an idle machine).

    PYTHONPATH=. .venv/bin/python benchmarks/tutorial_audit_bench.py [--images=10000] [--keep=DIR]
        [--repair=auto]
"""

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import user_audit_bench

ROOT = user_audit_bench.ROOT
MAKE_FILES = os.path.join(ROOT, "examples", "tutorial", "make_files.py")


def make_files(tmp, images):
  """The tutorial's files at 28x28 with `images` test images (Keras 3, a subprocess)."""
  env = {k: v for k, v in os.environ.items() if k != "TF_USE_LEGACY_KERAS"}
  subprocess.run(
    [sys.executable, MAKE_FILES, f"--out={tmp}", "--size=28", f"--test_images={images}"],
    check=True,
    env=env,
    stdout=subprocess.DEVNULL,
    stderr=subprocess.DEVNULL,
  )


def import_seconds():
  """Seconds of `import tensorflow` in a fresh process."""
  start = time.perf_counter()
  subprocess.run([sys.executable, "-c", "import tensorflow"], check=True, stderr=subprocess.DEVNULL)
  return time.perf_counter() - start


def evaluated_files(out):
  """[(variant, .tflite path, predictions path)] of every file evaluated on the test split."""
  from tf_forget.artifacts import layout
  from tf_forget.artifacts import names

  rows = []
  for path in sorted(glob.glob(os.path.join(layout.tflite_root(out), "dense", "0", "*.tflite"))):
    fmt = os.path.basename(path)[: -len(".tflite")]
    variant = names.DENSE if fmt == names.DEFAULT_FORMAT else fmt
    rows.append((variant, path, layout.predictions(out, variant, 0, "test")))
  return rows


def _model_inputs(out, examples):
  """The decoded images as the audit feeds the files (--preprocess=unit: pixels / 255)."""
  from tf_forget.artifacts import fileio
  from tf_forget.artifacts import layout
  from tf_forget.data import registry

  run = fileio.read_json(layout.run_file(out), "run.json")
  return registry.get(run["dataset"], **run["dataset_options"]).model_inputs(examples).images


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--images", type=int, default=10_000)
  parser.add_argument("--num_threads", type=int, default=2, help="as the audit's default")
  parser.add_argument("--keep", help="build and keep everything in this directory instead")
  parser.add_argument("--show_log", action="store_true", help="print the audit's output")
  parser.add_argument("--repair", default="", help="e.g. auto (default: none)")
  args = parser.parse_args()
  from tf_forget.artifacts import predictions
  from tf_forget.evaluate import batched

  tmp = args.keep or tempfile.mkdtemp(prefix="tutorial_audit_bench_")
  try:
    if not os.path.exists(os.path.join(tmp, "model.keras")):
      make_files(tmp, args.images)
    out = os.path.join(tmp, "audit")
    shutil.rmtree(out, ignore_errors=True)
    wall, stages, _, code, lines = user_audit_bench.run_or_exit(
      [
        f"--dataset=folder:{tmp}/images",
        f"--reference={tmp}/model.keras",
        f"--candidate=dynamic={tmp}/mnist_model_dynamic.tflite",
        f"--candidate=quant={tmp}/mnist_model_quant.tflite",
        "--preprocess=unit",
        "--compress=dynamic_int8,full_int8",
        f"--num_threads={args.num_threads}",
        f"--out={out}",
        *([f"--repair={args.repair}"] if args.repair else []),
      ]
    )
    if args.show_log:
      print("\n".join(lines))
    examples, decode = user_audit_bench.decoded_examples(out)
    fed = _model_inputs(out, examples)
    rows = []
    for variant, path, pred in evaluated_files(out):
      meta = predictions.read(pred)["metadata"]
      rows.append(
        (
          variant,
          user_audit_bench.raw_seconds(
            path,
            fed,
            batched.DEFAULT_BATCH_SIZE,
            args.num_threads,
            meta.get("runtime") or "xnnpack",
            1,
          ),
        )
      )
    tf_import = import_seconds()
    raw = sum(s for _, s in rows)
    base = decode[0] + raw
    print(
      f"\naudit of the tutorial's files on {len(examples)} images 28x28 (exit {code}): "
      f"wall {wall:.1f} s"
    )
    why = user_audit_bench.print_stages(wall, stages)
    print(
      f"baseline: decoding the images once {decode[0]:.2f} s + every file once through the "
      f"raw interpreter {raw:.2f} s ({', '.join(f'{v} {s:.2f}' for v, s in rows)}) = "
      f"{base:.2f} s"
    )
    print(
      f"why and repair: {why:.1f} s = {why / wall:.1%} of the audit (the target "
      f"with --repair=auto: <= 30%)"
    )
    print(
      f"wall / baseline = {wall / base:.1f}x (target <= 2); `import tensorflow` alone "
      f"{tf_import:.1f} s = {tf_import / base:.1f}x the baseline; (wall - import) / baseline "
      f"= {(wall - tf_import) / base:.1f}x"
    )
  finally:
    if not args.keep:
      shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
  main()
