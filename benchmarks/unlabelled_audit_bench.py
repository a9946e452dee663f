"""Benchmark: an audit without labels of your model and two files on 10,000 MNIST images.

Builds in a temporary directory what a user brings: a small Keras CNN (tf_keras, its own
Rescaling: raw 0-255 pixels in) trained for one epoch on MNIST's train split (the IDX files of
`--mnist`, `tf_forget.data.idx_files`) and saved as model.keras; two files made from it with the
plain TFLite converter (dynamic-range int8; full int8 calibrated on 100 train images, int8 in /
out); MNIST's 10,000 test images as PNGs at the root of a folder (no labels). Then measures, in
this process (TensorFlow imported once, before either clock):

  (a) the audit without labels, as `tf_forget.audit` runs it:
        dataset=folder:<frames>, reference=model.keras, candidate={dyn8, int8},
        executor=inline, deploy_encoding=plain, out=<tmp>/audit_<i>
      (a new run directory each round: everything is made: the float32 file of the reference,
      the predictions, the report and its gallery, the bundle; and the images decoded anew:
      the decoded splits a process keeps are dropped first, `decoded_splits.forget`);
  (b) the baseline: decoding the 10,000 PNGs from disk once (`tf.io.decode_png`) and running the
      raw LiteRT interpreters (the reference's float32 file the audit made and the two files)
      over them once, batched (`batched.DEFAULT_BATCH_SIZE`, 2 threads, the runtime each
      predictions file records), inputs quantized inside the clock, set_tensor / invoke /
      get_tensor.

Prints both and the ratio audit / baseline (the target: <= 1.5), per round, and the audit's
stages (from its `== i/n name [elapsed s]` lines). Timings are ratios: run it on an idle machine.
Round 1 is a first audit in a fresh process (it also pays the imports, traces and delegates a
process makes once); the later rounds are first audits of the images in a warm process.

    PYTHONPATH=. TF_USE_LEGACY_KERAS=1 .venv/bin/python benchmarks/unlabelled_audit_bench.py \
        --mnist=DIR [--images=10000] [--rounds=2] [--keep=DIR]
"""

import argparse
import os
import re
import shutil
import statistics
import sys
import tempfile
import time

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np

FILES = ("dyn8", "int8")
HEADER = re.compile(r"^== (\d+)/(\d+) (.+?)\s+\[(\d+) s\]\s*$")
TARGET = 1.5


def build_model(seed):
  """A LeNet-sized CNN for 28x28x1: raw pixels in, 10 logits out."""
  import tf_keras as keras

  keras.utils.set_random_seed(seed)
  layers = keras.layers
  return keras.Sequential(
    [
      keras.Input((28, 28, 1)),
      layers.Rescaling(1 / 255.0),
      layers.Conv2D(16, 5, activation="relu"),
      layers.MaxPooling2D(),
      layers.Conv2D(32, 5, activation="relu"),
      layers.MaxPooling2D(),
      layers.Flatten(),
      layers.Dense(64, activation="relu"),
      layers.Dense(10),
    ]
  )


def convert(model, kind, calibration):
  """The plain converter's dynamic-range int8 or full int8 file."""
  import tensorflow as tf

  converter = tf.lite.TFLiteConverter.from_keras_model(model)
  converter.optimizations = [tf.lite.Optimize.DEFAULT]
  if kind == "int8":
    converter.representative_dataset = lambda: (
      [calibration[i : i + 1].astype(np.float32)] for i in range(len(calibration))
    )
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    converter.inference_input_type = tf.int8
    converter.inference_output_type = tf.int8
  return converter.convert()


def write_inputs(tmp, mnist, n_images, seed):
  """model.keras, the two files and the PNG folder under `tmp`; {name: path}."""
  import tensorflow as tf
  import tf_keras as keras

  from tf_forget.data import idx_files

  splits, _ = idx_files.load(mnist, "mnist")
  (x, y), (test, _) = splits["train"], splits["test"]
  model = build_model(seed)
  model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
  model.fit(x.astype(np.float32), y, batch_size=128, epochs=1, verbose=0)
  paths = {"reference": os.path.join(tmp, "model.keras")}
  model.save(paths["reference"])
  for name in FILES:
    paths[name] = os.path.join(tmp, f"model_{name}.tflite")
    with open(paths[name], "wb") as f:
      f.write(convert(model, name, x[:100]))
  paths["frames"] = os.path.join(tmp, "frames")
  os.makedirs(paths["frames"])
  for i, image in enumerate(test[:n_images]):
    tf.io.write_file(os.path.join(paths["frames"], f"{i:05d}.png"), tf.io.encode_png(image))
  return paths


