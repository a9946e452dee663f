"""Members imported from the user's own model files instead of trained (issue #28).

`--reference=PATH[,PATH...]`: each path is one member of the dense population (K paths: K
independently trained networks; K = 1 is the common case). A reference is a Keras model file
(`.keras`, `.h5`) or a Keras SavedModel directory, loaded with tf_keras and saved as the
member's `model.keras`, from which tf_forget converts its float32 file and any `--compress`
formats exactly as for trained members. Its `metadata.json` records the file's sha256 as the
member's lineage (`inputs.reference`): a reference that changes on disk is imported again, and
everything made from it is redone (`status`).

The signature an audit can run (`signature`): one image input `[batch, H, W, C]` (C 1 or 3) and
one output `[batch, classes]` (`output_index` picks one of several outputs). A model that
includes its own preprocessing takes the data set's raw pixel values 0-255 as float32, as every
member does here.
"""

import os

from tf_forget.artifacts import errors
from tf_forget.artifacts import fileio
from tf_forget.artifacts import hashing
from tf_forget.artifacts import layout
from tf_forget.artifacts import lineage
from tf_forget.artifacts import names
from tf_forget.compat import keras2
from tf_forget.train import member as member_lib

KERAS_SUFFIXES = (".keras", ".h5", ".hdf5")


class ReferenceModelError(errors.Error):
  """A reference model that cannot be imported (one line, naming the file)."""


def kind(path):
  """"keras" (a `.keras` / `.h5` file or a SavedModel directory) or "tflite".

  Raises:
    ReferenceModelError: a path that is none of these, or that does not exist.
  """
  path = str(path)
  if path.endswith(".tflite") and fileio.isfile(path):
    return "tflite"
  if path.endswith(KERAS_SUFFIXES) and fileio.isfile(path):
    return "keras"
  if fileio.isdir(path) and fileio.exists(os.path.join(path, "saved_model.pb")):
    return "keras"
  if not fileio.exists(path):
    raise ReferenceModelError(f"reference {path} does not exist")
  raise ReferenceModelError(f"reference {path}: not a .keras / .h5 file, a SavedModel directory or a "
                     ".tflite file")


def file_sha256(path):
  """sha256 of a reference: its bytes, or, for a SavedModel directory, of its files' hashes."""
  if not fileio.isdir(path):
    return hashing.file_sha256(path)
  entries = {}
  for root, _, files in fileio.walk(path):
    for name in files:
      full = os.path.join(root, name)
      entries[os.path.relpath(full, path)] = hashing.file_sha256(full)
  return hashing.sha256_json(entries)


def load(path):
  """The tf_keras model of a Keras reference (not compiled).

  Raises:
    ReferenceModelError: tf_keras cannot load it (one line).
  """
  try:
    return keras2.keras().models.load_model(path, compile=False)
  except Exception as e:  # pylint: disable=broad-except  (Keras raises anything on bad files)
    raise ReferenceModelError(f"cannot load reference {path} with tf_keras: {errors.one_line(e)}") from e


def signature(model, path, output_index=None):
  """((H, W, C), classes) of a Keras model, checked to be an image classifier.

  Raises:
    ReferenceModelError: several inputs, a non-image input, several outputs without `output_index`,
      or an output that is not [batch, classes].
  """
  if len(model.inputs) != 1:
    raise ReferenceModelError(f"reference {path} has {len(model.inputs)} inputs; an audit runs "
                       "image classifiers with one image input")
  shape = tuple(model.inputs[0].shape)
  if len(shape) != 4 or shape[-1] not in (1, 3) or None in shape[1:]:
    raise ReferenceModelError(f"reference {path}: input shape {shape} is not an image "
                       "[batch, height, width, 1 or 3 channels]")
  outputs = list(model.outputs)
  if output_index is None and len(outputs) != 1:
    raise ReferenceModelError(f"reference {path} has {len(outputs)} outputs: choose one with "
                       "--output_index")
  index = output_index or 0
  if not 0 <= index < len(outputs):
    raise ReferenceModelError(f"reference {path}: --output_index={index} but it has {len(outputs)} "
                       "outputs")
  out = tuple(outputs[index].shape)
  if len(out) != 2 or out[-1] is None:
    raise ReferenceModelError(f"reference {path}: output shape {out} is not [batch, classes]")
  return tuple(int(d) for d in shape[1:]), int(out[-1])


