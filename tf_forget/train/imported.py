"""Members imported from the user's own model files instead of trained.

`--reference=PATH[,PATH...]`: each path is one member of the dense population (K paths: K
independently trained networks; K = 1 is the common case). A reference is a model file as
users have them (its kind read from the file, `model_kind`): a `.keras` / `.h5` file
of tf_keras or of Keras 3 (TF 2.21's default Keras), loaded with its own Keras and saved by it
as the member's `model.keras`; a tf_keras SavedModel (tf_keras, as a `.keras` file); or a
SavedModel without Keras metadata (Keras 3's `model.export()`, `tf.saved_model.save` with a
`serving_default` signature), copied as it is into the member's `saved_model/` and run
through that signature (`tf_forget.export.model_files`). The metadata's `reference.kind` says
which, so that every later stage loads it the same way. From it tf_forget converts its float32
file and any `--compress` formats exactly as for trained members. Its `metadata.json` records
the file's sha256 (a directory: of its files') as the member's lineage (`inputs.reference`): a
reference that changes on disk is imported again, and everything made from it is redone
(`status`). One-shot pruning (tfmot) takes tf_keras references only.

No code of the model's runs unless the user asks (`--trust_model_code`): every load
of a reference first reads its configuration (`model_code.check`) and refuses a `Lambda` layer
or a class that is not a built-in Keras class, and loads `.keras` files in Keras' safe mode.
With `trust_model_code` it loads as it is (safe mode off) and the member's metadata records it
(`reference.trust_model_code`), so that the stages loading the member's `model.keras` later
turn safe mode off for it too (`member_files.load_model`, `export_state.load_member`).

The signature an audit can run (`signature`): one image input — `[batch, H, W, C]` (C 1 or 3),
grey `[batch, H, W]` or channels-first `[batch, C, H, W]` (`tf_forget.data.input_layout`) — and
one output `[batch, classes]` (`output_index` picks one of several outputs). A model that
includes its own preprocessing takes the data set's raw pixel values 0-255 as float32, as every
member does here.

An imported member as the parent of one-shot members (`--pruning=oneshot`: its preset, whether
one-shot pruning can fine-tune it, its status as a parent) is `tf_forget.train.imported_parent`.
"""

import os
import uuid

from tf_forget.artifacts import errors
from tf_forget.artifacts import fileio
from tf_forget.artifacts import filesystem
from tf_forget.artifacts import hashing
from tf_forget.artifacts import layout
from tf_forget.artifacts import lineage
from tf_forget.artifacts import member_metadata
from tf_forget.artifacts import names
from tf_forget.data import input_layout
from tf_forget.export import model_files
from tf_forget.train import member_files
from tf_forget.train import model_code

KERAS_SUFFIXES = (".keras", ".h5", ".hdf5")
MODEL = "user"  # the model name of an imported member (no model registry entry has it)


class ReferenceModelError(errors.Error):
  """A reference model that cannot be imported (one line, naming the file)."""


def kind(path):
  """ "keras" (a `.keras` / `.h5` file or a SavedModel directory) or "tflite".

  Raises:
    ReferenceModelError: a path that is none of these, or that does not exist.
  """
  path = str(path)
  if path.endswith(".tflite") and filesystem.isfile(path):
    return "tflite"
  if path.endswith(KERAS_SUFFIXES) and filesystem.isfile(path):
    return "keras"
  if filesystem.isdir(path) and filesystem.exists(os.path.join(path, "saved_model.pb")):
    return "keras"
  if not filesystem.exists(path):
    raise ReferenceModelError(f"reference {path} does not exist")
  raise ReferenceModelError(
    f"reference {path}: not a .keras / .h5 file, a SavedModel directory or a .tflite file"
  )


def file_sha256(path):
  """sha256 of a reference: its bytes, or, for a SavedModel directory, of its files' hashes."""
  return hashing.path_sha256(path)


