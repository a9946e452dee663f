"""Evaluates exported `.tflite` files on data splits and writes predictions.

Inputs are any iterable of `tf_forget.data.dataset_api.Examples` batches (a registry data set's
`batches(split, B)`, or a corrupted split from a later stage): the stream is re-cut into
batches of exactly B (`rebatch`) so that only the very last batch is padded
(`batched.BatchedRunner`). Every number comes from running the exported file through the LiteRT
runtime; int8 outputs are dequantized before top-k (docs/spec.md §1.2).

Outputs: `eval.predictions` files, one per (variant, member, split). Lineage: the
file is read once, its bytes are hashed and the interpreter runs those same bytes; the
predictions record that sha256 and the input split's identity as `inputs`
(`tf_forget.artifacts.predictions`). An existing file is reused only if it records the sha256
of the current `.tflite` bytes (which must also be the export JSON's) and the same split, and
holds logits if they are asked for; otherwise it is redone and the caller's `log` says why
("redo prune_0.9/0 test: its .tflite changed since it was evaluated"). Batch size and tail
policy are not part of the lineage: rows do not interact, so they do not change the results
(tests/evaluate/batched_test.py).
"""

import os
import time

import numpy as np

from tf_forget.artifacts import errors
from tf_forget.artifacts import filesystem
from tf_forget.artifacts import hashing
from tf_forget.artifacts import layout
from tf_forget.artifacts import names
from tf_forget.artifacts import predictions
from tf_forget.artifacts import tflite_failure
from tf_forget.artifacts import tflite_json
from tf_forget.data import dataset_api
from tf_forget.evaluate import batched
from tf_forget.evaluate import interpreter


class EvaluationError(errors.Error):
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
      merged = dataset_api.concatenate(pending)
      start = 0
      while pending_n - start >= batch_size:
        yield merged.take(slice(start, start + batch_size))
        start += batch_size
      pending = [merged.take(slice(start, None))] if start < pending_n else []
      pending_n -= start
  if pending_n:
    yield dataset_api.concatenate(pending)


# A split whose decoded images fit in this many bytes is decoded once per task and replayed from
# memory for every other file (10,000 32x32 RGB images are 31 MB; ImageNet's 50,000 at 224x224
# are 7.5 GB and stream from disk for every file).
REPLAY_BYTES = 512 * 2**20


def replayable(stream, budget=REPLAY_BYTES):
  """`stream` (callable(batch_size) -> iterable of `Examples`) that, once fully read at a batch
  size, replays those batches from memory instead of reading (decoding) the split again.

  A stream whose images exceed `budget` bytes is not kept: every call reads it again. The
  replayed batches are the same objects in the same order, so results cannot differ.
  """
  kept = {}

  def replay(batch_size):
    if batch_size in kept:
      yield from kept[batch_size]
      return
    recorded, size = [], 0
    for batch in stream(batch_size):
      if recorded is not None:
        size += batch.images.nbytes
        if size <= budget:
          recorded.append(batch)
        else:
          recorded = None
      yield batch
    if recorded is not None:
      kept[batch_size] = recorded

  return replay


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
  return (np.concatenate(ids), np.concatenate(labels), runner.dequantize(np.concatenate(raw)))


def check_finite(scores, what, examples="examples"):
  """Raises `EvaluationError` when a model's outputs are NaN or infinite on any example: its
  top-1, flips and KL would be numbers of no meaning (argmax of NaN is class 0).

  Args:
    scores: float `[N, C]` outputs.
    what: the model, as the error names it ("dense/0 test: /run/tflite/.../float32.tflite").
    examples: what the N rows are, for the error ("test examples").
  """
  bad = int(np.count_nonzero(~np.isfinite(np.asarray(scores, np.float64)).all(axis=1)))
  if bad:
    raise EvaluationError(
      f"{what} gives NaN or infinite outputs on {bad} of {len(scores)} {examples}: no "
      "accuracy can be reported for it; check the model, or leave it out of the audit"
    )


def current_sha256(tflite_path, expected=None):
  """sha256 of a `.tflite` file's bytes now (memoized per process by size / mtime / inode /
  ctime).

  Args:
    tflite_path: the file.
    expected: the sha256 its export JSON records, if any.

  Raises:
    interpreter.TfliteError: the file cannot be read.
    EvaluationError: the bytes are not the ones the export JSON records (the file changed
      after it was exported; re-running the export restores it).
  """
  try:
    sha = hashing.file_sha256(tflite_path)
  except OSError as e:
    raise interpreter.TfliteError(f"cannot read {tflite_path}: {errors.one_line(e)}") from e
  if expected is not None and sha != expected:
    raise EvaluationError(
      f"{tflite_path} changed since it was exported (sha256 {sha[:12]} is "
      f"not its JSON's {expected[:12]}): run the export again"
    )
  return sha


def runner_for(data, tflite_path, *args, **kwargs):
  """A `batched.BatchedRunner` on the bytes `data` read from `tflite_path` (errors name it)."""
  try:
    return batched.BatchedRunner(data, *args, **kwargs)
  except interpreter.TfliteError as e:
    raise interpreter.TfliteError(str(e).replace("model bytes", tflite_path, 1)) from e


