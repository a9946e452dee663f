"""Evaluates exported `.tflite` files on data splits and writes predictions.

Inputs are any iterable of `tf_forget.data.base.Examples` batches (a registry data set's
`batches(split, B)`, or a corrupted split from a later stage): the stream is re-cut into
batches of exactly B (`rebatch`) so that only the very last batch is padded
(`batched.BatchedRunner`). Every number comes from running the exported file through the LiteRT
runtime (issue #3); int8 outputs are dequantized before top-k (SPEC §1.2).

Outputs: `eval.predictions` files, one per (variant, member, split). An existing file for the
same `.tflite` (sha256 recorded in its metadata) is skipped on re-run.
"""

import json
import os
import time

import numpy as np

from eval import batched
from eval import interpreter
from eval import predictions
from tf_forget.data import base
from tflite_export import formats

TFLITE_SCHEMA = "tf_forget.tflite/1"  # tflite_export.export.SCHEMA (not imported: no TF here)
FAILURE_SCHEMA = "tf_forget.tflite_failure/1"  # tflite_export.export.FAILURE_SCHEMA


class EvaluationError(ValueError):
  """A run, export or split that cannot be evaluated (one-line message)."""


def rebatch(batches, batch_size):
  """Re-cuts a stream of `Examples` into `Examples` of exactly `batch_size` (last may be less).

  Batches that already have the right size pass through without a copy.
  """
  pending = []
  pending_n = 0
  for batch in batches:
    if not pending and len(batch) == batch_size:
      yield batch
      continue
    pending.append(batch)
    pending_n += len(batch)
    if pending_n >= batch_size:
      merged = base.concatenate(pending)
      start = 0
      while pending_n - start >= batch_size:
        yield merged.take(slice(start, start + batch_size))
        start += batch_size
      pending = [merged.take(slice(start, None))] if start < pending_n else []
      pending_n -= start
  if pending_n:
    yield base.concatenate(pending)


def run(runner, batches):
  """Runs `runner` over a stream of `Examples`.

  Args:
    runner: a `batched.BatchedRunner`.
    batches: iterable of `Examples`.

  Returns:
    (ids int64 [N], labels int64 [N], scores float32 [N, C]).

  Raises:
    interpreter.TfliteError: image shape does not match the model input.
    EvaluationError: no examples.
  """
  ids, labels, raw = [], [], []
  for batch in rebatch(batches, runner.batch_size):
    if len(batch) == 0:
      continue
    raw.append(runner.run_raw(batch.images))
    ids.append(np.asarray(batch.ids, np.int64))
    labels.append(np.asarray(batch.labels, np.int64))
  if not raw:
    raise EvaluationError("no examples to evaluate")
  return (np.concatenate(ids), np.concatenate(labels),
          runner.dequantize(np.concatenate(raw)))


