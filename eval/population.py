"""Evaluates every exported `.tflite` file of a population run, then checks agreement.

    <run>/predictions/<variant>/<k>/<split>.npz        eval.predictions, one per file x split
    <run>/predictions_keras/<member>/<k>/<split>.npz   the Keras models' own predictions
    <run>/eval/agreement/<split>.json                  agreement table (eval.agreement)
    <run>/eval/twin_runtime/<variant>/<k>/<split>.<runtime>.npz   plain twin re-run on a sparse
                                                       file's fallback path (issue #10)

(docs/artifacts/predictions.md). Files run as on a device (`runtime="auto"`: XNNPACK, else the
built-in kernels; issue #10). Every sparse-encoded file is checked against its plain twin
(`agreement.compare_twin_files`): a mismatch, or a sparse conversion that failed at export, is
a one-line entry of the table's `twin_failures`, never silent. The data set is the one the
members were trained on (from the export JSON) unless another registry data set is given; its
image shape must match every file's input, checked before anything is written. Custom streams
(corrupted splits) are passed as `split_batches`: name -> callable(batch_size) returning an
iterable of `Examples`.
"""

import os

from eval import agreement
from eval import batched
from eval import evaluate
from eval import interpreter
from eval import predictions
from tf_forget.data import registry as data_registry
from tf_forget.io import atomic

AGREEMENT_SCHEMA = "tf_forget.agreement/1"


def _member_key(meta):
  return meta["member_variant"], int(meta["k"])


def _output_scale(meta):
  """The int8 output scale of an export (None for float outputs)."""
  out = meta["io"]["outputs"][0]
  return out["scale"][0] if out["dtype"] in ("int8", "uint8") and out["scale"] else None


def _diagnose_runtime(run_dir, row, twin_meta, split, stream, batch_size, num_threads,
                      output_scale, overwrite, tail):
  """Tells a runtime-path difference from an encoding difference in a failed twin check.

  When the sparse file ran on another runtime path than its plain twin (XNNPACK refused it),
  the plain twin is also run on the sparse file's path (`<run>/eval/twin_runtime/<plain
  variant>/<k>/<split>.<runtime>.npz`) and compared: `vs_plain_twin` gains `same_runtime`
  (that comparison) and `encoding_exact`, and its `reason` says which one differs. The twin
  check itself stays failed: on a device the two files give different predictions.
  """
  twin = row["vs_plain_twin"]
  runtime = twin["runtime"]
  if runtime is None or runtime == twin["plain_runtime"]:
    twin["encoding_exact"] = False
    return
  k = row["k"]
  out = os.path.join(run_dir, "eval", "twin_runtime", twin_meta["variant"], str(k),
                     f"{split}.{runtime}.npz")
  evaluate.evaluate_file(
      twin_meta["path"], lambda: stream(batch_size), out, split,
      metadata={"variant": twin_meta["variant"], "member_variant": twin_meta["member_variant"],
                "k": k, "format": twin_meta["format"], "encoding": twin_meta["encoding"]},
      batch_size=batch_size, num_threads=num_threads, overwrite=overwrite,
      tflite_sha256=twin_meta["sha256"], tail=tail, runtime=runtime)
  same = agreement.compare_twin_files(row["path"], out, output_scale)
  twin["same_runtime"] = same
  twin["encoding_exact"] = same["equal"]
  if same["equal"]:
    twin["reason"] += (f" ({runtime} vs {twin['plain_runtime']}; on {runtime} the plain twin "
                       f"gives equal predictions: the runtime path differs, not the encoding)")
  else:
    twin["reason"] += f" (also on the same runtime {runtime}: {same['reason']})"


def check_shapes(exports, image_shape):
  """Raises `interpreter.TfliteError` for the first export whose input is not `image_shape`."""
  for meta in exports:
    shape = tuple(meta["io"]["inputs"][0]["shape"][1:])
    if shape != tuple(image_shape):
      raise interpreter.TfliteError(
          f"{meta['path']}: model input shape {shape} does not match the data set's image "
          f"shape {tuple(image_shape)}")


def keras_predictions(run_dir, member_variant, k, split, batches, overwrite=False):
  """Path of the Keras model's predictions of member k on `split` (computed once, cached)."""
  out = os.path.join(run_dir, "predictions_keras", member_variant, str(k), f"{split}.npz")
  if not overwrite and predictions.is_complete(out):
    return out
  from tflite_export import export  # pylint: disable=g-import-not-at-top  (TensorFlow)
  model, _ = export.load_member(run_dir, member_variant, k)
  ids, labels, scores = agreement.keras_scores(model, batches())
  try:
    predictions.write(out, ids, labels, scores,
                      {"variant": f"keras:{member_variant}", "member_variant": member_variant,
                       "k": k, "split": split, "runtime": "tf_keras"})
  except Exception as e:  # pylint: disable=broad-except  (OSError, tf.errors.OpError)
    raise evaluate.EvaluationError(f"cannot write {out}: {' '.join(str(e).split())[:200]}") from e
  return out


