"""The model files a member can be stored as, each loaded, run and converted its own way.

Kinds (`KINDS`), told apart by the file itself (`detect`), not by its name:
  * "tf_keras": a Keras 2 file (`.keras` zip whose `metadata.json` says `keras_version` 2.x,
    `.h5` whose `keras_version` attribute is 2.x) or a tf_keras SavedModel (with
    `keras_metadata.pb`): loaded with tf_keras (`compat.keras2`), as every trained member;
  * "keras3": a `.keras` / `.h5` file saved by Keras 3 (`keras_version` 3.x): TensorFlow
    2.21's default Keras, loaded with Keras 3 (`compat.keras3`);
  * "saved_model": a SavedModel directory without Keras metadata (Keras 3's `model.export()`,
    `tf.saved_model.save` of a `tf.Module`): loaded with `tf.saved_model.load` and run through
    its `serving_default` signature (`SavedModelClassifier`).

Whatever the kind, `load` returns a model with `inputs` and `outputs` (objects with a
`shape`), called as `model(images, training=False)` on float32 `[batch, H, W, C]`, and
`trace` gives the converter its concrete function and the object holding its variables
(TensorFlow's documented paths: a `tf.function` of a tf_keras model or of the serving
signature; a Keras 3 model through a SavedModel endpoint, `keras3.serving_function`), so the
export, evaluation and layer-analysis stages treat every member alike.

The outputs of a SavedModel signature (a dict) are ordered by their names (Keras 3's
`output_0`, `output_1`, ...); `--output_index` counts in that order.
"""

import zipfile

import tensorflow as tf

from tf_forget.artifacts import errors
from tf_forget.artifacts import filesystem
from tf_forget.compat import keras2
from tf_forget.compat import keras3
from tf_forget.export import model_archive

KINDS = ("tf_keras", "keras3", "saved_model")
SERVING = "serving_default"
# How a refusal names what loads each kind.
LOADERS = {"tf_keras": "tf_keras", "keras3": "Keras 3", "saved_model": "tf.saved_model.load"}


class ModelFileError(errors.Error):
  """A model file that cannot be run as an image classifier (one line, naming it)."""


def _zip_version(f, path):
  """The major Keras version of a `.keras` zip (open file `f` of `path`): "2" or "3" (its
  `metadata.json`, which both Keras write, read with a cap: `model_archive`; without one,
  "2")."""
  with zipfile.ZipFile(f) as archive:
    if "metadata.json" not in archive.namelist():
      return "2"
    version = model_archive.read_json_member(archive, "metadata.json", path).get("keras_version")
  return version.split(".")[0] if isinstance(version, str) else "2"


def _h5_version(f):
  """The major Keras version an HDF5 model file (open file `f`) records: "2" or "3"."""
  import h5py

  with h5py.File(f, "r") as h5:
    version = h5.attrs.get("keras_version")
  version = version.decode() if isinstance(version, bytes) else str(version or "")
  return version.split(".")[0] or "2"


def detect(path):
  """The kind (`KINDS`) of the model file or SavedModel directory `path`.

  A file whose header cannot be read is "tf_keras" (its loader then says what is wrong). The
  file's configuration is held to its size cap first (`model_archive.check`): every reader of
  a reference asks its kind before it reads the configuration.

  Raises:
    model_archive.ArchiveError: a configuration over the cap (one line).
  """
  if filesystem.isdir(path):
    keras_saved = filesystem.exists(filesystem.join(path, "keras_metadata.pb"))
    return "tf_keras" if keras_saved else "saved_model"
  model_archive.check(path)
  try:
    with filesystem.open_file(path, "rb") as f:
      major = _zip_version(f, path) if zipfile.is_zipfile(f) else (f.seek(0), _h5_version(f))[1]
  except Exception:  # zipfile, JSON, h5py errors
    return "tf_keras"
  return "keras3" if major == "3" else "tf_keras"