def model_kind(path):
  """How a Keras reference is loaded (`model_files.KINDS`, read from the file):
  "tf_keras", "keras3" (a `.keras` / `.h5` file of Keras 3) or "saved_model" (a SavedModel
  without Keras metadata: Keras 3's `model.export()`, `tf.saved_model.save`)."""
  return model_files.detect(path)


def load(path, trust_model_code=False):
  """The model of a Keras reference (not compiled): tf_keras, Keras 3, or a SavedModel's
  serving signature (`model_files.load`, by `model_kind`).

  Args:
    path: a Keras reference.
    trust_model_code: load it even if loading runs the model's own code (`model_code`).

  Raises:
    ReferenceModelError: it cannot be loaded (one line).
    model_code.UntrustedCodeError: it holds code of its own, without `trust_model_code`.
  """
  kind = model_kind(path)
  if not trust_model_code:
    model_code.check(path, kind=kind)
  try:
    return model_files.load(path, kind, safe_mode=not trust_model_code)
  except model_files.ModelFileError as e:
    raise ReferenceModelError(str(e)) from e
  except Exception as e:  # Keras raises anything on bad files
    raise ReferenceModelError(
      f"cannot load reference {path} with {model_files.LOADERS[kind]}: {errors.one_line(e)}"
    ) from e


def input_layout_of(model, path):
  """The `input_layout.InputLayout` of a Keras model's one input (fed float32).

  Raises:
    ReferenceModelError: several inputs, or an input no audit can feed (one line).
  """
  if len(model.inputs) != 1:
    raise ReferenceModelError(
      f"reference {path} has {len(model.inputs)} inputs; an audit runs "
      "image classifiers with one image input"
    )
  try:
    return input_layout.from_shape(tuple(model.inputs[0].shape))
  except input_layout.LayoutError as e:
    raise ReferenceModelError(f"reference {path}: {e}") from e


def signature(model, path, output_index=None):
  """((H, W, C), classes) of a Keras model, checked to be an image classifier.

  (H, W, C) is the image shape the data must have; the input may take it in any layout of
  `input_layout` (`[N, H, W, C]`, grey `[N, H, W]`, channels-first `[N, C, H, W]`).

  Raises:
    ReferenceModelError: several inputs, a non-image input, several outputs without `output_index`,
      or an output that is not [batch, classes].
  """
  shape = input_layout_of(model, path).image_shape
  outputs = list(model.outputs)
  if output_index is None and len(outputs) != 1:
    raise ReferenceModelError(
      f"reference {path} has {len(outputs)} outputs: choose one with --output_index"
    )
  index = output_index or 0
  if not 0 <= index < len(outputs):
    raise ReferenceModelError(
      f"reference {path}: --output_index={index} but it has {len(outputs)} outputs"
    )
  out = tuple(outputs[index].shape)
  if len(out) != 2 or out[-1] is None:
    raise ReferenceModelError(f"reference {path}: output shape {out} is not [batch, classes]")
  return shape, int(out[-1])


classifier = model_files.classifier  # `model` with one output: the `output_index`-th


def expected_inputs(path):
  """The lineage `inputs` of an imported member: {"reference": sha256 of the file now}."""
  return {"reference": file_sha256(path)}


def status(run_dir, k, path):
  """`lineage.Status` of dense member k imported from `path`: its metadata records the current
  sha256 of `path`, and its model.keras is the one it wrote."""
  directory = layout.member_dir(run_dir, names.DENSE, k)
  if not filesystem.exists(os.path.join(directory, layout.METADATA_FILE)):
    return lineage.MISSING
  model_path = layout.member_model(run_dir, names.DENSE, k)
  return lineage.status(
    lambda: member_files.read_metadata(directory),
    expected_inputs(path),
    "imported",
    extra=lambda meta: lineage.file_reason(
      model_path, meta.get("model_sha256"), os.path.basename(model_path), "imported"
    ),
  )


