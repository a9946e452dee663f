"""The agreement table of one split: every `.tflite` file's predictions against its member's
float32 file, its Keras model and, for a sparse encoding, its plain twin
(`tf_forget.evaluate.agreement`), written to `<run>/eval/agreement/<split>.json`
(`tf_forget.artifacts.agreement_table`; docs/artifacts/predictions.md).

A sparse file whose predictions differ from its plain twin's is a `twin_failures` entry, never
silent; when the two ran on different runtime paths, the plain twin is run on the sparse file's
path too, to tell a runtime difference from an encoding one (`_diagnose_runtime`).
"""

from tf_forget.artifacts import agreement_table
from tf_forget.artifacts import layout
from tf_forget.artifacts import predictions
from tf_forget.evaluate import agreement
from tf_forget.evaluate import evaluate


def member_key(meta):
  """(member variant, k) of an export."""
  return meta["member_variant"], int(meta["k"])


def _output_scale(meta):
  """The int8 output scale of an export (None for float outputs)."""
  out = meta["io"]["outputs"][meta.get("output_index") or 0]
  return out["scale"][0] if out["dtype"] in ("int8", "uint8") and out["scale"] else None


def _diagnose_runtime(
  run_dir,
  row,
  twin_meta,
  split,
  stream,
  batch_size,
  num_threads,
  output_scale,
  overwrite,
  tail,
  split_id=None,
  log=None,
):
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
  out = layout.twin_runtime(run_dir, twin_meta["variant"], k, split, runtime)
  evaluate.evaluate_file(
    twin_meta["path"],
    lambda: stream(batch_size),
    out,
    split,
    metadata={
      "variant": twin_meta["variant"],
      "member_variant": twin_meta["member_variant"],
      "k": k,
      "format": twin_meta["format"],
      "encoding": twin_meta["encoding"],
    },
    batch_size=batch_size,
    num_threads=num_threads,
    overwrite=overwrite,
    tflite_sha256=twin_meta["sha256"],
    tail=tail,
    runtime=runtime,
    split_id=split_id,
    log=log,
  )
  same = agreement.compare_twin_files(row["path"], out, output_scale)
  twin["same_runtime"] = same
  twin["encoding_exact"] = same["equal"]
  if same["equal"]:
    twin["reason"] += (
      f" ({runtime} vs {twin['plain_runtime']}; on {runtime} the plain twin "
      f"gives equal predictions: the runtime path differs, not the encoding)"
    )
  else:
    twin["reason"] += f" (also on the same runtime {runtime}: {same['reason']})"


def write(
  run_dir,
  dataset,
  split,
  stream,
  split_id,
  exports,
  failures,
  keras_path,
  batch_size,
  num_threads,
  overwrite,
  tail,
  redo_log,
):
  """Builds and writes the agreement table of `split` from its current predictions files.

  Args:
    stream: callable(batch_size) -> the split's model inputs (a failed twin check runs a
      plain twin on it again, `_diagnose_runtime`).
    exports: the export metadata of the files, in the table's order.
    failures: the sparse conversions that failed at export (`evaluate.list_failures`).
    keras_path: callable(member variant, k) -> the member's Keras predictions file of `split`,
      or None: no Keras comparison.

  Returns:
    The table dict, written to `<run>/eval/agreement/<split>.json`.
  """
  rows = []
  for meta in exports:
    member_variant, k = member_key(meta)
    out = predictions.path(run_dir, meta["variant"], k, split)
    pmeta = predictions.read(out)["metadata"]
    rows.append(
      {
        "variant": meta["variant"],
        "format": meta["format"],
        "encoding": meta["encoding"],
        "runtime": pmeta.get("runtime"),
        "member_variant": member_variant,
        "k": k,
        "path": out,
        "top1_accuracy": pmeta["top1_accuracy"],
      }
    )
  by_member = {(member_key(m), m["format"], m["encoding"]): r for m, r in zip(exports, rows)}
  twin_failures = []
  for meta, row in zip(exports, rows):
    if meta["encoding"] != "plain":
      twin = by_member.get((member_key(meta), meta["format"], "plain"))
      if twin is None:
        row["vs_plain_twin"] = None
        twin_failures.append(
          {
            "variant": meta["variant"],
            "k": row["k"],
            "reason": "no plain twin evaluated to compare with",
          }
        )
      else:
        row["vs_plain_twin"] = agreement.compare_twin_files(
          row["path"], twin["path"], _output_scale(meta)
        )
        row["vs_plain_twin"]["encoding_exact"] = row["vs_plain_twin"]["equal"]
        if not row["vs_plain_twin"]["equal"]:
          twin_meta = exports[rows.index(twin)]
          _diagnose_runtime(
            run_dir,
            row,
            twin_meta,
            split,
            stream,
            batch_size,
            num_threads,
            _output_scale(meta),
            overwrite,
            tail,
            split_id,
            redo_log,
          )
          twin_failures.append(
            {"variant": meta["variant"], "k": row["k"], "reason": row["vs_plain_twin"]["reason"]}
          )
    ref = by_member.get((member_key(meta), "float32", "plain"))
    if ref is not None:
      row["vs_float32_tflite"] = agreement.compare_files(row["path"], ref["path"])
    if keras_path is not None:
      row["vs_keras"] = agreement.compare_files(
        row["path"], keras_path(row["member_variant"], row["k"])
      )
  table = {
    "split": split,
    "dataset": dataset.spec.name,
    "rows": rows,
    "summary_vs_float32_tflite": agreement.summarize(rows, "vs_float32_tflite"),
    "summary_vs_keras": agreement.summarize(rows, "vs_keras") if keras_path else {},
    "summary_vs_plain_twin": agreement.summarize(rows, "vs_plain_twin"),
    "twin_failures": twin_failures
    + [
      {
        "variant": f["variant"],
        "k": f["k"],
        "reason": f"sparse conversion failed, plain file kept: {f['reason']}",
      }
      for f in failures
    ],
  }
  return agreement_table.write(agreement_table.path(run_dir, split), table)  # WriteError