def classifier(model, output_index=None):
  """`model` with one output: the `output_index`-th, if it has several."""
  if output_index is None or len(model.outputs) == 1:
    return model
  keras = keras2.keras()
  return keras.Model(model.inputs, model.outputs[output_index])


def expected_inputs(path):
  """The lineage `inputs` of an imported member: {"reference": sha256 of the file now}."""
  return {"reference": file_sha256(path)}


def status(run_dir, k, path):
  """`lineage.Status` of dense member k imported from `path`: its metadata records the current
  sha256 of `path`, and its model.keras is the one it wrote."""
  directory = layout.member_dir(run_dir, names.DENSE, k)
  if not fileio.exists(os.path.join(directory, layout.METADATA_FILE)):
    return lineage.MISSING
  model_path = os.path.join(directory, layout.MODEL_FILE)
  return lineage.status(
      lambda: member_lib.read_metadata(directory), expected_inputs(path), "imported",
      extra=lambda meta: lineage.file_reason(model_path, meta.get("model_sha256"), "model.keras",
                                             "imported"))


def import_member(run_dir, k, path, dataset, output_index=None):
  """Imports `path` as dense member k of `run_dir` (model.keras, then metadata.json).

  Args:
    run_dir: the run directory.
    k: the member index.
    path: a Keras reference (`kind(path) == "keras"`).
    dataset: the audited `base.Dataset` (its name and options are recorded).
    output_index: the output to audit, for a model with several.

  Returns:
    The member's metadata dict.

  Raises:
    ReferenceModelError: the model cannot be loaded, is not an image classifier, or its input and
      output do not match the data set (image shape, number of classes).
    errors.WriteError: the member cannot be written.
  """
  sha = file_sha256(path)
  model = load(path)
  shape, classes = signature(model, path, output_index)
  check_matches(path, shape, classes, dataset)
  directory = layout.member_dir(run_dir, names.DENSE, k)
  fileio.makedirs(directory)
  model_sha = member_lib.save_model(classifier(model, output_index),
                                    os.path.join(directory, layout.MODEL_FILE))
  meta = {"schema": member_lib.SCHEMA, "variant": names.DENSE, "k": int(k), "model": "user",
          "model_options": {}, "dataset": dataset.spec.name,
          "dataset_options": dict(dataset.spec.options), "eval_split": dataset.spec.eval_split,
          "model_sha256": model_sha, "inputs": {"reference": sha},
          "reference": {"path": fileio.abspath(path), "sha256": sha, "kind": "keras",
                        "output_index": output_index, "input_shape": list(shape),
                        "classes": classes},
          "precision_policy": "float32", "versions": member_lib.versions()}
  fileio.write_json(os.path.join(directory, layout.METADATA_FILE), meta)
  return meta


def check_matches(path, shape, classes, dataset):
  """Raises `ReferenceModelError` unless a model of input `shape` and `classes` outputs fits `dataset`."""
  if classes != dataset.spec.num_classes:
    raise ReferenceModelError(f"{path} outputs {classes} classes but the data set has "
                       f"{dataset.spec.num_classes} ({', '.join(dataset.spec.class_names[:5])}"
                       f"{', ...' if dataset.spec.num_classes > 5 else ''}): give the class "
                       "names in the model's output order (--class_names or labels.txt)")
  if tuple(shape) != tuple(dataset.spec.image_shape):
    raise ReferenceModelError(f"{path} takes {tuple(shape)} images but the data set yields "
                       f"{tuple(dataset.spec.image_shape)}")
