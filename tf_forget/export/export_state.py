"""What a run's `.tflite` exports are made from, and whether an export is current.

The finished members of a run (`list_members`, `load_member`, `check_member`), the exports to
make of them (`plan`), their representative data (`representative_images`, docs/spec.md §2.5), where
an export is written (`export_paths`) and its lineage (`tf_forget.export.export` writes the files).

Lineage: the JSON (`tf_forget.artifacts.tflite_json`) records `inputs` = {"model": sha256 of the
`model.keras` bytes converted, "converter": sha256 of the format's options and encoding,
"representative": sha256 of the representative example ids (null without; with the user's
`--calibration` data, its name, options, split and pixels folded in: `Representative.key`)}.
A re-run reuses an export only if its JSON is readable, its `.tflite` still has the recorded
sha256 and every input equals the current one (`status`); otherwise it re-exports and says why
("its model.keras changed since it was exported").
"""

import collections
import os

import numpy as np

from tf_forget.artifacts import errors
from tf_forget.artifacts import fileio
from tf_forget.artifacts import filesystem
from tf_forget.artifacts import hashing
from tf_forget.artifacts import layout
from tf_forget.artifacts import lineage
from tf_forget.artifacts import names
from tf_forget.artifacts import tflite_formats
from tf_forget.artifacts import tflite_json
from tf_forget.data import registry as data_registry
from tf_forget.export import model_files

DEFAULT_REPRESENTATIVE_SIZE = 100  # 000 appendix A, docs/spec.md §2.5.
REPRESENTATIVE_SPLIT = "train"


class ExportError(errors.Error):
  """A member that cannot be exported (missing, unreadable, unwritable output; one line)."""


member_dir = layout.member_dir
export_paths = tflite_json.paths


def list_members(run_dir):
  """Finished members of a run: sorted [(member variant, k)] with a `metadata.json`.

  Raises:
    ExportError: no `members/` directory or no finished member.
  """
  root = layout.members_root(run_dir)
  if not filesystem.isdir(root):
    raise ExportError(f"{run_dir} has no members/ directory (not a population run)")
  found = [
    (variant, k)
    for variant, k, kdir in layout.walk(root)
    if filesystem.exists(os.path.join(kdir, layout.METADATA_FILE))
  ]
  if not found:
    raise ExportError(f"{run_dir} has no finished member (members/<variant>/<k>/metadata.json)")
  return sorted(found, key=lambda vk: (vk[0] != names.DENSE, vk[0], vk[1]))


def plan(
  members,
  dense_formats,
  pruned_formats=("float32",),
  encodings=(names.DEFAULT_ENCODING,),
  dense_encodings=None,
):
  """The exports to make: [(Variant, k)] for the given members (docs/spec.md §1.1).

  Args:
    members: [(member variant, k)] as from `list_members`.
    dense_formats: formats applied to the dense members.
    pruned_formats: formats applied to every other member variant (combinations such as
      `prune_0.9+full_int8` when "full_int8" is listed).
    encodings: weight encodings of every format; a plain file is always planned
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
      for encoding in dense_order if dense else order:
        jobs.append((names.Variant(member_variant, fmt, encoding), k))
  return jobs


sha256 = hashing.sha256_bytes


def converter_inputs(variant):
  """sha256 of what the converter is told: the format's options and the encoding."""
  return converter_key(tflite_formats.get(variant.format).options, variant.encoding)


def converter_key(options, encoding):
  """sha256 of converter `options` (a dict) and `encoding` (`converter_inputs`)."""
  options = {key: (list(v) if isinstance(v, tuple) else v) for key, v in options.items()}
  return hashing.sha256_json({"options": options, "encoding": encoding})


def representative_sha256(ids):
  """sha256 of representative example ids (int64 bytes), as the JSON records it."""
  return sha256(np.asarray(ids, np.int64).tobytes())


def expected_inputs(run_dir, variant, k, representative=None):
  """The lineage `inputs` an export of member k in `variant` would record now.

  Args:
    run_dir, variant, k: the export.
    representative: the `Representative.key` of the representative data (formats that take
      it); None leaves the representative set unchecked.

  Returns:
    {"model": sha256 of the member's current model.keras (None if unreadable), "converter":
    `converter_inputs`, and "representative" when `representative` is given}.
  """
  out = {
    "model": hashing.path_sha256_or_none(layout.member_model(run_dir, variant.member_variant, k)),
    "converter": converter_inputs(variant),
  }
  if representative is not None:
    out["representative"] = representative
  return out


def status(run_dir, variant, k, representative=None):
  """`lineage.Status` of an export: JSON readable, file intact, inputs current.

  Current means: the JSON is readable and of this format and encoding, the `.tflite` has the
  sha256 the JSON records, and its `inputs` equal `expected_inputs` (same model.keras bytes,
  converter options and, if given, representative data: a `Representative.key`).
  """
  path, meta_path = export_paths(run_dir, variant, k)
  if not filesystem.exists(meta_path):
    return lineage.MISSING

  def intact(meta):
    if meta.get("format") != variant.format or meta.get("encoding") != variant.encoding:
      return "its JSON describes another format or encoding"
    return lineage.file_reason(path, meta.get("sha256"), ".tflite", "exported")

  return lineage.status(
    lambda: tflite_json.read(meta_path),
    expected_inputs(run_dir, variant, k, representative),
    "exported",
    extra=intact,
  )


