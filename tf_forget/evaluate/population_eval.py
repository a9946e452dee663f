"""Evaluates every exported `.tflite` file of a population run, then checks agreement.

    <run>/predictions/<variant>/<k>/<split>.npz        artifacts.predictions, one per file x split
    <run>/predictions_keras/<member>/<k>/<split>.npz   the Keras models' own predictions
    <run>/eval/agreement/<split>.json                  agreement table (tf_forget.evaluate.split_agreement)
    <run>/eval/twin_runtime/<variant>/<k>/<split>.<runtime>.npz   plain twin re-run on a sparse
                                                       file's fallback path

(docs/artifacts/predictions.md). Files run as on a device (`runtime="auto"`: XNNPACK, else the
built-in kernels). Every sparse-encoded file is checked against its plain twin
(`split_agreement`): a mismatch, or a sparse conversion that failed at export, is a one-line
entry of the table's `twin_failures`, never silent. The data set is the one the
members were trained on (from the export JSON) unless another registry data set is given; its
image shape must match every file's input, checked before anything is written. Custom streams
(corrupted splits) are passed as `split_batches`: name -> callable(batch_size) returning an
iterable of `Examples`, with their identities in `split_ids` (name -> sha256, e.g. of the
corruption cache entry's meta.json) so that predictions of another input split are redone.

Lineage: predictions record the sha256 of the `.tflite` bytes run and the split identity
(`tf_forget.evaluate.evaluate`); the Keras predictions the sha256 of the `model.keras` bytes and the
split; a twin-runtime file the plain twin's bytes. The agreement tables are recomputed on every run
from the current predictions files.
"""

from tf_forget.artifacts import errors
from tf_forget.artifacts import hashing
from tf_forget.artifacts import layout
from tf_forget.artifacts import predictions
from tf_forget.data import input_layout
from tf_forget.data import registry as data_registry
from tf_forget.evaluate import agreement
from tf_forget.evaluate import batched
from tf_forget.evaluate import evaluate
from tf_forget.evaluate import interpreter
from tf_forget.evaluate import split_agreement


def check_shapes(exports, image_shape):
  """Raises `interpreter.TfliteError` for the first export whose input does not take images of
  `image_shape` (in any layout of `tf_forget.data.input_layout`)."""
  for meta in exports:
    try:
      shape = input_layout.of_io(meta["io"]["inputs"][0]).image_shape
    except input_layout.LayoutError as e:
      raise interpreter.TfliteError(f"{meta['path']}: {e}") from e
    if shape != tuple(image_shape):
      raise interpreter.TfliteError(
        f"{meta['path']}: model input shape {shape} does not match the data set's image "
        f"shape {tuple(image_shape)}"
      )


def keras_predictions(
  run_dir, member_variant, k, split, batches, overwrite=False, split_id=None, log=None
):
  """Path of the Keras model's predictions of member k on `split` (computed once, cached).

  Reused only if they record the sha256 of the member's current `model.keras` bytes (or its
  `saved_model/` files, `layout.member_model`) and the same split identity.
  """
  out = layout.keras_predictions(run_dir, member_variant, k, split)
  model_path = layout.member_model(run_dir, member_variant, k)
  try:
    model_sha = hashing.path_sha256(model_path)
  except OSError as e:
    raise evaluate.EvaluationError(f"cannot read {model_path}: {errors.one_line(e)}") from e
  inputs = {"model": model_sha, "split": split_id}
  state = predictions.status(out, inputs)
  if state and not overwrite:
    return out
  if log and state.reason != "missing":
    log(f"redo keras:{member_variant}/{k} {split}: {state.reason}")
  from tf_forget.export import export_state  # TensorFlow
  from tf_forget.export import model_files

  model, metadata = export_state.load_member(run_dir, member_variant, k)
  if hashing.path_sha256(model_path, memo=False) != model_sha:
    raise evaluate.EvaluationError(f"{model_path} changed while it was being evaluated")
  ids, labels, scores = agreement.keras_scores(model, batches())
  evaluate.check_finite(
    scores, f"keras:{member_variant}/{k} {split}: {model_path}", f"{split} examples"
  )
  predictions.write(
    out,
    ids,
    labels,
    scores,
    {
      "variant": f"keras:{member_variant}",
      "member_variant": member_variant,
      "k": k,
      "split": split,
      "inputs": inputs,
      # what ran it: tf_keras, Keras 3 or a SavedModel's signature
      "runtime": model_files.member_kind(metadata),
    },
  )
  return out


