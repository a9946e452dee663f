"""Benchmark: audit of your own model and three files on 10,000 images.

Builds in a temporary directory what a user brings: a small Keras CNN for 32x32x3 inputs
(tf_keras, untrained weights, its own Rescaling so raw 0-255 pixels go in) saved as
model.keras; three candidates made from it with the plain TFLite converter (float16,
dynamic-range int8, full int8 with a representative data set, int8 in / out); a folder of
`--images` random 32x32 RGB PNGs in 10 class folders. Then measures:

  (a) the audit command, as a user runs it (a subprocess):
        eval/audit.py --dataset=folder:<images> --reference=model.keras
          --candidate=f16=... --candidate=dyn8=... --candidate=int8=...
          --executor=inline --deploy_encoding=plain --input_scaling_check=off --out=<tmp>/audit
      its wall time and each stage's, from the moments its `== i/n name [elapsed s]` headers
      are printed (the last stage runs to the process's exit);
  (b) the raw batched interpreter on the same four files (the reference's float32 conversion the
      audit made, <out>/tflite/dense/0/float32.tflite, and the three candidates) over the same
      images decoded once in memory (the audit's own data set, outside the clock), with the audit's
      batch size (`tf_forget.evaluate.batched.DEFAULT_BATCH_SIZE`), threads (--num_threads, 2) and
      runtime (the one each predictions file records): inputs quantized before the clock, set_tensor
      / invoke / get_tensor only, the last partial batch on a second interpreter allocated at its
      size; median of `--repeats` rounds.

Reports the evaluation stage's time, the raw interpreter time and their ratio raw / evaluation
(the target: >= 0.8, i.e. the audit's evaluation costs at most 1.25x the interpreter);
the stage's tasks (from the executor's "[evaluate] i/n ETA .. (task)" lines: the .tflite files,
the Keras reference's own predictions); per file the evaluator's in-loop seconds in the audit
(recorded in its predictions file), those of the same evaluator (`evaluate_file`, its defaults)
fed the decoded images from memory (the difference is the data stream) and raw; the seconds of
one stream of the split through the audit's data set (PNG decode, which the evaluation does once
per file); and the whole audit's wall time with each stage's share. Timings are meant as ratios
(run it on an idle machine).

    PYTHONPATH=. TF_USE_LEGACY_KERAS=1 .venv/bin/python benchmarks/user_audit_bench.py \
        [--images=10000] [--repeats=3] [--keep=DIR]
"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIZE, CLASSES = 32, 10
CANDIDATES = ("f16", "dyn8", "int8")
HEADER = re.compile(r"^== (\d+)/(\d+) (.+?)\s+\[(\d+) s\]\s*$")
# The executor's lines: "[evaluate] 2 tasks on ..." then "[evaluate] 1/2 ETA 3 s (<task>)" as
# each task ends.
TASKS = re.compile(r"^\[(\w+)\] \d+ tasks? on ")
DONE = re.compile(r"^\[(\w+)\] \d+/\d+ ETA \d+ s \((.+)\)$")
EVALUATION_STAGE = "TFLite evaluation"


def build_model(width, seed):
  """A small CIFAR-shaped CNN (untrained): raw pixels in, 10 logits out."""
  import tf_keras as keras

  keras.utils.set_random_seed(seed)
  layers = keras.layers
  return keras.Sequential(
    [
      keras.Input((SIZE, SIZE, 3)),
      layers.Rescaling(1 / 255.0),
      layers.Conv2D(width, 3, padding="same", activation="relu"),
      layers.Conv2D(width, 3, padding="same", activation="relu"),
      layers.MaxPooling2D(),
      layers.Conv2D(2 * width, 3, padding="same", activation="relu"),
      layers.Conv2D(2 * width, 3, padding="same", activation="relu"),
      layers.MaxPooling2D(),
      layers.Conv2D(4 * width, 3, padding="same", activation="relu"),
      layers.GlobalAveragePooling2D(),
      layers.Dense(CLASSES),
    ]
  )


def convert(model, kind, calibration):
  """The plain converter's float16, dynamic-range int8 or full-int8 file."""
  import tensorflow as tf

  converter = tf.lite.TFLiteConverter.from_keras_model(model)
  converter.optimizations = [tf.lite.Optimize.DEFAULT]
  if kind == "f16":
    converter.target_spec.supported_types = [tf.float16]
  elif kind == "int8":
    converter.representative_dataset = lambda: (
      [calibration[i : i + 1].astype(np.float32)] for i in range(len(calibration))
    )
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    converter.inference_input_type = tf.int8
    converter.inference_output_type = tf.int8
  return converter.convert()