def evaluate_population(run_dir, dataset=None, splits=None, split_batches=None,
                        batch_size=batched.DEFAULT_BATCH_SIZE,
                        num_threads=interpreter.DEFAULT_NUM_THREADS, save_logits=True,
                        check_keras=True, variants=None, overwrite=False, log=None,
                        tail="resize"):
  """Evaluates all finished exports of `run_dir` on the given splits.

  Args:
    run_dir: population run directory with `tflite/` exports.
    dataset: a `base.Dataset`; default: the members' data set from the export JSON.
    splits: data split names; default `[dataset.spec.eval_split]` (when no `split_batches`).
    split_batches: extra streams, name -> callable(batch_size) -> iterable of `Examples`.
    batch_size, num_threads: interpreter batch size and threads.
    save_logits: store dequantized scores in the predictions files.
    check_keras: also compare with the Keras models (cached in `predictions_keras/`).
    variants: optional iterable of audited variant names to restrict to.
    overwrite: recompute existing predictions.
    log: optional callable(str) for progress lines.
    tail: last-partial-batch policy (`batched.TAIL_POLICIES`).

  Returns:
    {split: agreement table dict} (also written to `<run>/eval/agreement/<split>.json`).

  Raises:
    evaluate.EvaluationError, interpreter.TfliteError, data errors: nothing is written for
      the failing (file, split).
  """
  exports = evaluate.list_exports(run_dir)
  if variants is not None:
    wanted = set(variants)
    exports = [m for m in exports if m["variant"] in wanted]
    if not exports:
      raise evaluate.EvaluationError(f"no export of variants {sorted(wanted)} in {run_dir}")
  if dataset is None:
    source = exports[0]["source"]
    dataset = data_registry.get(source["dataset"], **(source.get("dataset_options") or {}))
  check_shapes(exports, dataset.spec.image_shape)
  failures = [f for f in evaluate.list_failures(run_dir)
              if variants is None or f["variant"] in set(variants)]
  streams = {}
  for split in (splits if splits is not None else
                ([] if split_batches else [dataset.spec.eval_split])):
    dataset.check_split(split)
    streams[split] = (lambda b, s=split: dataset.batches(s, b))
  streams.update(split_batches or {})
  if not streams:
    raise evaluate.EvaluationError("no split to evaluate")

  tables = {}
  for split, stream in streams.items():
    rows = []
    for meta in exports:
      member_variant, k = _member_key(meta)
      out = predictions.path(run_dir, meta["variant"], k, split)
      pmeta, skipped = evaluate.evaluate_file(
          meta["path"], lambda st=stream: st(batch_size), out, split,
          metadata={"variant": meta["variant"], "member_variant": member_variant, "k": k,
                    "format": meta["format"], "encoding": meta["encoding"],
                    "dataset": dataset.spec.name},
          batch_size=batch_size, num_threads=num_threads, save_logits=save_logits,
          overwrite=overwrite, tflite_sha256=meta["sha256"],
          image_shape=dataset.spec.image_shape, tail=tail)
      if log:
        log(f"{'skip' if skipped else 'eval'} {meta['variant']}/{k} {split}: top-1 "
            f"{pmeta['top1_accuracy']:.4f} ({pmeta['examples_per_second'] or 0:.0f} img/s)")
      rows.append({"variant": meta["variant"], "format": meta["format"],
                   "encoding": meta["encoding"], "runtime": pmeta.get("runtime"),
                   "member_variant": member_variant, "k": k, "path": out,
                   "top1_accuracy": pmeta["top1_accuracy"]})
    by_member = {(_member_key(m), m["format"], m["encoding"]): r
                 for m, r in zip(exports, rows)}
    twin_failures = []
    for meta, row in zip(exports, rows):
      if meta["encoding"] != "plain":
        twin = by_member.get((_member_key(meta), meta["format"], "plain"))
        if twin is None:
          row["vs_plain_twin"] = None
          twin_failures.append({"variant": meta["variant"], "k": row["k"],
                                "reason": "no plain twin evaluated to compare with"})
        else:
          row["vs_plain_twin"] = agreement.compare_twin_files(row["path"], twin["path"],
                                                              _output_scale(meta))
          row["vs_plain_twin"]["encoding_exact"] = row["vs_plain_twin"]["equal"]
          if not row["vs_plain_twin"]["equal"]:
            twin_meta = exports[rows.index(twin)]
            _diagnose_runtime(run_dir, row, twin_meta, split, stream, batch_size, num_threads,
                              _output_scale(meta), overwrite, tail)
            twin_failures.append({"variant": meta["variant"], "k": row["k"],
                                  "reason": row["vs_plain_twin"]["reason"]})
      ref = by_member.get((_member_key(meta), "float32", "plain"))
      if ref is not None:
        row["vs_float32_tflite"] = agreement.compare_files(row["path"], ref["path"])
      if check_keras:
        kpath = keras_predictions(run_dir, row["member_variant"], row["k"], split,
                                  lambda st=stream: st(batch_size), overwrite)
        row["vs_keras"] = agreement.compare_files(row["path"], kpath)
    table = {
        "schema": AGREEMENT_SCHEMA,
        "split": split,
        "dataset": dataset.spec.name,
        "rows": rows,
        "summary_vs_float32_tflite": agreement.summarize(rows, "vs_float32_tflite"),
        "summary_vs_keras": agreement.summarize(rows, "vs_keras") if check_keras else {},
        "summary_vs_plain_twin": agreement.summarize(rows, "vs_plain_twin"),
        "twin_failures": twin_failures + [
            {"variant": f["variant"], "k": f["k"], "reason": f"sparse conversion failed, "
             f"plain file kept: {f['reason']}"} for f in failures],
    }
    table_path = os.path.join(run_dir, "eval", "agreement", f"{split}.json")
    try:
      atomic.write_json(table_path, table)
    except Exception as e:  # pylint: disable=broad-except  (OSError, tf.errors.OpError)
      raise evaluate.EvaluationError(
          f"cannot write {table_path}: {' '.join(str(e).split())[:200]}") from e
    tables[split] = table
  return tables
