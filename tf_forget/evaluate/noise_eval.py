"""Evaluates `.tflite` files under l-inf bounded uniform noise (003 §4.1, App. D.1;
docs/spec.md §6.7).

Writes one `tf_forget.artifacts.noise_artifact` file per (variant, member): the schema, the
noise model and the example subset are documented there and in docs/artifacts/corruptions.md.
It is part of the evaluator because it runs `.tflite` files.

Lineage: the file is read once, hashed, and those bytes are run; the artifact records
`inputs` = {"tflite", "split", "protocol", "noise_scale"} (`noise_artifact.status`) and is
reused only if all equal the current ones.
"""

import time

import numpy as np
from scipy import special

from tf_forget.artifacts import errors
from tf_forget.artifacts import fileio
from tf_forget.artifacts import filesystem
from tf_forget.artifacts import hashing
from tf_forget.artifacts import layout
from tf_forget.artifacts import noise_artifact
from tf_forget.artifacts import predictions
from tf_forget.data import dataset_api
from tf_forget.evaluate import batched
from tf_forget.evaluate import evaluate
from tf_forget.evaluate import interpreter


def select_examples(dataset, protocol):
  """The evaluated examples: the eval split, or a seeded random subset sorted by id.

  The split is streamed and only the chosen examples are kept (CelebA's test split would not
  fit in memory whole).

  Returns:
    `dataset_api.Examples` with at most `protocol.examples` examples.
  """
  split = dataset.spec.eval_split
  n = dataset.num_examples(split)
  if n <= protocol.examples:
    return dataset.load(split)
  chosen = np.zeros(n, bool)
  chosen[np.random.default_rng(protocol.seed).choice(n, protocol.examples, replace=False)] = True
  parts, start = [], 0
  for batch in dataset.batches(split, 1024):
    keep = chosen[start : start + len(batch)]
    start += len(batch)
    if keep.any():
      parts.append(batch.take(keep))
  picked = dataset_api.concatenate(parts)
  return picked.take(np.argsort(np.asarray(picked.ids), kind="stable"))


def noise_scale(model_options, channels):
  """Raw-pixel units of one normalized-input unit per channel: 255 · std_c, float32 `[C]`."""
  std = (model_options or {}).get("std")
  std = np.broadcast_to(np.asarray(1.0 if std is None else std, np.float64), (channels,))
  return (255.0 * std).astype(np.float32)


def _inputs(tflite_path, tflite_sha256, split_id, protocol, scale):
  """The lineage `inputs` of a noise artifact (what it must record to be current)."""
  return {
    "tflite": evaluate.current_sha256(tflite_path, tflite_sha256),
    "split": split_id,
    "protocol": hashing.sha256_json(protocol.to_json()),
    "noise_scale": hashing.sha256_json([float(s) for s in scale]),
  }


def file_status(run_dir, meta, dataset, protocol):
  """`lineage.Status` of the noise artifact of one export (`meta`: its export JSON), unread.

  What `evaluate_population` would find: an executor's driver skips current files with it.
  """
  scale = noise_scale(_model_options(run_dir, meta), dataset.spec.image_shape[-1])
  split_id = predictions.split_identity(
    dataset.spec.name, dataset.spec.options, dataset.spec.eval_split
  )
  return noise_artifact.status(
    noise_artifact.path(run_dir, meta["variant"], int(meta["k"])),
    _inputs(meta["path"], meta["sha256"], split_id, protocol, scale),
  )