def evaluate_file(tflite_path, batches, out_path, split, metadata=None,
                  batch_size=batched.DEFAULT_BATCH_SIZE,
                  num_threads=interpreter.DEFAULT_NUM_THREADS, save_logits=True,
                  overwrite=False, tflite_sha256=None, image_shape=None, tail="resize",
                  runtime="auto"):
  """Evaluates one `.tflite` file on one split and writes its predictions file.

  Args:
    tflite_path: the `.tflite` file.
    batches: a zero-argument callable returning an iterable of `Examples` (called only if the
      evaluation is not skipped), or an iterable.
    out_path: predictions file to write.
    split: split name recorded in the metadata (`test`, `glass_blur@3`).
    metadata: extra JSON-ready metadata (variant, k, ...).
    batch_size, num_threads: see `batched.BatchedRunner`.
    save_logits: store dequantized scores too.
    overwrite: re-evaluate even if `out_path` is complete.
    tflite_sha256: the file's sha256 (from its export JSON) to match existing predictions.
    image_shape: the data's (H, W, C), checked against the model input before running.
    tail: last-partial-batch policy (`batched.TAIL_POLICIES`).
    runtime: "auto" (default: XNNPACK, the built-in kernels if the delegate refuses the
      model, as on a device; issue #10), "xnnpack" or "builtin". The path that produced the
      predictions is recorded as `runtime`, a fallback's one-line reason as
      `runtime_fallback`.

  Returns:
    (metadata dict of the predictions file, skipped bool).

  Raises:
    interpreter.TfliteError: unreadable / invalid file or shape mismatch.
    EvaluationError: nothing to evaluate or the output cannot be written.
  """
  if not overwrite and predictions.is_complete(out_path, tflite_sha256):
    return predictions.read(out_path)["metadata"], True
  runner = batched.BatchedRunner(tflite_path, batch_size, num_threads, runtime=runtime,
                                 tail=tail)
  if image_shape is not None and tuple(image_shape) != runner.input_shape:
    raise interpreter.TfliteError(
        f"{tflite_path}: model input shape {runner.input_shape} does not match the data "
        f"set's image shape {tuple(image_shape)}")
  start = time.time()
  ids, labels, scores = run(runner, batches() if callable(batches) else batches)
  seconds = time.time() - start
  meta = dict(metadata or {}, split=split, tflite=os.path.abspath(tflite_path),
              tflite_sha256=tflite_sha256, batch_size=batch_size, num_threads=num_threads,
              runtime=runner.runtime, runtime_fallback=runner.fallback_reason,
              input_dtype=runner.input_dtype.name,
              output_dtype=runner.output_dtype.name, seconds=seconds,
              examples_per_second=len(ids) / seconds if seconds > 0 else None,
              top1_accuracy=float(np.mean(np.argmax(scores, axis=1) == labels)))
  try:
    predictions.write(out_path, ids, labels, scores, meta, save_logits)
  except OSError as e:
    raise EvaluationError(f"cannot write {out_path}: {' '.join(str(e).split())[:200]}") from e
  except Exception as e:  # pylint: disable=broad-except
    # tf.errors.OpError (gfile) without importing TensorFlow here.
    if type(e).__module__.startswith("tensorflow"):
      raise EvaluationError(f"cannot write {out_path}: {' '.join(str(e).split())[:200]}") from e
    raise
  return predictions.read(out_path)["metadata"], False


def list_exports(run_dir):
  """Finished exports of a run: sorted list of their JSON dicts (with key `path`).

  Reads `<run>/tflite/<member variant>/<k>/<stem>.json` (docs/artifacts/tflite.md).

  Raises:
    EvaluationError: no `tflite/` directory or no finished export.
  """
  root = os.path.join(run_dir, "tflite")
  if not os.path.isdir(root):
    raise EvaluationError(f"{run_dir} has no tflite/ directory (run export_population first)")
  found = []
  for member_variant in sorted(os.listdir(root)):
    vdir = os.path.join(root, member_variant)
    if not os.path.isdir(vdir):
      continue
    for k in sorted(os.listdir(vdir), key=lambda s: (not s.isdigit(), int(s) if s.isdigit()
                                                     else 0)):
      kdir = os.path.join(vdir, k)
      if not (k.isdigit() and os.path.isdir(kdir)):
        continue
      for name in sorted(os.listdir(kdir)):
        if not name.endswith(".json") or ".tmp-" in name:
          continue
        with open(os.path.join(kdir, name)) as f:
          meta = json.load(f)
        if meta.get("schema") != TFLITE_SCHEMA:
          continue
        meta["path"] = os.path.join(kdir, name[:-len(".json")] + ".tflite")
        found.append(meta)
  if not found:
    raise EvaluationError(f"{run_dir} has no finished export under tflite/")
  order = {name: i for i, name in enumerate(formats.FORMATS)}
  return sorted(found, key=lambda m: (m["member_variant"] != formats.DENSE, m["member_variant"],
                                      int(m["k"]), order.get(m["format"], len(order)),
                                      m["encoding"]))


def list_failures(run_dir):
  """Recorded failed conversions (sparse twins, issue #10): list of their JSON dicts.

  Reads `<run>/tflite/<member variant>/<k>/<stem>.failed.json`; [] if there are none.
  """
  root = os.path.join(run_dir, "tflite")
  found = []
  if not os.path.isdir(root):
    return found
  for dirpath, _, names in sorted(os.walk(root)):
    for name in sorted(names):
      if name.endswith(".failed.json") and ".tmp-" not in name:
        with open(os.path.join(dirpath, name)) as f:
          record = json.load(f)
        if record.get("schema") == FAILURE_SCHEMA:
          found.append(record)
  return found