class SavedModelClassifier(tf.Module):
  """A SavedModel's `serving_default` signature as a model of one image input.

  Attributes:
    inputs: [the signature's input `tf.TensorSpec`].
    outputs: the output specs, ordered by name (or the one chosen, `select`).
    output_names: their names, in the same order.
  """

  def __init__(self, loaded, path, output=None):
    super().__init__()
    signatures = dict(getattr(loaded, "signatures", None) or {})
    if SERVING not in signatures:
      raise ModelFileError(
        f"SavedModel {path} has no {SERVING} signature (it has "
        f"{', '.join(sorted(signatures)) or 'none'}): save it with signatures="
        f"{{'{SERVING}': ...}}, or with Keras 3's model.export()"
      )
    function = signatures[SERVING]
    args, kwargs = function.structured_input_signature
    specs = dict(kwargs) if not args else {}
    if len(specs) != 1:
      raise ModelFileError(
        f"SavedModel {path}: its {SERVING} signature takes "
        f"{len(args) + len(kwargs)} inputs; an audit runs image classifiers "
        "with one image input"
      )
    ((self._input_name, spec),) = specs.items()
    if spec.dtype != tf.float32:
      raise ModelFileError(
        f"SavedModel {path}: its {SERVING} input is {spec.dtype.name}; an "
        "audit feeds float32 images [batch, H, W, C]"
      )
    if spec.shape.rank is not None and spec.shape.rank > 0 and spec.shape[0] is not None:
      raise ModelFileError(
        f"SavedModel {path}: its {SERVING} input shape "
        f"{tuple(spec.shape)} has a fixed batch size; save the signature "
        "with shape [None, H, W, C]"
      )
    outputs = function.structured_outputs
    if not isinstance(outputs, dict):
      outputs = {"output_0": outputs}
    self._loaded, self._function = loaded, function
    self._specs = (spec,) + tuple(outputs[name] for name in sorted(outputs))
    self._names = tuple(sorted(outputs)) if output is None else (output,)
    if output is not None:
      self._specs = (spec, outputs[output])

  @property
  def inputs(self):
    return [self._specs[0]]

  @property
  def outputs(self):
    return list(self._specs[1:])

  @property
  def output_names(self):
    return list(self._names)

  def select(self, index):
    """This classifier with only its `index`-th output (by name order)."""
    return SavedModelClassifier(self._loaded, "", self._names[index])

  def __call__(self, images, training=False):
    del training  # a serving signature runs in inference mode
    result = self._function(**{self._input_name: tf.convert_to_tensor(images, tf.float32)})
    return result[self._names[0]] if isinstance(result, dict) else result


def load(path, kind, safe_mode=True, output_index=None):
  """The model stored at `path` as `kind`, with one output if `output_index` is given.

  Args:
    path: a model file or SavedModel directory.
    kind: one of `KINDS`.
    safe_mode: Keras' safe mode (no Python code from the file; `.keras` files).
    output_index: keep only this output (`classifier`).

  Raises:
    ModelFileError: a SavedModel without a usable serving signature.
    Anything the loaders raise on bad files (callers make it one line).
  """
  if kind == "saved_model":
    model = SavedModelClassifier(tf.saved_model.load(path), path)
  elif kind == "keras3":
    model = keras3.load_model(path, safe_mode=safe_mode)
  else:
    model = keras2.keras().models.load_model(path, compile=False, safe_mode=safe_mode)
  return classifier(model, output_index)


def classifier(model, output_index=None):
  """`model` with one output: the `output_index`-th, if it has several."""
  if output_index is None or len(model.outputs) == 1:
    return model
  if isinstance(model, SavedModelClassifier):
    return model.select(output_index)
  keras = keras3.keras() if keras3.is_model(model) else keras2.keras()
  return keras.Model(model.inputs, model.outputs[output_index])


def member_kind(metadata):
  """The kind a member's `model.keras` / `saved_model/` was stored as: its reference's `kind`
  (`tf_forget.train.imported`); "tf_keras" for trained and pruned members (tfmot saves them
  with tf_keras) and for imports recorded before kinds ("keras")."""
  ref = metadata.get("reference")
  return ref["kind"] if isinstance(ref, dict) and ref.get("kind") in KINDS else "tf_keras"


class VariableHolder(tf.Module):
  """The variables a concrete function reads, as the one object the converter saves.

  `tf.lite.TFLiteConverter.from_concrete_functions(funcs, trackable)` first writes `trackable`
  and the function as a temporary SavedModel and converts that. Saving a tf_keras model writes
  a trace of every layer's call besides (~1 s for the small CNN, ~80% of a conversion); this
  object holds only the variables, so the SavedModel is the function and its variables, and
  the `.tflite` bytes are the same (tests/export/converter_test.py compares them).

  Attributes:
    held: the function's variables, in its capture order.
  """

  def __init__(self, variables):
    super().__init__(name="variables")
    self.held = list(variables)


def _holder(concrete, model):
  """A `VariableHolder` of `concrete`'s variables, or `model` itself when the function reads a
  resource that is not one of them (a lookup table: only the model tracks it)."""
  variables = list(concrete.variables)
  handles = {id(v.handle) for v in variables}
  for captured in concrete.captured_inputs:
    if captured.dtype == tf.resource and id(captured) not in handles:
      return model
  return VariableHolder(variables)


def trace(model, spec):
  """(concrete function, trackable object) of `model(image, training=False)` at `spec`, for
  `tf.lite.TFLiteConverter.from_concrete_functions`.

  The trackable object of a tf_keras model is a `VariableHolder` of the function's variables
  (what the converter saves with the function, without tf_keras' per-layer traces); a Keras 3
  model's is its `ExportArchive`, a SavedModel's the loaded object.
  """
  if keras3.is_model(model):
    return keras3.serving_function(model, spec)
  function = tf.function(lambda image: model(image, training=False))
  concrete = function.get_concrete_function(spec)
  if isinstance(model, SavedModelClassifier):
    return concrete, model
  return concrete, _holder(concrete, model)