def evaluate_population(
  run_dir,
  dataset=None,
  splits=None,
  split_batches=None,
  batch_size=batched.DEFAULT_BATCH_SIZE,
  num_threads=interpreter.DEFAULT_NUM_THREADS,
  save_logits=True,
  check_keras=True,
  variants=None,
  overwrite=False,
  log=None,
  tail="resize",
  split_ids=None,
  redo_log=None,
  files=None,
  write_tables=True,
):
  """Evaluates all finished exports of `run_dir` on the given splits.

  Args:
    run_dir: population run directory with `tflite/` exports.
    dataset: a `dataset_api.Dataset`; default: the members' data set from the export JSON.
    splits: data split names; default `[dataset.spec.eval_split]` (when no `split_batches`).
    split_batches: extra streams, name -> callable(batch_size) -> iterable of `Examples`.
    split_ids: name -> identity (sha256) of each `split_batches` stream; registry splits get
      `predictions.split_identity(dataset name, options, split)`.
    batch_size, num_threads: interpreter batch size and threads.
    save_logits: store dequantized scores in the predictions files.
    check_keras: also compare with the Keras models (cached in `predictions_keras/`).
    variants: optional iterable of audited variant names to restrict to.
    overwrite: recompute existing predictions.
    log: optional callable(str) for progress lines.
    redo_log: optional callable(str) for "redo ..." lines (default: `log`).
    tail: last-partial-batch policy (`batched.TAIL_POLICIES`).
    files: optional iterable of (variant, k) to restrict to (one executor task's share).
    write_tables: compute and write the agreement tables (False: only the predictions files, as
      an evaluation task does; the stage's `finish` then calls `agreement_tables`).

  Returns:
    {split: agreement table dict} (also written to `<run>/eval/agreement/<split>.json`); {}
    when `write_tables` is False.

  Raises:
    evaluate.EvaluationError, interpreter.TfliteError, data errors: nothing is written for
      the failing (file, split).
  """
  exports, dataset, failures, streams, ids = _select(
    run_dir, dataset, splits, split_batches, split_ids, variants, files
  )
  redo_log = redo_log or log
  for split, stream in streams.items():
    for meta in exports:
      member_variant, k = split_agreement.member_key(meta)
      pmeta, skipped = evaluate.evaluate_file(
        meta["path"],
        lambda st=stream: st(batch_size),
        predictions.path(run_dir, meta["variant"], k, split),
        split,
        metadata={
          "variant": meta["variant"],
          "member_variant": member_variant,
          "k": k,
          "format": meta["format"],
          "encoding": meta["encoding"],
          "dataset": dataset.spec.name,
        },
        batch_size=batch_size,
        num_threads=num_threads,
        save_logits=save_logits,
        overwrite=overwrite,
        tflite_sha256=meta["sha256"],
        image_shape=dataset.spec.image_shape,
        tail=tail,
        split_id=ids.get(split),
        log=redo_log,
        output_index=meta.get("output_index"),
      )
      if log:
        log(
          f"{'skip' if skipped else 'eval'} {meta['variant']}/{k} {split}: top-1 "
          f"{pmeta['top1_accuracy']:.4f} ({pmeta['examples_per_second'] or 0:.0f} img/s)"
        )
  if not write_tables:
    return {}
  tables = {}
  for split, stream in streams.items():

    def keras_path(member_variant, k, split=split, stream=stream):
      return keras_predictions(
        run_dir,
        member_variant,
        k,
        split,
        lambda: stream(batch_size),
        overwrite,
        ids.get(split),
        redo_log,
      )

    tables[split] = split_agreement.write(
      run_dir,
      dataset,
      split,
      stream,
      ids.get(split),
      exports,
      failures,
      keras_path if check_keras else None,
      batch_size,
      num_threads,
      overwrite,
      tail,
      redo_log,
    )
  return tables


def agreement_tables(
  run_dir,
  dataset,
  splits=None,
  split_batches=None,
  split_ids=None,
  variants=None,
  files=None,
  check_keras=True,
  batch_size=batched.DEFAULT_BATCH_SIZE,
  num_threads=interpreter.DEFAULT_NUM_THREADS,
  tail="resize",
  log=None,
):
  """Writes the agreement tables of predictions files already made (an evaluation stage's finish).

  The arguments select the files and splits as `evaluate_population`'s do; every predictions file
  (and, with `check_keras`, every Keras predictions file) must already be current, as the evaluation
  stages' tasks leave them (`tf_forget.pipeline.file_stages`). Only a failed twin check runs a file
  again (`split_agreement`); `log` gets its "redo" lines.

  Returns:
    {split: agreement table dict}, also written to `<run>/eval/agreement/<split>.json`.
  """
  exports, dataset, failures, streams, ids = _select(
    run_dir, dataset, splits, split_batches, split_ids, variants, files
  )
  return {
    split: split_agreement.write(
      run_dir,
      dataset,
      split,
      stream,
      ids.get(split),
      exports,
      failures,
      (lambda mv, k, s=split: layout.keras_predictions(run_dir, mv, k, s)) if check_keras else None,
      batch_size,
      num_threads,
      False,
      tail,
      log,
    )
    for split, stream in streams.items()
  }


def _select(run_dir, dataset, splits, split_batches, split_ids, variants, files):
  """(exports, dataset, sparse failures, {split: stream}, {split: identity}) to evaluate."""
  exports = evaluate.list_exports(run_dir)
  if variants is not None:
    wanted = set(variants)
    exports = [m for m in exports if m["variant"] in wanted]
    if not exports:
      raise evaluate.EvaluationError(f"no export of variants {sorted(wanted)} in {run_dir}")
  if files is not None:
    wanted_files = {(str(v), int(k)) for v, k in files}
    exports = [m for m in exports if (m["variant"], int(m["k"])) in wanted_files]
  if dataset is None:
    source = exports[0]["source"]
    dataset = data_registry.get(source["dataset"], **(source.get("dataset_options") or {}))
  check_shapes(exports, dataset.spec.image_shape)
  failures = [
    f for f in evaluate.list_failures(run_dir) if variants is None or f["variant"] in set(variants)
  ]
  streams, ids = {}, dict(split_ids or {})
  for split in (
    splits if splits is not None else ([] if split_batches else [dataset.spec.eval_split])
  ):
    dataset.check_split(split)
    streams[split] = lambda b, s=split: dataset.batches(s, b)
    ids[split] = predictions.split_identity(dataset.spec.name, dataset.spec.options, split)
  streams.update(split_batches or {})
  if not streams:
    raise evaluate.EvaluationError("no split to evaluate")
  fed = {
    split: evaluate.replayable(lambda b, st=stream: (dataset.model_inputs(e) for e in st(b)))
    for split, stream in streams.items()
  }  # what the models take (`preprocess`)
  return exports, dataset, failures, fed, ids
