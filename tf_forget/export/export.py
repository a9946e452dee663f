"""Exports the members of a population to `.tflite` files (docs/artifacts/tflite.md).

    <run>/tflite/<member variant>/<k>/<file stem>.tflite
    <run>/tflite/<member variant>/<k>/<file stem>.json     # written last: presence = finished

with `<file stem>` the format (`float32`, `float16`, `dynamic_int8`, `full_int8`) or, for the
sparse-encoded twin, `<format>+sparse`. The JSON is `tf_forget.artifacts.tflite_json`'s. A
sparse conversion that fails leaves the plain file as it is and records its one-line reason in
`<format>+sparse.failed.json` (`tf_forget.artifacts.tflite_failure`). Quantized member k is the
quantization of member k of its member variant (docs/spec.md §1.3); the audited variant name
(docs/spec.md §1.1) is recorded in the JSON.

Pruned members are stored with their pruning wrappers stripped (docs/artifacts/members.md) and
are exported as they are; the zeros are counted back from the written file
(`flatbuffer.weight_stats`).

Lineage: an export is made again only when it is no longer current
(`export_state.status`: its JSON, its `.tflite` and the inputs it recorded).
"""

import os
import time

from tf_forget.artifacts import errors
from tf_forget.artifacts import fileio
from tf_forget.artifacts import filesystem
from tf_forget.artifacts import hashing
from tf_forget.artifacts import layout
from tf_forget.artifacts import names
from tf_forget.artifacts import tflite_failure
from tf_forget.artifacts import tflite_formats
from tf_forget.artifacts import tflite_json
from tf_forget.data import registry as data_registry
from tf_forget.export import converter
from tf_forget.export import export_state
from tf_forget.export import flatbuffer
from tf_forget.export import flatbuffer_graph
from tf_forget.export import model_files


def file_stem(variant):
  """File name (without extension) of a variant's export inside `tflite/<member>/<k>/`."""
  return variant.file_stem


def export_member(
  run_dir,
  variant,
  k,
  dataset=None,
  representative_size=export_state.DEFAULT_REPRESENTATIVE_SIZE,
  model=None,
  metadata=None,
  overwrite=False,
):
  """Exports member k of `variant.member_variant` in `variant.format`; skips a finished export.

  Args:
    run_dir: the population run directory.
    variant: a `names.Variant`.
    k: member index.
    dataset: a `tf_forget.data.dataset_api.Dataset` (built from the member metadata if None; needed
      only by formats with representative data).
    representative_size: number of representative train examples (docs/spec.md §2.5).
    model, metadata: the loaded member (loaded from `run_dir` if None).
    overwrite: re-export even if a valid export exists.

  Returns:
    The export's JSON dict (read back from disk if skipped), with key `skipped`.

  Returns:
    The export's JSON dict (read back from disk if skipped), with keys `skipped` and `redo`
    (why an existing export was made again, else None).

  Raises:
    export_state.ExportError, converter.ConversionError: the export could not be made;
      nothing is written.
  """
  path, meta_path = export_state.export_paths(run_dir, variant, k)
  options = tflite_formats.get(variant.format).options
  rep, metadata = _representative(run_dir, variant, k, dataset, representative_size, metadata)
  state = export_state.status(run_dir, variant, k, rep.key if rep else None)
  if not overwrite and state:
    return dict(tflite_json.read(meta_path), skipped=True, redo=None)
  export_state.check_member(run_dir, variant.member_variant, k)
  source_sha = _source_sha256(run_dir, variant, k)
  if model is None or metadata is None:
    model, metadata = export_state.load_member(run_dir, variant.member_variant, k)
  start = time.time()
  data = converter.convert(model, variant.format, rep.images if rep else None, variant.encoding)
  seconds = time.time() - start
  stats = flatbuffer.weight_stats(data)
  if _source_sha256(run_dir, variant, k) != source_sha:
    raise export_state.ExportError(
      f"member {variant.member_variant}/{k}: model.keras changed while it was being exported"
    )
  meta = export_json(variant, k, data, stats, metadata, source_sha, options, seconds, rep)
  if variant.encoding != names.DEFAULT_ENCODING:
    meta["plain_twin"] = _twin_summary(run_dir, variant, k, len(data))
  write_export(path, meta_path, data, meta)
  filesystem.remove(tflite_failure.path(run_dir, variant, k))
  return dict(meta, skipped=False, redo=None if overwrite else state.reason)