def is_complete(run_dir, variant, k, representative=None):
  """Whether an export exists and is current (`status`)."""
  return bool(status(run_dir, variant, k, representative))


def load_member(run_dir, member_variant, k):
  """Loads a member's (model, metadata dict): a tf_keras model, or for a member imported from
  a Keras 3 file or a SavedModel that kind's model (`model_files.load`).

  Raises:
    ExportError: a missing or unreadable member.
  """
  mdir = member_dir(run_dir, member_variant, k)
  try:
    metadata = fileio.read_json(os.path.join(mdir, layout.METADATA_FILE), "member metadata")
    # Keras' safe mode off only for the members of a reference the user trusted
    # (`--trust_model_code`: `tf_forget.train.member_files.trusts_model_code`).
    trusted = any(
      isinstance(ref, dict) and ref.get("trust_model_code") is True
      for ref in (metadata.get("reference"), (metadata.get("parent") or {}).get("reference"))
    )
    kind = model_files.member_kind(metadata)
    # A stored SavedModel is the user's directory as it is: its audited output is chosen here.
    reference = metadata.get("reference") or {}
    output = reference.get("output_index") if kind == "saved_model" else None
    model = model_files.load(
      layout.member_model(run_dir, member_variant, k),
      kind,
      safe_mode=not trusted,
      output_index=output,
    )
  except Exception as e:  # Keras raises anything on bad files
    raise ExportError(
      f"cannot load member {member_variant}/{k} from {mdir}: {errors.one_line(e)}"
    ) from e
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
  if recorded is not None and recorded != hashing.path_sha256_or_none(
    layout.member_model(run_dir, member_variant, k)
  ):
    raise ExportError(
      f"member {member_variant}/{k} is not finished: its model.keras changed "
      "since it was trained; re-run train_population"
    )


Representative = collections.namedtuple("Representative", "images ids split calibration key")
Representative.__doc__ = """The representative data of an export (`representative_images`).

Attributes:
  images: `[size, H, W, C]` as the model takes them (its pixels or the user's preprocess);
    the converter feeds them in the model's input layout (`converter.model_inputs`: grey
    `[N, H, W]` or channels-first inputs).
  ids: int64 `[size]`, their ids in `split` of the calibration source.
  split: the split they come from.
  calibration: None (the audited data set's train split), or the user's `--calibration` data
    ({"name", "options"} of `sources.parse`).
  key: the lineage input `representative`: `representative_sha256(ids)`, with the calibration
    data's name, options, split and the images' bytes folded in when it is the user's.
"""


def calibration_source(dataset):
  """(data set, split) whose first examples calibrate full_int8.

  The audited data set's train split (docs/spec.md §2.5: first 100 examples), or, when its options
  hold `calibration` (`--calibration=DATA`), that data read at the audited data
  set's image size, channels and preprocess: its train split if it has one, else its eval
  split (labels unused).

  Raises:
    dataset_api.DataError: the calibration data cannot be read (one line).
  """
  calibration = dataset.spec.options.get("calibration")
  if not calibration:
    return dataset, REPRESENTATIVE_SPLIT
  height, width, channels = dataset.spec.image_shape
  options = dict(calibration["options"], image_size=[height, width], channels=channels)
  if dataset.spec.options.get("preprocess"):
    options["preprocess"] = dataset.spec.options["preprocess"]
  source = data_registry.get(calibration["name"], **options)
  return source, ("train" if "train" in source.spec.splits else source.spec.eval_split)


def representative_images(dataset, size=DEFAULT_REPRESENTATIVE_SIZE):
  """The `Representative` data: `size` examples of `calibration_source(dataset)`
  (`Dataset.calibration_examples`: the first `size` in fixed order, docs/spec.md §2.5; for the
  user's data, evenly spaced over it, since a folder is sorted by class), as the model takes them
  (`Dataset.model_inputs`: uint8 pixels, or the user's preprocess)."""
  if size < 1:
    raise ExportError(f"representative size must be >= 1, got {size}")
  source, split = calibration_source(dataset)
  examples = source.model_inputs(source.calibration_examples(split, size))
  calibration = dataset.spec.options.get("calibration") or None
  key = representative_sha256(examples.ids)
  if calibration:  # the user's files may change in place: their pixels are part of the key
    key = hashing.sha256_json(
      {
        "ids": key,
        "calibration": calibration,
        "split": split,
        "images": sha256(np.ascontiguousarray(examples.images).tobytes()),
      }
    )
  return Representative(examples.images, examples.ids, split, calibration, key)
