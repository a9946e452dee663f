"""Exports the members of a population to `.tflite` files (docs/artifacts/tflite.md).

    <run>/tflite/<member variant>/<k>/<file stem>.tflite
    <run>/tflite/<member variant>/<k>/<file stem>.json     # written last: presence = finished

with `<file stem>` the format (`float32`, `float16`, `dynamic_int8`, `full_int8`) or, for the
sparse-encoded twin of issue #10, `<format>+sparse`. A sparse conversion that fails leaves the
plain file as it is and records its one-line reason in `<format>+sparse.failed.json` (schema
`tf_forget.tflite_failure/1`, which readers of export JSONs skip). Quantized member k is the
quantization of member k of its member variant (SPEC §1.3); the audited variant name
(SPEC §1.1) is recorded in the JSON.

Pruned members are stored with their pruning wrappers stripped (docs/artifacts/members.md) and
are exported as they are; the zeros are counted back from the written file
(`flatbuffer.weight_stats`).

Lineage (issue #14): the JSON records `inputs` = {"model": sha256 of the `model.keras` bytes
converted, "converter": sha256 of the format's options and encoding, "representative": sha256
of the representative example ids (null without)}. A re-run reuses an export only if its JSON
is readable, its `.tflite` still has the recorded sha256 and every input equals the current one
(`status`); otherwise it re-exports and says why ("its model.keras changed since it was
exported").
"""

import os
import time

import numpy as np

from tf_forget.artifacts import errors
from tf_forget.artifacts import fileio
from tf_forget.artifacts import hashing
from tf_forget.artifacts import layout
from tf_forget.artifacts import lineage
from tf_forget.artifacts import names
from tf_forget.compat import keras2
from tf_forget.data import registry as data_registry
from tflite_export import converter
from tflite_export import flatbuffer
from tflite_export import formats

SCHEMA = "tf_forget.tflite/1"
FAILURE_SCHEMA = "tf_forget.tflite_failure/1"
DEFAULT_REPRESENTATIVE_SIZE = 100  # 000 appendix A, SPEC §2.5.
REPRESENTATIVE_SPLIT = "train"


class ExportError(errors.Error):
  """A member that cannot be exported (missing, unreadable, unwritable output; one line)."""


_one_line = errors.one_line


def file_stem(variant):
  """File name (without extension) of a variant's export inside `tflite/<member>/<k>/`."""
  return variant.file_stem


member_dir = layout.member_dir
export_paths = layout.tflite_paths
failure_path = layout.tflite_failure


def list_members(run_dir):
  """Finished members of a run: sorted [(member variant, k)] with a `metadata.json`.

  Raises:
    ExportError: no `members/` directory or no finished member.
  """
  root = layout.members_root(run_dir)
  if not fileio.isdir(root):
    raise ExportError(f"{run_dir} has no members/ directory (not a population run)")
  found = []
  for variant in fileio.listdir(root):
    vdir = os.path.join(root, variant)
    if not fileio.isdir(vdir):
      continue
    for k in fileio.listdir(vdir):
      if k.isdigit() and fileio.exists(os.path.join(vdir, k, layout.METADATA_FILE)):
        found.append((variant, int(k)))
  if not found:
    raise ExportError(f"{run_dir} has no finished member (members/<variant>/<k>/metadata.json)")
  return sorted(found, key=lambda vk: (vk[0] != names.DENSE, vk[0], vk[1]))


def plan(members, dense_formats, pruned_formats=("float32",),
         encodings=(names.DEFAULT_ENCODING,), dense_encodings=None):
  """The exports to make: [(Variant, k)] for the given members (SPEC §1.1).

  Args:
    members: [(member variant, k)] as from `list_members`.
    dense_formats: formats applied to the dense members.
    pruned_formats: formats applied to every other member variant (combinations such as
      `prune_0.9+full_int8` when "full_int8" is listed).
    encodings: weight encodings of every format (issue #10); a plain file is always planned
      before its sparse twin.
    dense_encodings: encodings of the dense members' files (default: `encodings`); the audit
      gives ("plain",): a dense model's sparse file is its plain file re-serialized.

  Returns:
    A list of (`names.Variant`, k).
  """
  def ordered(encs):
    return sorted(dict.fromkeys(encs), key=lambda e: e != names.DEFAULT_ENCODING)

  order = ordered(encodings)
  dense_order = order if dense_encodings is None else ordered(dense_encodings)
  jobs = []
  for member_variant, k in members:
    dense = member_variant == names.DENSE
    fmts = dense_formats if dense else pruned_formats
    for fmt in fmts:
      for encoding in (dense_order if dense else order):
        jobs.append((names.Variant(member_variant, fmt, encoding), k))
  return jobs