def _representative(run_dir, variant, k, dataset, representative_size, metadata):
  """(`export_state.Representative`, metadata): the representative data of formats that need
  it, else None.

  Without `dataset`, it is built from the member's metadata, read from `run_dir` (and
  returned) when `metadata` is None; `metadata` is returned as given otherwise.
  """
  if not tflite_formats.get(variant.format).representative:
    return None, metadata
  if dataset is None:
    if metadata is None:
      metadata = fileio.read_json(
        os.path.join(
          export_state.member_dir(run_dir, variant.member_variant, k), layout.METADATA_FILE
        ),
        "member metadata",
      )
    dataset = data_registry.get(metadata["dataset"], **metadata.get("dataset_options", {}))
  return export_state.representative_images(dataset, representative_size), metadata


def _source_sha256(run_dir, variant, k):
  """The sha256 of the exported member's `model.keras` bytes, read now (not memoized)."""
  return hashing.path_sha256(layout.member_model(run_dir, variant.member_variant, k), memo=False)


def export_json(variant, k, data, stats, metadata, source_sha, options, seconds, rep):
  """The export's JSON dict (docs/artifacts/tflite.md) of the converted bytes `data`."""
  return {
    "schema": tflite_json.SCHEMA,
    "variant": variant.name,
    "member_variant": variant.member_variant,
    "k": k,
    "format": variant.format,
    "encoding": variant.encoding,
    "source": {
      "model": layout.member_model_relpath(
        variant.member_variant, k, saved_model=model_files.member_kind(metadata) == "saved_model"
      ),
      "sha256": source_sha,
      "seed": metadata.get("seed"),
      "dataset": metadata.get("dataset"),
      "dataset_options": metadata.get("dataset_options", {}),
      "model_name": metadata.get("model"),
    },
    "converter": {
      "api": "tf.lite.TFLiteConverter.from_concrete_functions",
      "options": {key: (list(v) if isinstance(v, tuple) else v) for key, v in options.items()},
      "seconds": seconds,
    },
    "representative": (
      dict(
        {
          "split": rep.split,
          "size": int(len(rep.ids)),
          "first_ids": [int(i) for i in rep.ids[:5]],
          "ids_sha256": export_state.representative_sha256(rep.ids),
        },
        **({"calibration": rep.calibration} if rep.calibration else {}),
      )
      if rep is not None
      else None
    ),
    "inputs": dict(
      {"model": source_sha, "converter": export_state.converter_key(options, variant.encoding)},
      **({"representative": rep.key} if rep is not None else {}),
    ),
    "versions": converter.versions(),
    "sha256": export_state.sha256(data),
    "size_bytes": flatbuffer.sizes(data),
    "sparsity": stats,
    "sparse_tensors": flatbuffer.sparse_tensors(data),
    "io": flatbuffer_graph.io_details(data),
  }


def write_variant(run_dir, variant, k, data, meta):
  """`write_export` of `variant` of member k at its place in the run (its folder made); returns
  `meta`."""
  path, meta_path = export_state.export_paths(run_dir, variant, k)
  filesystem.makedirs(os.path.dirname(path))
  write_export(path, meta_path, data, meta)
  return meta


def write_export(path, meta_path, data, meta):
  """Writes the `.tflite` bytes, then the JSON; on a write error removes both.

  Raises:
    export_state.ExportError: either file cannot be written (one line).
  """
  try:
    filesystem.remove(meta_path)  # a stale JSON never describes the new file, even if killed here
    fileio.write_bytes(path, data)
    hashing.remember(path, meta["sha256"])
    tflite_json.write(meta_path, meta)  # Last: its presence marks a finished export.
  except errors.WriteError as e:
    for p in (meta_path, path):
      try:
        filesystem.remove(p)
      except errors.WriteError:
        pass
    raise export_state.ExportError(str(e)) from e


def _twin_summary(run_dir, variant, k, size):
  """{file, sha256, size_bytes, size_ratio} of a sparse file's plain twin (None if absent)."""
  twin = names.plain_twin(variant)
  _, twin_meta_path = export_state.export_paths(run_dir, twin, k)
  try:
    twin_meta = tflite_json.read(twin_meta_path)
  except errors.ReadError:
    return None
  raw = twin_meta["size_bytes"]["raw"]
  return {
    "file": file_stem(twin) + ".tflite",
    "sha256": twin_meta["sha256"],
    "size_bytes": twin_meta["size_bytes"],
    "size_ratio": size / raw if raw else None,
  }


def record_failure(run_dir, variant, k, reason):
  """Writes `<stem>.failed.json` for a conversion that failed; returns the record."""
  return tflite_failure.write(
    tflite_failure.path(run_dir, variant, k), tflite_failure.record(variant, k, reason)
  )