def evaluate_file(
  tflite_path,
  batches,
  out_path,
  split,
  metadata=None,
  batch_size=batched.DEFAULT_BATCH_SIZE,
  num_threads=interpreter.DEFAULT_NUM_THREADS,
  save_logits=True,
  overwrite=False,
  tflite_sha256=None,
  image_shape=None,
  tail="resize",
  runtime="auto",
  split_id=None,
  log=None,
  output_index=None,
):
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
    overwrite: re-evaluate even if `out_path` is current.
    tflite_sha256: the sha256 the export JSON records; a file whose bytes differ is an
      `EvaluationError` (nothing is evaluated). The predictions record the sha256 of the bytes
      actually run, whatever is passed here.
    split_id: the input split's identity (`predictions.split_identity`), recorded in `inputs`
      and required equal for reuse.
    image_shape: the data's (H, W, C), checked against the model input before running.
    tail: last-partial-batch policy (`batched.TAIL_POLICIES`).
    runtime: "auto" (default: XNNPACK, the built-in kernels if the delegate refuses the
      model, as on a device), "xnnpack" or "builtin". The path that produced the
      predictions is recorded as `runtime`, a fallback's one-line reason as
      `runtime_fallback`.
    log: optional callable(str); told why an existing file is redone.
    output_index: the class-score output of a file with several (its export JSON's
      `output_index`, a user's file; `batched.BatchedRunner`).

  Returns:
    (metadata dict of the predictions file, skipped bool).

  Raises:
    interpreter.TfliteError: unreadable / invalid file or shape mismatch.
    EvaluationError: nothing to evaluate, a file that is not its export JSON's, outputs that
      are NaN or infinite on some example (`check_finite`; nothing is written), or the output
      cannot be written.
  """
  sha = current_sha256(tflite_path, tflite_sha256)
  inputs = {"tflite": sha, "split": split_id}
  state = predictions.status(out_path, inputs, need_logits=save_logits)
  if state and not overwrite:
    return predictions.read(out_path)["metadata"], True
  if log and not state and state.reason != "missing":
    label = "/".join(str((metadata or {}).get(key, "?")) for key in ("variant", "k"))
    log(f"redo {label} {split}: {state.reason}")
  data = interpreter.read_model(tflite_path)  # the bytes hashed are the bytes run
  sha = hashing.sha256_bytes(data)
  if sha != inputs["tflite"]:
    raise EvaluationError(f"{tflite_path} changed while it was being evaluated")
  runner = runner_for(
    data,
    tflite_path,
    batch_size,
    num_threads,
    runtime=runtime,
    tail=tail,
    output_index=output_index,
  )
  if image_shape is not None and tuple(image_shape) != runner.input_shape:
    raise interpreter.TfliteError(
      f"{tflite_path}: model input shape {runner.input_shape} does not match the data "
      f"set's image shape {tuple(image_shape)}"
    )
  start = time.time()
  ids, labels, scores = run(runner, batches() if callable(batches) else batches)
  seconds = time.time() - start
  label = "/".join(str((metadata or {}).get(key, "?")) for key in ("variant", "k"))
  check_finite(scores, f"{label} {split}: {tflite_path}", f"{split} examples")
  meta = dict(
    metadata or {},
    split=split,
    tflite=filesystem.abspath(tflite_path),
    tflite_sha256=sha,
    inputs=inputs,
    batch_size=batch_size,
    num_threads=num_threads,
    runtime=runner.runtime,
    runtime_fallback=runner.fallback_reason,
    input_dtype=runner.input_dtype.name,
    output_dtype=runner.output_dtype.name,
    seconds=seconds,
    examples_per_second=len(ids) / seconds if seconds > 0 else None,
    top1_accuracy=float(np.mean(np.argmax(scores, axis=1) == labels)),
  )
  predictions.write(out_path, ids, labels, scores, meta, save_logits)  # errors.WriteError
  return predictions.read(out_path)["metadata"], False


def list_exports(run_dir):
  """Finished exports of a run: sorted list of their JSON dicts (with key `path`).

  Reads `<run>/tflite/<member variant>/<k>/<stem>.json` (docs/artifacts/tflite.md).

  Raises:
    EvaluationError: no `tflite/` directory or no finished export.
  """
  root = layout.tflite_root(run_dir)
  if not filesystem.isdir(root):
    raise EvaluationError(f"{run_dir} has no tflite/ directory (run export_population first)")
  found = []
  for _, _, kdir in layout.walk(root):
    for name in filesystem.listdir(kdir):
      if not tflite_json.is_export_json(name):
        continue
      try:
        meta = tflite_json.read(os.path.join(kdir, name))
      except errors.SchemaError:
        continue
      except errors.ReadError as e:
        raise EvaluationError(f"{e}: run the export again") from e
      meta["path"] = os.path.join(kdir, name[: -len(".json")] + ".tflite")
      found.append(meta)
  if not found:
    raise EvaluationError(f"{run_dir} has no finished export under tflite/")
  order = {name: i for i, name in enumerate(names.FORMAT_NAMES)}
  return sorted(
    found,
    key=lambda m: (
      m["member_variant"] != names.DENSE,
      m["member_variant"],
      int(m["k"]),
      order.get(m["format"], len(order)),
      m["encoding"],
    ),
  )


def list_failures(run_dir):
  """Recorded failed conversions (sparse twins): list of their JSON dicts.

  Reads `<run>/tflite/<member variant>/<k>/<stem>.failed.json`; [] if there are none.
  """
  root = layout.tflite_root(run_dir)
  found = []
  if not filesystem.isdir(root):
    return found
  for dirpath, _, filenames in sorted(filesystem.walk(root)):
    for name in filenames:
      if name.endswith(".failed.json") and ".tmp-" not in name:
        try:
          found.append(tflite_failure.read(os.path.join(dirpath, name)))
        except errors.ReadError:
          continue  # a torn record (or another schema's): the next export writes it again
  return found