def write_inputs(tmp, n_images, width, seed):
  """model.keras, the three candidates and the PNG folder under `tmp`; {name: path}."""
  import tensorflow as tf

  rng = np.random.default_rng(seed)
  model = build_model(width, seed)
  paths = {"reference": os.path.join(tmp, "model.keras")}
  model.save(paths["reference"])
  calibration = rng.integers(0, 256, (100, SIZE, SIZE, 3), dtype=np.uint8)
  for name in CANDIDATES:
    paths[name] = os.path.join(tmp, f"model_{name}.tflite")
    with open(paths[name], "wb") as f:
      f.write(convert(model, name, calibration))
  paths["images"] = os.path.join(tmp, "images")
  labels = np.arange(n_images) % CLASSES
  for c in range(CLASSES):
    os.makedirs(os.path.join(paths["images"], f"class_{c}"))
  for i, label in enumerate(labels):
    image = rng.integers(0, 256, (SIZE, SIZE, 3), dtype=np.uint8)
    tf.io.write_file(
      os.path.join(paths["images"], f"class_{label}", f"{i:05d}.png"), tf.io.encode_png(image)
    )
  return paths


def run_audit(paths, out, num_threads):
  """Runs the audit; (wall seconds, [(index, name, seconds)], {stage name: [(task, seconds)]},
  exit code, output lines)."""
  return run_command(
    [
      f"--dataset=folder:{paths['images']}",
      f"--reference={paths['reference']}",
      *[f"--candidate={name}={paths[name]}" for name in CANDIDATES],
      "--executor=inline",
      "--deploy_encoding=plain",
      f"--num_threads={num_threads}",
      "--input_scaling_check=off",  # untrained weights on random images: near chance anyway
      f"--out={out}",
    ]
  )


WHY_STAGE = "why and repair"  # the audit's "why" section and its repairs


def run_or_exit(args):
  """`run_command(args)`, exiting with the audit's last 40 lines when it failed (an exit
  status other than 0 or 3, the gates' failure) or printed no stage."""
  wall, stages, tasks, code, lines = run_command(args)
  if code not in (0, 3) or not stages:
    print("\n".join(lines[-40:]))
    raise SystemExit(f"the audit failed (exit {code})")
  return wall, stages, tasks, code, lines


def print_stages(wall, stages):
  """Prints each stage of `run_command` with its seconds and share of `wall`; returns the
  seconds of `WHY_STAGE`."""
  for index, name, seconds in stages:
    print(f"  {f'{index} {name}':36s} {seconds:6.1f} s {seconds / wall:6.1%}")
  return sum(seconds for _, name, seconds in stages if name == WHY_STAGE)


def run_command(args):
  """Runs `eval/audit.py` with `args` in a subprocess; (wall seconds, [(index, name, seconds)]
  of its stages, {stage name: [(task, seconds)]}, exit code, output lines)."""
  cmd = [sys.executable, os.path.join(ROOT, "eval", "audit.py"), *args]
  env = dict(
    os.environ,
    PYTHONUNBUFFERED="1",
    PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])),
  )
  print("audit command:", " ".join(cmd[1:]), flush=True)
  start = time.perf_counter()
  proc = subprocess.Popen(
    cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
  )
  marks, lines, tasks, last = [], [], {}, None
  for line in proc.stdout:
    now = time.perf_counter() - start
    lines.append(line.rstrip("\n"))
    match = HEADER.match(line.strip())
    if match:
      marks.append((int(match.group(1)), match.group(3), now))
    if TASKS.match(line.strip()):
      last = now
    done = DONE.match(line.strip())
    if done and marks and last is not None:
      tasks.setdefault(marks[-1][1], []).append((done.group(2), now - last))
      last = now
  code = proc.wait()
  wall = time.perf_counter() - start
  ends = [t for _, _, t in marks[1:]] + [wall]
  stages = [(i, name, end - t) for (i, name, t), end in zip(marks, ends)]
  if marks:
    stages.insert(0, (0, "start-up (before the first stage)", marks[0][2]))
  return wall, stages, tasks, code, lines