sha256 = hashing.sha256_bytes


def converter_inputs(variant):
  """sha256 of what the converter is told: the format's options and the encoding."""
  options = {key: (list(v) if isinstance(v, tuple) else v)
             for key, v in formats.FORMATS[variant.format].items()}
  return hashing.sha256_json({"options": options, "encoding": variant.encoding})


def representative_sha256(ids):
  """sha256 of representative example ids (int64 bytes), as the JSON records it."""
  return sha256(np.asarray(ids, np.int64).tobytes())


def expected_inputs(run_dir, variant, k, representative_ids=None):
  """The lineage `inputs` an export of member k in `variant` would record now.

  Args:
    run_dir, variant, k: the export.
    representative_ids: the representative example ids (formats that take representative
      data); None leaves the representative set unchecked.

  Returns:
    {"model": sha256 of the member's current model.keras (None if unreadable), "converter":
    `converter_inputs`, and "representative" when `representative_ids` is given}.
  """
  out = {"model": hashing.file_sha256_or_none(layout.member_model(run_dir,
                                                                  variant.member_variant, k)),
         "converter": converter_inputs(variant)}
  if representative_ids is not None:
    out["representative"] = representative_sha256(representative_ids)
  return out


def read_json(meta_path):
  """An export's JSON; raises `errors.ReadError` if unreadable or not of `SCHEMA`."""
  meta = fileio.read_json(meta_path, "export JSON")
  if not isinstance(meta, dict) or meta.get("schema") != SCHEMA:
    raise errors.ReadError(f"{meta_path} is not a {SCHEMA} file")
  return meta


def status(run_dir, variant, k, representative_ids=None):
  """`lineage.Status` of an export: JSON readable, file intact, inputs current.

  Current means: the JSON is readable and of this format and encoding, the `.tflite` has the
  sha256 the JSON records, and its `inputs` equal `expected_inputs` (same model.keras bytes,
  converter options and, if given, representative ids).
  """
  path, meta_path = export_paths(run_dir, variant, k)
  if not fileio.exists(meta_path):
    return lineage.MISSING

  def intact(meta):
    if meta.get("format") != variant.format or meta.get("encoding") != variant.encoding:
      return "its JSON describes another format or encoding"
    return lineage.file_reason(path, meta.get("sha256"), ".tflite", "exported")

  return lineage.status(lambda: read_json(meta_path),
                        expected_inputs(run_dir, variant, k, representative_ids), "exported",
                        extra=intact)


def is_complete(run_dir, variant, k, representative_ids=None):
  """Whether an export exists and is current (`status`)."""
  return bool(status(run_dir, variant, k, representative_ids))


def load_member(run_dir, member_variant, k):
  """Loads a member's (tf_keras model, metadata dict).

  Raises:
    ExportError: a missing or unreadable member.
  """
  mdir = member_dir(run_dir, member_variant, k)
  try:
    metadata = fileio.read_json(os.path.join(mdir, layout.METADATA_FILE), "member metadata")
    model = keras2.keras().models.load_model(os.path.join(mdir, layout.MODEL_FILE),
                                             compile=False)
  except Exception as e:  # pylint: disable=broad-except  (Keras raises anything on bad files)
    raise ExportError(f"cannot load member {member_variant}/{k} from {mdir}: "
                      f"{_one_line(e)}") from e
  return model, metadata


def check_member(run_dir, member_variant, k):
  """Raises `ExportError` unless the member's model.keras is the one its metadata records.

  Metadata without `model_sha256` (written before lineage) is accepted as it is.
  """
  mdir = member_dir(run_dir, member_variant, k)
  try:
    metadata = fileio.read_json(os.path.join(mdir, layout.METADATA_FILE), "member metadata")
  except errors.ReadError as e:
    raise ExportError(f"member {member_variant}/{k}: {e}") from e
  recorded = metadata.get("model_sha256")
  if recorded is not None and recorded != hashing.file_sha256_or_none(
      os.path.join(mdir, layout.MODEL_FILE)):
    raise ExportError(f"member {member_variant}/{k} is not finished: its model.keras changed "
                      "since it was trained; re-run train_population")


def representative_images(dataset, size=DEFAULT_REPRESENTATIVE_SIZE):
  """The first `size` train examples in fixed order, uint8 `[size, H, W, C]` (SPEC §2.5)."""
  if size < 1:
    raise ExportError(f"representative size must be >= 1, got {size}")
  examples = dataset.take(REPRESENTATIVE_SPLIT, size)
  return examples.images, examples.ids


