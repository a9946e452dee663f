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
(`flatbuffer.weight_stats`). A re-run skips every export whose JSON exists and whose `.tflite`
still has the recorded sha256.
"""

import hashlib
import os
import time

import numpy as np
import tensorflow as tf

from tf_forget.compat import keras2
from tf_forget.data import registry as data_registry
from tf_forget.io import atomic
from tflite_export import converter
from tflite_export import flatbuffer
from tflite_export import formats

SCHEMA = "tf_forget.tflite/1"
FAILURE_SCHEMA = "tf_forget.tflite_failure/1"
DEFAULT_REPRESENTATIVE_SIZE = 100  # 000 appendix A, SPEC §2.5.
REPRESENTATIVE_SPLIT = "train"


class ExportError(ValueError):
  """A member that cannot be exported (missing, unreadable, unwritable output; one line)."""


def _one_line(e):
  return " ".join(str(e).split())[:300]


def file_stem(variant):
  """File name (without extension) of a variant's export inside `tflite/<member>/<k>/`."""
  if variant.encoding == formats.DEFAULT_ENCODING:
    return variant.format
  return f"{variant.format}+{variant.encoding}"


def member_dir(run_dir, member_variant, k):
  return os.path.join(run_dir, "members", member_variant, str(k))


def export_paths(run_dir, variant, k):
  """(tflite path, json path) of a variant's export of member k."""
  base = os.path.join(run_dir, "tflite", variant.member_variant, str(k), file_stem(variant))
  return base + ".tflite", base + ".json"


def failure_path(run_dir, variant, k):
  """Where a failed (sparse) conversion of a variant's export of member k is recorded."""
  base = os.path.join(run_dir, "tflite", variant.member_variant, str(k), file_stem(variant))
  return base + ".failed.json"


def list_members(run_dir):
  """Finished members of a run: sorted [(member variant, k)] with a `metadata.json`.

  Raises:
    ExportError: no `members/` directory or no finished member.
  """
  root = os.path.join(run_dir, "members")
  if not tf.io.gfile.isdir(root):
    raise ExportError(f"{run_dir} has no members/ directory (not a population run)")
  found = []
  for variant in sorted(tf.io.gfile.listdir(root)):
    variant = variant.rstrip("/")
    vdir = os.path.join(root, variant)
    if not tf.io.gfile.isdir(vdir):
      continue
    for k in tf.io.gfile.listdir(vdir):
      k = k.rstrip("/")
      if k.isdigit() and tf.io.gfile.exists(os.path.join(vdir, k, "metadata.json")):
        found.append((variant, int(k)))
  if not found:
    raise ExportError(f"{run_dir} has no finished member (members/<variant>/<k>/metadata.json)")
  return sorted(found, key=lambda vk: (vk[0] != formats.DENSE, vk[0], vk[1]))