def export_population(
  run_dir,
  dense_formats=names.FORMAT_NAMES,
  pruned_formats=("float32",),
  representative_size=export_state.DEFAULT_REPRESENTATIVE_SIZE,
  dataset=None,
  overwrite=False,
  log=None,
  encodings=(names.DEFAULT_ENCODING,),
  dense_encodings=None,
  members=None,
):
  """Exports every finished member of a run (see `export_state.plan`); returns the export dicts.

  Members are loaded once for all their formats; the data set (for representative data) is
  `dataset` if given, else built once per distinct (name, options) of the members' metadata.
  With "sparse" in `encodings` every plain file gets a sparse-encoded twin; a
  sparse conversion that fails does not stop the run: its one-line reason is recorded
  (`record_failure`) and returned as a dict with key `failed`, and the plain file stays.
  `dense_encodings` (default: `encodings`) applies to the dense members only. `members`
  ([(member variant, k)]) restricts the export to those members (default: every finished
  member on disk). An export that is no longer current is made again and `log` gets a line
  "redo <variant>/<k> export: <why>".

  Raises:
    export_state.ExportError, converter.ConversionError, names.FormatError: on the first
      failure of a plain export.
  """
  for fmt in list(dense_formats) + list(pruned_formats):
    names.check_format(fmt)
  for encoding in tuple(encodings) + tuple(dense_encodings or ()):
    names.check_encoding(encoding)
  results = []
  datasets, rep_keys = {}, {}
  for member_variant, k in _selected_members(run_dir, members):
    jobs = [
      v
      for v, _ in export_state.plan(
        [(member_variant, k)], dense_formats, pruned_formats, encodings, dense_encodings
      )
    ]
    metadata = fileio.read_json(
      os.path.join(export_state.member_dir(run_dir, member_variant, k), layout.METADATA_FILE),
      "member metadata",
    )
    data = None
    if any(tflite_formats.get(v.format).representative for v in jobs):
      data = _member_dataset(metadata, dataset, datasets)
      if id(data) not in rep_keys:
        rep_keys[id(data)] = export_state.representative_images(data, representative_size).key
    todo = [
      v
      for v in jobs
      if overwrite
      or not export_state.is_complete(
        run_dir, v, k, rep_keys[id(data)] if tflite_formats.get(v.format).representative else None
      )
    ]
    model = None
    if todo:  # the member is loaded once for all its formats
      export_state.check_member(run_dir, member_variant, k)
      model, metadata = export_state.load_member(run_dir, member_variant, k)
    results.extend(
      _export_jobs(run_dir, jobs, k, data, representative_size, model, metadata, overwrite, log)
    )
  return results


def _selected_members(run_dir, members):
  """[(member variant, k)] to export: the finished members on disk, or those of `members`.

  Raises:
    export_state.ExportError: a member of `members` is not finished.
  """
  on_disk = export_state.list_members(run_dir)
  if members is None:
    return on_disk
  missing = sorted(set(map(tuple, members)) - set(on_disk))
  if missing:
    raise export_state.ExportError(
      f"member {missing[0][0]}/{missing[0][1]} is not finished in {run_dir}"
    )
  wanted = set(map(tuple, members))
  return [m for m in on_disk if m in wanted]


def _member_dataset(metadata, dataset, datasets):
  """The data set of representative data: `dataset`, else one per (name, options) in `datasets`."""
  if dataset is not None:
    return dataset
  key = (metadata["dataset"], repr(sorted(metadata.get("dataset_options", {}).items())))
  if key not in datasets:
    datasets[key] = data_registry.get(metadata["dataset"], **metadata.get("dataset_options", {}))
  return datasets[key]


def _export_jobs(run_dir, jobs, k, data, representative_size, model, metadata, overwrite, log):
  """Exports member k in each variant of `jobs`; returns the export (or failure) dicts.

  Raises:
    export_state.ExportError, converter.ConversionError: a plain export failed.
  """
  results = []
  for variant in jobs:
    try:
      result = export_member(
        run_dir, variant, k, data, representative_size, model, metadata, overwrite
      )
    except converter.ConversionError as e:
      if variant.encoding == names.DEFAULT_ENCODING:
        raise
      record = record_failure(run_dir, variant, k, str(e))
      if log:
        log(f"FAILED {variant.name}/{k}: {record['reason']} (plain file kept)")
      results.append(dict(record, failed=record["reason"], skipped=False))
      continue
    if log and result.get("redo") not in (None, "missing"):
      log(f"redo {variant.name}/{k} export: {result['redo']}")
    if log:
      log(
        f"{'skip' if result['skipped'] else 'wrote'} {variant.name}/{k}: "
        f"{result['size_bytes']['raw']} B (gzip {result['size_bytes']['gzip']} B), "
        f"kernel sparsity {result['sparsity']['kernels']['fraction']:.4f}"
      )
    results.append(result)
  return results