def export_member(run_dir, variant, k, dataset=None,
                  representative_size=DEFAULT_REPRESENTATIVE_SIZE, model=None, metadata=None,
                  overwrite=False):
  """Exports member k of `variant.member_variant` in `variant.format`; skips a finished export.

  Args:
    run_dir: the population run directory.
    variant: a `names.Variant`.
    k: member index.
    dataset: a `tf_forget.data.base.Dataset` (built from the member metadata if None; needed
      only by formats with representative data).
    representative_size: number of representative train examples (SPEC §2.5).
    model, metadata: the loaded member (loaded from `run_dir` if None).
    overwrite: re-export even if a valid export exists.

  Returns:
    The export's JSON dict (read back from disk if skipped), with key `skipped`.

  Returns:
    The export's JSON dict (read back from disk if skipped), with keys `skipped` and `redo`
    (why an existing export was made again, else None).

  Raises:
    ExportError, converter.ConversionError: the export could not be made; nothing is written.
  """
  path, meta_path = export_paths(run_dir, variant, k)
  options = formats.FORMATS[variant.format]
  rep_images, rep_ids = None, None
  if options["representative"]:
    if dataset is None:
      if metadata is None:
        metadata = fileio.read_json(os.path.join(member_dir(run_dir, variant.member_variant, k),
                                                 layout.METADATA_FILE), "member metadata")
      dataset = data_registry.get(metadata["dataset"], **metadata.get("dataset_options", {}))
    rep_images, rep_ids = representative_images(dataset, representative_size)
  state = status(run_dir, variant, k, rep_ids)
  if not overwrite and state:
    return dict(read_json(meta_path), skipped=True, redo=None)
  check_member(run_dir, variant.member_variant, k)
  source_sha = hashing.file_sha256(
      layout.member_model(run_dir, variant.member_variant, k), memo=False)
  if model is None or metadata is None:
    model, metadata = load_member(run_dir, variant.member_variant, k)
  start = time.time()
  data = converter.convert(model, variant.format, rep_images, variant.encoding)
  seconds = time.time() - start
  stats = flatbuffer.weight_stats(data)
  if hashing.file_sha256(layout.member_model(run_dir, variant.member_variant, k),
                         memo=False) != source_sha:
    raise ExportError(f"member {variant.member_variant}/{k}: model.keras changed while it was "
                      "being exported")
  meta = {
      "schema": SCHEMA,
      "variant": variant.name,
      "member_variant": variant.member_variant,
      "k": k,
      "format": variant.format,
      "encoding": variant.encoding,
      "source": {
          "model": layout.member_model_relpath(variant.member_variant, k),
          "sha256": source_sha,
          "seed": metadata.get("seed"),
          "dataset": metadata.get("dataset"),
          "dataset_options": metadata.get("dataset_options", {}),
          "model_name": metadata.get("model"),
      },
      "converter": {
          "api": "tf.lite.TFLiteConverter.from_concrete_functions",
          "options": {key: (list(v) if isinstance(v, tuple) else v)
                      for key, v in options.items()},
          "seconds": seconds,
      },
      "representative": ({
          "split": REPRESENTATIVE_SPLIT,
          "size": int(len(rep_ids)),
          "first_ids": [int(i) for i in rep_ids[:5]],
          "ids_sha256": representative_sha256(rep_ids),
      } if rep_ids is not None else None),
      "inputs": dict({"model": source_sha, "converter": converter_inputs(variant)},
                     **({"representative": representative_sha256(rep_ids)}
                        if rep_ids is not None else {})),
      "versions": converter.versions(),
      "sha256": sha256(data),
      "size_bytes": flatbuffer.sizes(data),
      "sparsity": stats,
      "sparse_tensors": flatbuffer.sparse_tensors(data),
      "io": flatbuffer.io_details(data),
  }
  if variant.encoding != names.DEFAULT_ENCODING:
    meta["plain_twin"] = _twin_summary(run_dir, variant, k, len(data))
  try:
    fileio.remove(meta_path)  # a stale JSON never describes the new file, even if killed here
    fileio.write_bytes(path, data)
    hashing.remember(path, meta["sha256"])
    fileio.write_json(meta_path, meta)  # Last: its presence marks a finished export.
  except errors.WriteError as e:
    for p in (meta_path, path):
      try:
        fileio.remove(p)
      except errors.WriteError:
        pass
    raise ExportError(str(e)) from e
  fileio.remove(failure_path(run_dir, variant, k))
  return dict(meta, skipped=False, redo=None if overwrite else state.reason)