def plan(members, dense_formats, pruned_formats=("float32",),
         encodings=(formats.DEFAULT_ENCODING,), dense_encodings=None):
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
    A list of (`formats.Variant`, k).
  """
  def ordered(encs):
    return sorted(dict.fromkeys(encs), key=lambda e: e != formats.DEFAULT_ENCODING)

  order = ordered(encodings)
  dense_order = order if dense_encodings is None else ordered(dense_encodings)
  jobs = []
  for member_variant, k in members:
    dense = member_variant == formats.DENSE
    fmts = dense_formats if dense else pruned_formats
    for fmt in fmts:
      for encoding in (dense_order if dense else order):
        jobs.append((formats.Variant(member_variant, fmt, encoding), k))
  return jobs


def sha256(data):
  return hashlib.sha256(bytes(data)).hexdigest()


def is_complete(run_dir, variant, k):
  """Whether an export exists, is finished (JSON present) and its file matches its sha256."""
  path, meta_path = export_paths(run_dir, variant, k)
  if not (tf.io.gfile.exists(meta_path) and tf.io.gfile.exists(path)):
    return False
  try:
    meta = atomic.read_json(meta_path)
    with tf.io.gfile.GFile(path, "rb") as f:
      data = f.read()
  except (ValueError, OSError, tf.errors.OpError):
    return False
  return (meta.get("schema") == SCHEMA and meta.get("format") == variant.format and
          meta.get("encoding") == variant.encoding and meta.get("sha256") == sha256(data))


def load_member(run_dir, member_variant, k):
  """Loads a member's (tf_keras model, metadata dict).

  Raises:
    ExportError: a missing or unreadable member.
  """
  mdir = member_dir(run_dir, member_variant, k)
  try:
    metadata = atomic.read_json(os.path.join(mdir, "metadata.json"))
    model = keras2.keras().models.load_model(os.path.join(mdir, "model.keras"), compile=False)
  except Exception as e:  # pylint: disable=broad-except
    raise ExportError(f"cannot load member {member_variant}/{k} from {mdir}: "
                      f"{_one_line(e)}") from e
  return model, metadata


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
    variant: a `formats.Variant`.
    k: member index.
    dataset: a `tf_forget.data.base.Dataset` (built from the member metadata if None; needed
      only by formats with representative data).
    representative_size: number of representative train examples (SPEC §2.5).
    model, metadata: the loaded member (loaded from `run_dir` if None).
    overwrite: re-export even if a valid export exists.

  Returns:
    The export's JSON dict (read back from disk if skipped), with key `skipped`.

  Raises:
    ExportError, converter.ConversionError: the export could not be made; nothing is written.
  """
  path, meta_path = export_paths(run_dir, variant, k)
  if not overwrite and is_complete(run_dir, variant, k):
    return dict(atomic.read_json(meta_path), skipped=True)
  if model is None or metadata is None:
    model, metadata = load_member(run_dir, variant.member_variant, k)
  options = formats.FORMATS[variant.format]
  rep_images, rep_ids = None, None
  if options["representative"]:
    if dataset is None:
      dataset = data_registry.get(metadata["dataset"], **metadata.get("dataset_options", {}))
    rep_images, rep_ids = representative_images(dataset, representative_size)
  start = time.time()
  data = converter.convert(model, variant.format, rep_images, variant.encoding)
  seconds = time.time() - start
  stats = flatbuffer.weight_stats(data)
  with tf.io.gfile.GFile(os.path.join(member_dir(run_dir, variant.member_variant, k),
                                      "model.keras"), "rb") as f:
    source_sha = sha256(f.read())
  meta = {
      "schema": SCHEMA,
      "variant": variant.name,
      "member_variant": variant.member_variant,
      "k": k,
      "format": variant.format,
      "encoding": variant.encoding,
      "source": {
          "model": os.path.join("members", variant.member_variant, str(k), "model.keras"),
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
          "ids_sha256": sha256(np.asarray(rep_ids, np.int64).tobytes()),
      } if rep_ids is not None else None),
      "versions": converter.versions(),
      "sha256": sha256(data),
      "size_bytes": flatbuffer.sizes(data),
      "sparsity": stats,
      "sparse_tensors": flatbuffer.sparse_tensors(data),
      "io": flatbuffer.io_details(data),
  }
  if variant.encoding != formats.DEFAULT_ENCODING:
    meta["plain_twin"] = _twin_summary(run_dir, variant, k, len(data))
  try:
    atomic.write_bytes(path, data)
    atomic.write_json(meta_path, meta)  # Last: its presence marks a finished export.
  except (OSError, tf.errors.OpError) as e:
    for p in (meta_path, path):
      try:
        if tf.io.gfile.exists(p):
          tf.io.gfile.remove(p)
      except (OSError, tf.errors.OpError):
        pass
    raise ExportError(f"cannot write {path}: {_one_line(e)}") from e
  stale = failure_path(run_dir, variant, k)
  if tf.io.gfile.exists(stale):
    tf.io.gfile.remove(stale)
  return dict(meta, skipped=False)