def audited_files(paths, out):
  """[(label, .tflite path, predictions path)] of the four files the audit evaluated."""
  from tf_forget.artifacts import layout

  files = [
    (
      "dense float32",
      os.path.join(layout.tflite_root(out), "dense", "0", "float32.tflite"),
      layout.predictions(out, "dense", 0, "test"),
    )
  ]
  for name in CANDIDATES:
    files.append((f"user_{name}", paths[name], layout.predictions(out, f"user_{name}", 0, "test")))
  return files


def decoded_examples(out):
  """(`Examples` of the audited split, decoded by the audit's own data set; seconds of the first
  stream (with the data set's set-up) and of a second one)."""
  from tf_forget.artifacts import fileio
  from tf_forget.artifacts import layout
  from tf_forget.data import dataset_api
  from tf_forget.data import registry
  from tf_forget.evaluate import batched

  run = fileio.read_json(layout.run_file(out), "run.json")
  data = registry.get(run["dataset"], **run["dataset_options"])
  seconds = []
  for _ in range(2):
    start = time.perf_counter()
    examples = dataset_api.concatenate(
      list(data.batches(data.spec.eval_split, batched.DEFAULT_BATCH_SIZE))
    )
    seconds.append(time.perf_counter() - start)
  return examples, seconds


def in_memory_seconds(model_path, examples, out_path, num_threads, repeats):
  """Median in-loop seconds (its predictions' `seconds`) of the audit's evaluator,
  `tf_forget.evaluate.evaluate.evaluate_file` with its defaults, fed the decoded examples from
  memory."""
  from tf_forget.evaluate import evaluate

  n, times = len(examples), []
  for _ in range(repeats):
    meta, _ = evaluate.evaluate_file(
      model_path,
      lambda: (examples.take(slice(s, s + 1000)) for s in range(0, n, 1000)),
      out_path,
      "bench",
      num_threads=num_threads,
      overwrite=True,
    )
    times.append(meta["seconds"])
  return statistics.median(times)