def _twin_summary(run_dir, variant, k, size):
  """{file, sha256, size_bytes, size_ratio} of a sparse file's plain twin (None if absent)."""
  twin = names.plain_twin(variant)
  _, twin_meta_path = export_paths(run_dir, twin, k)
  try:
    twin_meta = read_json(twin_meta_path)
  except errors.ReadError:
    return None
  raw = twin_meta["size_bytes"]["raw"]
  return {"file": file_stem(twin) + ".tflite", "sha256": twin_meta["sha256"],
          "size_bytes": twin_meta["size_bytes"], "size_ratio": size / raw if raw else None}


def record_failure(run_dir, variant, k, reason):
  """Writes `<stem>.failed.json` for a conversion that failed; returns the record."""
  twin = names.plain_twin(variant)
  record = {"schema": FAILURE_SCHEMA, "variant": variant.name,
            "member_variant": variant.member_variant, "k": k, "format": variant.format,
            "encoding": variant.encoding, "reason": _one_line(reason),
            "plain_twin": file_stem(twin) + ".tflite"}
  fileio.write_json(failure_path(run_dir, variant, k), record)
  return record


def export_population(run_dir, dense_formats=tuple(formats.FORMATS), pruned_formats=("float32",),
                      representative_size=DEFAULT_REPRESENTATIVE_SIZE, dataset=None,
                      overwrite=False, log=None, encodings=(names.DEFAULT_ENCODING,),
                      dense_encodings=None, members=None):
  """Exports every finished member of a run (see `plan`); returns the list of export dicts.

  Members are loaded once for all their formats; the data set (for representative data) is
  `dataset` if given, else built once per distinct (name, options) of the members' metadata.
  With "sparse" in `encodings` every plain file gets a sparse-encoded twin (issue #10); a
  sparse conversion that fails does not stop the run: its one-line reason is recorded
  (`record_failure`) and returned as a dict with key `failed`, and the plain file stays.
  `dense_encodings` (default: `encodings`) applies to the dense members only. `members`
  ([(member variant, k)]) restricts the export to those members (default: every finished
  member on disk). An export that is no longer current is made again and `log` gets a line
  "redo <variant>/<k> export: <why>".

  Raises:
    ExportError, converter.ConversionError, names.FormatError: on the first failure of a
      plain export.
  """
  for fmt in list(dense_formats) + list(pruned_formats):
    names.check_format(fmt)
  for encoding in tuple(encodings) + tuple(dense_encodings or ()):
    names.check_encoding(encoding)
  on_disk = list_members(run_dir)
  if members is not None:
    missing = sorted(set(map(tuple, members)) - set(on_disk))
    if missing:
      raise ExportError(f"member {missing[0][0]}/{missing[0][1]} is not finished in {run_dir}")
    wanted = set(map(tuple, members))
    members = [m for m in on_disk if m in wanted]
  else:
    members = on_disk
  results = []
  datasets, rep_ids = {}, {}

  def member_dataset(metadata):
    """The data set of representative data: `dataset`, else one per (name, options)."""
    if dataset is not None:
      return dataset
    key = (metadata["dataset"], repr(sorted(metadata.get("dataset_options", {}).items())))
    if key not in datasets:
      datasets[key] = data_registry.get(metadata["dataset"],
                                        **metadata.get("dataset_options", {}))
    return datasets[key]

  for member_variant, k in members:
    jobs = [v for v, _ in plan([(member_variant, k)], dense_formats, pruned_formats,
                               encodings, dense_encodings)]
    metadata = fileio.read_json(os.path.join(member_dir(run_dir, member_variant, k),
                                             layout.METADATA_FILE), "member metadata")
    data = None
    if any(formats.FORMATS[v.format]["representative"] for v in jobs):
      data = member_dataset(metadata)
      if id(data) not in rep_ids:
        rep_ids[id(data)] = representative_images(data, representative_size)[1]
    todo = [v for v in jobs if overwrite or not is_complete(
        run_dir, v, k, rep_ids[id(data)] if formats.FORMATS[v.format]["representative"]
        else None)]
    model = None
    if todo:  # the member is loaded once for all its formats
      check_member(run_dir, member_variant, k)
      model, metadata = load_member(run_dir, member_variant, k)
    for variant in jobs:
      try:
        result = export_member(run_dir, variant, k, data, representative_size, model,
                               metadata, overwrite)
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
        log(f"{'skip' if result['skipped'] else 'wrote'} {variant.name}/{k}: "
            f"{result['size_bytes']['raw']} B (gzip {result['size_bytes']['gzip']} B), "
            f"kernel sparsity {result['sparsity']['kernels']['fraction']:.4f}")
      results.append(result)
  return results