def _twin_summary(run_dir, variant, k, size):
  """{file, sha256, size_bytes, size_ratio} of a sparse file's plain twin (None if absent)."""
  twin = formats.plain_twin(variant)
  _, twin_meta_path = export_paths(run_dir, twin, k)
  if not tf.io.gfile.exists(twin_meta_path):
    return None
  twin_meta = atomic.read_json(twin_meta_path)
  raw = twin_meta["size_bytes"]["raw"]
  return {"file": file_stem(twin) + ".tflite", "sha256": twin_meta["sha256"],
          "size_bytes": twin_meta["size_bytes"], "size_ratio": size / raw if raw else None}


def record_failure(run_dir, variant, k, reason):
  """Writes `<stem>.failed.json` for a conversion that failed; returns the record."""
  twin = formats.plain_twin(variant)
  record = {"schema": FAILURE_SCHEMA, "variant": variant.name,
            "member_variant": variant.member_variant, "k": k, "format": variant.format,
            "encoding": variant.encoding, "reason": _one_line(reason),
            "plain_twin": file_stem(twin) + ".tflite"}
  atomic.write_json(failure_path(run_dir, variant, k), record)
  return record


def export_population(run_dir, dense_formats=tuple(formats.FORMATS), pruned_formats=("float32",),
                      representative_size=DEFAULT_REPRESENTATIVE_SIZE, dataset=None,
                      overwrite=False, log=None, encodings=(formats.DEFAULT_ENCODING,),
                      dense_encodings=None):
  """Exports every finished member of a run (see `plan`); returns the list of export dicts.

  Members are loaded once for all their formats; the data set (for representative data) is
  `dataset` if given, else built once per distinct (name, options) of the members' metadata.
  With "sparse" in `encodings` every plain file gets a sparse-encoded twin (issue #10); a
  sparse conversion that fails does not stop the run: its one-line reason is recorded
  (`record_failure`) and returned as a dict with key `failed`, and the plain file stays.
  `dense_encodings` (default: `encodings`) applies to the dense members only.

  Raises:
    ExportError, converter.ConversionError, formats.FormatError: on the first failure of a
      plain export.
  """
  for fmt in list(dense_formats) + list(pruned_formats):
    formats.check_format(fmt)
  for encoding in tuple(encodings) + tuple(dense_encodings or ()):
    formats.check_encoding(encoding)
  members = list_members(run_dir)
  results = []
  datasets = {}
  for member_variant, k in members:
    jobs = [v for v, _ in plan([(member_variant, k)], dense_formats, pruned_formats,
                               encodings, dense_encodings)]
    todo = [v for v in jobs if overwrite or not is_complete(run_dir, v, k)]
    model = metadata = None
    if todo:
      model, metadata = load_member(run_dir, member_variant, k)
    for variant in jobs:
      member_dataset = dataset
      if (member_dataset is None and variant in todo and
          formats.FORMATS[variant.format]["representative"]):
        key = (metadata["dataset"], repr(sorted(metadata.get("dataset_options", {}).items())))
        if key not in datasets:
          datasets[key] = data_registry.get(metadata["dataset"],
                                            **metadata.get("dataset_options", {}))
        member_dataset = datasets[key]
      try:
        result = export_member(run_dir, variant, k, member_dataset, representative_size, model,
                               metadata, overwrite)
      except converter.ConversionError as e:
        if variant.encoding == formats.DEFAULT_ENCODING:
          raise
        record = record_failure(run_dir, variant, k, str(e))
        if log:
          log(f"FAILED {variant.name}/{k}: {record['reason']} (plain file kept)")
        results.append(dict(record, failed=record["reason"], skipped=False))
        continue
      if log:
        log(f"{'skip' if result['skipped'] else 'wrote'} {variant.name}/{k}: "
            f"{result['size_bytes']['raw']} B (gzip {result['size_bytes']['gzip']} B), "
            f"kernel sparsity {result['sparsity']['kernels']['fraction']:.4f}")
      results.append(result)
  return results