def import_member(run_dir, k, path, dataset, output_index=None, trust_model_code=False):
  """Imports `path` as dense member k of `run_dir` (model.keras, then metadata.json).

  Args:
    run_dir: the run directory.
    k: the member index.
    path: a Keras reference (`kind(path) == "keras"`).
    dataset: the audited `dataset_api.Dataset` (its name and options are recorded).
    output_index: the output to audit, for a model with several.
    trust_model_code: load it even if loading runs the model's own code (`load`).

  Returns:
    The member's metadata dict.

  Raises:
    ReferenceModelError: the model cannot be loaded, is not an image classifier, or its input and
      output do not match the data set (image shape, number of classes).
    errors.WriteError: the member cannot be written.
  """
  sha = file_sha256(path)
  kind = model_kind(path)
  model = load(path, trust_model_code)
  shape, classes = signature(model, path, output_index)
  check_matches(path, shape, classes, dataset)
  directory = layout.member_dir(run_dir, names.DENSE, k)
  filesystem.makedirs(directory)
  model_sha = _store(model, kind, path, directory, output_index)
  meta = {
    "schema": member_metadata.SCHEMA,
    "variant": names.DENSE,
    "k": int(k),
    "model": MODEL,
    "model_options": {},
    "dataset": dataset.spec.name,
    "dataset_options": dict(dataset.spec.options),
    "eval_split": dataset.spec.eval_split,
    "model_sha256": model_sha,
    "inputs": {"reference": sha},
    "reference": {
      "path": filesystem.abspath(path),
      "sha256": sha,
      "kind": kind,
      "output_index": output_index,
      "input_shape": list(shape),
      "classes": classes,
      "trust_model_code": bool(trust_model_code),
    },
    "precision_policy": "float32",
    "versions": member_files.versions(),
  }
  member_metadata.write(os.path.join(directory, layout.METADATA_FILE), meta)
  return meta


def _store(model, kind, path, directory, output_index):
  """Stores a reference as the member's model (`layout.member_model`); returns its sha256.

  A Keras model (tf_keras or Keras 3) is saved by its own Keras as `model.keras` (its audited
  output only); a SavedModel is copied as it is into `saved_model/` (its output is chosen
  when loaded, `export_state.load_member`). The other form, left by an earlier import of
  another kind, is removed first: `layout.member_model` prefers `saved_model/`.
  """
  keras_file = os.path.join(directory, layout.MODEL_FILE)
  saved = os.path.join(directory, layout.SAVED_MODEL_DIR)
  if kind != "saved_model":
    filesystem.rmtree(saved)
    return member_files.save_model(classifier(model, output_index), keras_file)
  filesystem.remove(keras_file)
  staged = f"{saved}.tmp-{uuid.uuid4().hex[:8]}"
  try:
    for root, _, files in filesystem.walk(path):
      filesystem.makedirs(os.path.join(staged, os.path.relpath(root, path)))  # empty ones too
      for name in files:
        full = os.path.join(root, name)
        fileio.copy(full, os.path.join(staged, os.path.relpath(full, path)))
    filesystem.rmtree(saved)
    fileio.rename(staged, saved)
  finally:
    filesystem.rmtree(staged)
  return hashing.path_sha256(saved, memo=False)


def check_matches(path, shape, classes, dataset):
  """Raises `ReferenceModelError` unless a model of input `shape` and `classes` outputs fits
  `dataset`."""
  if classes != dataset.spec.num_classes:
    raise ReferenceModelError(
      f"{path} outputs {classes} classes but the data set has "
      f"{dataset.spec.num_classes} ({', '.join(dataset.spec.class_names[:5])}"
      f"{', ...' if dataset.spec.num_classes > 5 else ''}): give the class "
      "names in the model's output order (--class_names or labels.txt)"
    )
  if tuple(shape) != tuple(dataset.spec.image_shape):
    raise ReferenceModelError(
      f"{path} takes {tuple(shape)} images but the data set yields "
      f"{tuple(dataset.spec.image_shape)}"
    )