def run_audit(paths, out):
  """(wall seconds, [(name, seconds)] of its stages, exit status) of the audit in this process."""
  import tf_forget
  from tf_forget.data import decoded_splits

  decoded_splits.forget()  # every round decodes the images, as a first audit of them does
  lines, marks = [], []
  start = time.perf_counter()

  def log(line):
    now = time.perf_counter() - start
    lines.append(line)
    match = HEADER.match(str(line).strip())
    if match:
      marks.append((match.group(3), now))

  result = tf_forget.audit(
    dataset=f"folder:{paths['frames']}",
    reference=paths["reference"],
    candidate={name: paths[name] for name in FILES},
    executor="inline",
    deploy_encoding="plain",
    out=out,
    log=log,
  )
  wall = time.perf_counter() - start
  ends = [t for _, t in marks[1:]] + [wall]
  stages = [("start (before the first stage)", marks[0][1] if marks else wall)]
  stages += [(name, end - t) for (name, t), end in zip(marks, ends)]
  return wall, stages, 0 if result.passed else 3


def baseline(frames, models, batch_size, num_threads, runtimes):
  """(seconds to decode the PNGs, seconds of the raw interpreters over them) once each."""
  import tensorflow as tf

  from tf_forget.evaluate import interpreter

  names = sorted(os.listdir(frames))
  start = time.perf_counter()
  images = np.stack(
    [tf.io.decode_png(tf.io.read_file(os.path.join(frames, n))).numpy() for n in names]
  )
  decode = time.perf_counter() - start
  start = time.perf_counter()
  n = len(images)
  for path, runtime in zip(models, runtimes):
    with open(path, "rb") as f:
      data = f.read()
    made = {}
    for s in range(0, n, batch_size):
      x = images[s : s + batch_size]
      if len(x) not in made:
        interp = interpreter.create(data, num_threads, runtime, batch_size=len(x))
        details = interp.get_input_details()[0]
        made[len(x)] = (
          interp,
          details["index"],
          interpreter.InputQuantizer(details),
          interp.get_output_details()[0]["index"],
        )
      interp, i_in, quantize, i_out = made[len(x)]
      interp.set_tensor(i_in, quantize(x))
      interp.invoke()
      interp.get_tensor(i_out)
  return decode, time.perf_counter() - start


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--mnist", required=True, help="the folder of the MNIST IDX files")
  parser.add_argument("--images", type=int, default=10_000)
  parser.add_argument("--rounds", type=int, default=2, help="audit / baseline pairs")
  parser.add_argument("--num_threads", type=int, default=2, help="as the audit's default")
  parser.add_argument("--seed", type=int, default=0)
  parser.add_argument("--keep", help="build and keep everything in this directory instead")
  args = parser.parse_args()
  import tensorflow as tf  # noqa: F401 (imported before either clock)

  from tf_forget.artifacts import layout
  from tf_forget.artifacts import predictions
  from tf_forget.evaluate import batched

  tmp = args.keep or tempfile.mkdtemp(prefix="unlabelled_audit_bench_")
  os.makedirs(tmp, exist_ok=True)
  try:
    start = time.perf_counter()
    paths = write_inputs(tmp, args.mnist, args.images, args.seed)
    print(f"inputs written in {time.perf_counter() - start:.1f} s: {tmp}", flush=True)
    ratios = []
    for i in range(args.rounds):
      out = os.path.join(tmp, f"audit_{i}")
      wall, stages, code = run_audit(paths, out)
      models = [os.path.join(layout.tflite_root(out), "dense", "0", "float32.tflite")]
      models += [paths[name] for name in FILES]
      variants = ["dense"] + [f"user_{name}" for name in FILES]
      runtimes = [
        predictions.read(layout.predictions(out, v, 0, "test"))["metadata"].get("runtime")
        or "xnnpack"
        for v in variants
      ]
      decode, raw = baseline(
        paths["frames"], models, batched.DEFAULT_BATCH_SIZE, args.num_threads, runtimes
      )
      ratio = wall / (decode + raw)
      ratios.append(ratio)
      print(
        f"\nround {i + 1}: audit without labels of 1 reference + {len(FILES)} files on "
        f"{args.images} images (exit {code}): {wall:.1f} s; baseline {decode + raw:.1f} s "
        f"(decode {decode:.1f} s + raw interpreters {raw:.1f} s, 3 files); audit / baseline = "
        f"{ratio:.2f} (target <= {TARGET}: {'OK' if ratio <= TARGET else 'SLOW'})"
      )
      for name, seconds in stages:
        print(f"  {name:36s} {seconds:7.1f} s {seconds / wall:6.1%}")
    print(f"\naudit / baseline per round: {', '.join(f'{r:.2f}' for r in ratios)}")
    print(f"median {statistics.median(ratios):.2f} (target <= {TARGET})")
  finally:
    if not args.keep:
      shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
  main()