def evaluate_file(
  tflite_path,
  examples,
  protocol,
  scale,
  out_path,
  metadata=None,
  num_threads=interpreter.DEFAULT_NUM_THREADS,
  batch_size=batched.DEFAULT_BATCH_SIZE,
  tflite_sha256=None,
  split_id=None,
  log=None,
):
  """Runs one `.tflite` file on `examples` under every noise level and draw; writes `linf.npz`.

  Args:
    tflite_path: the file.
    examples: `dataset_api.Examples` (uint8 images `[N, H, W, C]`).
    protocol: a `noise_artifact.NoiseProtocol`.
    scale: float32 `[C]` from `noise_scale`.
    out_path: the artifact to write (atomically).
    metadata: extra JSON-ready metadata (variant, k, ...).
    num_threads, batch_size: interpreter threads and batch size.
    tflite_sha256: the sha256 the export JSON records (a file whose bytes differ is an
      `evaluate.EvaluationError`); the artifact records the sha256 of the bytes run.
    split_id: identity of the clean split the examples come from (`predictions.split_identity`).
    log: optional callable(str); told why an existing artifact is redone.

  Returns:
    (metadata dict, skipped bool).

  Raises:
    noise_artifact.NoiseError: bad protocol or unwritable output.
    interpreter.TfliteError: an unreadable file or a shape mismatch.
  """
  protocol.check()
  inputs = _inputs(tflite_path, tflite_sha256, split_id, protocol, scale)
  sha = inputs["tflite"]
  state = noise_artifact.status(out_path, inputs)
  if state:
    return noise_artifact.read(out_path)["metadata"], True
  if log and state.reason != "missing":
    label = "/".join(str((metadata or {}).get(key, "?")) for key in ("variant", "k"))
    log(f"redo {label} l-inf noise: {state.reason}")
  data = interpreter.read_model(tflite_path)  # the bytes hashed are the bytes run
  if hashing.sha256_bytes(data) != sha:
    raise evaluate.EvaluationError(f"{tflite_path} changed while it was being evaluated")
  runner = evaluate.runner_for(
    data,
    tflite_path,
    batch_size,
    num_threads,
    runtime="auto",
    output_index=(metadata or {}).get("output_index"),
  )
  runner.check_images(examples.images)
  raw = np.asarray(examples.images, np.float32)
  eps = np.asarray(protocol.eps, np.float64)
  n, draws = len(raw), protocol.draws
  top1 = np.empty([eps.size, draws, n], np.int32)
  soft = np.empty([eps.size, draws, n, runner.num_classes], np.float16)
  start = time.time()
  # Draw d is one U(-1, 1) field (`default_rng([seed, d])`) scaled by every level's ε: the
  # common random numbers of the artifact doc, generated once per draw, not once per level.
  for d in range(draws):
    unit = np.random.default_rng([protocol.seed, d]).uniform(-1.0, 1.0, size=raw.shape)
    for l, e in enumerate(eps):
      if e == 0 and d > 0:
        top1[l, d], soft[l, d] = top1[l, 0], soft[l, 0]
        continue
      scores = runner.run(raw + (e * unit * scale).astype(np.float32))
      top1[l, d] = np.argmax(scores, axis=1)
      soft[l, d] = special.softmax(scores.astype(np.float64), axis=-1)
  seconds = time.time() - start
  meta = noise_artifact.write(
    out_path,
    eps,
    examples.ids,
    examples.labels,
    top1,
    soft,
    dict(
      metadata or {},
      protocol=protocol.to_json(),
      tflite=filesystem.abspath(tflite_path),
      tflite_sha256=sha,
      inputs=inputs,
      noise_scale=[float(s) for s in scale],
      runtime=runner.runtime,
      runtime_fallback=runner.fallback_reason,
      seconds=seconds,
      top1_accuracy=[float(np.mean(top1[l] == examples.labels)) for l in range(eps.size)],
    ),
  )
  return meta, False


def _model_options(run_dir, meta):
  member = layout.member_metadata(run_dir, meta["member_variant"], meta["k"])
  if filesystem.exists(member):
    try:
      return fileio.read_json(member, "member metadata").get("model_options") or {}
    except errors.ReadError as e:
      raise evaluate.EvaluationError(str(e)) from e
  return meta.get("source", {}).get("model_options") or {}


def evaluate_population(
  run_dir,
  dataset,
  protocol,
  variants=None,
  num_threads=interpreter.DEFAULT_NUM_THREADS,
  batch_size=batched.DEFAULT_BATCH_SIZE,
  log=None,
  redo_log=None,
  files=None,
):
  """Evaluates every plain-encoded export of `run_dir` under the noise protocol.

  Sparse twins are left out: their predictions equal their plain twin's (checked on the clean
  split by `tf_forget.evaluate.population_eval`), so noise adds nothing about the encoding.

  Args:
    run_dir: run directory with `tflite/` exports.
    dataset: the members' `dataset_api.Dataset`.
    protocol: a `noise_artifact.NoiseProtocol`.
    variants: optional audited variant names to restrict to.
    num_threads, batch_size: interpreter threads and batch size.
    log: optional callable(str), one line per file.
    redo_log: optional callable(str) for "redo ..." lines (default: `log`).
    files: optional iterable of (variant, k) to restrict to (robustness members, or one
      executor task's share).

  Returns:
    list of the artifacts' metadata dicts.

  Raises:
    noise_artifact.NoiseError, evaluate.EvaluationError, interpreter.TfliteError (one line).
  """
  protocol.check()
  exports = [
    m
    for m in evaluate.list_exports(run_dir)
    if m["encoding"] == "plain" and (variants is None or m["variant"] in set(variants))
  ]
  if files is not None:
    wanted = {(str(v), int(k)) for v, k in files}
    exports = [m for m in exports if (m["variant"], int(m["k"])) in wanted]
  if not exports:
    raise noise_artifact.NoiseError(f"no plain export to evaluate under noise in {run_dir}")
  examples = select_examples(dataset, protocol)
  channels = dataset.spec.image_shape[-1]
  split_id = predictions.split_identity(
    dataset.spec.name, dataset.spec.options, dataset.spec.eval_split
  )
  metas = []
  for meta in exports:
    k = int(meta["k"])
    out, skipped = evaluate_file(
      meta["path"],
      examples,
      protocol,
      noise_scale(_model_options(run_dir, meta), channels),
      noise_artifact.path(run_dir, meta["variant"], k),
      metadata={
        "variant": meta["variant"],
        "member_variant": meta["member_variant"],
        "k": k,
        "format": meta["format"],
        "encoding": meta["encoding"],
        "dataset": dataset.spec.name,
        **({"output_index": meta["output_index"]} if meta.get("output_index") is not None else {}),
      },
      num_threads=num_threads,
      batch_size=batch_size,
      tflite_sha256=meta["sha256"],
      split_id=split_id,
      log=redo_log or log,
    )
    metas.append(out)
    if log:
      acc = out["top1_accuracy"]
      log(
        f"{'skip' if skipped else 'noise'} {meta['variant']}/{k}: top-1 {acc[0]:.4f} at "
        f"eps {protocol.eps[0]:g} -> {acc[-1]:.4f} at eps {protocol.eps[-1]:g}"
      )
  return metas