def raw_seconds(model_path, images, batch_size, num_threads, runtime, repeats):
  """Median seconds of set_tensor / invoke / get_tensor over `images` (see the docstring): the
  model's inputs `[N, H, W, C]`, put in the file's layout and quantized outside the clock."""
  from tf_forget.data import input_layout
  from tf_forget.evaluate import interpreter

  with open(model_path, "rb") as f:
    data = f.read()
  batch_size = interpreter.input_layout_of(data).batch or batch_size  # a fixed batch: its own
  n = len(images)
  full, tail = (n // batch_size) * batch_size, n % batch_size
  jobs = []
  for size, chunks in ((batch_size, range(0, full, batch_size)), (tail, [full] if tail else [])):
    if not chunks:
      continue
    interp = interpreter.create(data, num_threads, runtime, batch_size=size)
    details = interp.get_input_details()[0]
    quantize = interpreter.InputQuantizer(details)
    layout = input_layout.of_details(details)  # e.g. [N, H, W] for a file without channels
    prepared = [quantize(layout.to_model(images[s : s + size])) for s in chunks]
    jobs.append((interp, details["index"], interp.get_output_details()[0]["index"], prepared))
    interp.set_tensor(details["index"], prepared[0])  # warm up: XNNPACK prepares on 1st invoke
    interp.invoke()

  def once():
    for interp, i_in, i_out, prepared in jobs:
      for x in prepared:
        interp.set_tensor(i_in, x)
        interp.invoke()
        interp.get_tensor(i_out)

  times = []
  for _ in range(repeats):
    start = time.perf_counter()
    once()
    times.append(time.perf_counter() - start)
  return statistics.median(times)


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--images", type=int, default=10_000)
  parser.add_argument("--width", type=int, default=32, help="filters of the first conv layers")
  parser.add_argument("--num_threads", type=int, default=2, help="as the audit's default")
  parser.add_argument("--repeats", type=int, default=3, help="raw interpreter rounds (median)")
  parser.add_argument("--seed", type=int, default=0)
  parser.add_argument("--keep", help="build and keep everything in this directory instead")
  parser.add_argument("--show_log", action="store_true", help="print the audit's output")
  args = parser.parse_args()
  from tf_forget.artifacts import predictions
  from tf_forget.evaluate import batched

  tmp = args.keep or tempfile.mkdtemp(prefix="user_audit_bench_")
  os.makedirs(tmp, exist_ok=True)
  try:
    start = time.perf_counter()
    paths = write_inputs(tmp, args.images, args.width, args.seed)
    print(f"inputs written in {time.perf_counter() - start:.1f} s: {tmp}", flush=True)
    out = os.path.join(tmp, "audit")
    wall, stages, tasks, code, lines = run_audit(paths, out, args.num_threads)
    if args.show_log:
      print("\n".join(lines))
    if code not in (0, 3) or not stages:
      print("\n".join(lines[-40:]))
      raise SystemExit(f"the audit failed (exit {code})")

    examples, decode = decoded_examples(out)
    images = examples.images
    rows = []
    for label, model_path, pred_path in audited_files(paths, out):
      meta = predictions.read(pred_path)["metadata"]
      raw = raw_seconds(
        model_path,
        images,
        batched.DEFAULT_BATCH_SIZE,
        args.num_threads,
        meta.get("runtime") or "xnnpack",
        args.repeats,
      )
      memory = in_memory_seconds(
        model_path, examples, os.path.join(tmp, "bench.npz"), args.num_threads, args.repeats
      )
      rows.append(
        (
          label,
          meta.get("runtime"),
          meta["batch_size"],
          meta["num_threads"],
          meta["seconds"],
          memory,
          raw,
        )
      )

    print(
      f"\naudit of 1 reference + {len(CANDIDATES)} candidates on {len(images)} images "
      f"{SIZE}x{SIZE}x3 (exit {code}): wall {wall:.1f} s"
    )
    print(f"{'stage':36s} {'seconds':>8s} {'share':>6s}")
    for index, name, seconds in stages:
      print(f"{f'{index} {name}':36s} {seconds:8.1f} {seconds / wall:6.1%}")
    evaluation = sum(s for _, name, s in stages if name == EVALUATION_STAGE)
    for task, seconds in tasks.get(EVALUATION_STAGE, []):
      print(
        f"  {EVALUATION_STAGE} task {task:20s} {seconds:8.1f} {seconds / evaluation:6.1%} "
        f"of the stage"
      )
    raw_total = sum(r[-1] for r in rows)
    print(
      f"\n{'file':16s} {'runtime':>8s} {'B':>4s} {'thr':>4s} {'audit s':>8s} "
      f"{'memory s':>9s} {'raw s':>8s} {'raw/audit':>10s} {'raw/memory':>11s}"
    )
    for label, runtime, b, threads, seconds, memory, raw in rows:
      print(
        f"{label:16s} {runtime or '?':>8s} {b:4d} {threads:4d} {seconds:8.2f} {memory:9.2f} "
        f"{raw:8.2f} {raw / seconds:10.2f} {raw / memory:11.2f}"
      )
    in_loop, memory = sum(r[-3] for r in rows), sum(r[-2] for r in rows)
    print(
      f"{'sum':16s} {'':8s} {'':4s} {'':4s} {in_loop:8.2f} {memory:9.2f} {raw_total:8.2f} "
      f"{raw_total / in_loop:10.2f} {raw_total / memory:11.2f}"
    )
    print(
      "(audit s: the evaluator's in-loop seconds in the audit, streaming the PNG folder; "
      "memory s: the same evaluator fed the decoded images from memory)"
    )
    ratio = raw_total / evaluation if evaluation else float("nan")
    print(
      f"\nevaluation stage {evaluation:.1f} s; raw batched interpreter {raw_total:.1f} s "
      f"(4 files x {len(images)} images); raw / evaluation stage = {ratio:.2f} "
      f"(target >= 0.8: {'OK' if ratio >= 0.8 else 'SLOW'}); evaluation stage / raw = "
      f"{evaluation / raw_total:.2f}x; raw / whole audit = {raw_total / wall:.2f}"
    )
    print(
      f"streaming the split once through the audit's data set (PNG decode): "
      f"{decode[0]:.1f} s the first time, {decode[1]:.1f} s again; the evaluation streams it "
      f"once per .tflite file and once for the Keras reference"
    )
    tflite_tasks = sum(s for task, s in tasks.get(EVALUATION_STAGE, []) if task.startswith("eval "))
    if tflite_tasks:
      print(
        f"its .tflite task(s) {tflite_tasks:.1f} s: raw / .tflite tasks = "
        f"{raw_total / tflite_tasks:.2f}; the rest of the stage (the Keras reference's own "
        f"predictions for the agreement table, stage bookkeeping) "
        f"{evaluation - tflite_tasks:.1f} s"
      )
  finally:
    if not args.keep:
      shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
  main()
