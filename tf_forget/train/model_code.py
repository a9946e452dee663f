"""What loading a user's Keras model file would run, read before it is loaded.

A Keras model file is a description of built-in layers plus, possibly, code: a `Lambda` layer
stores its Python function's bytecode (an `.h5` file or a SavedModel runs it while tf_keras
rebuilds the model: it traces the lambda; tf_keras' `safe_mode` covers `.keras` files only),
and a layer of a class of the user's names a module that `.keras` loading imports, or is
revived from the SavedModel's traced functions. No model code runs unless the user asks
(`--trust_model_code`): `check(path)` reads the model's configuration without deserializing
anything —

* `.keras` (a zip): its `config.json` (what `tf_keras.saving` reads);
* `.h5` / `.hdf5` (any file tf_keras reads as HDF5): the `model_config` attribute (and
  `training_config` when the model is loaded compiled), with h5py;
* a Keras SavedModel: `keras_metadata.pb` (tf_keras' `SavedMetadata`), or the Keras objects of
  the saved object graph in `saved_model.pb` when that file is missing (older SavedModels);

— and refuses, in one line naming the layer (its name and class) and the flag, any `Lambda`,
any object whose class is not a built-in tf_keras class (layers, initializers, regularizers,
constraints, losses, metrics, optimizers, schedules, dtype policies; in a `.keras` file also
any object of a module outside Keras, or registered under another name), and a `TFOpLambda`
(Keras' wrapper of a TensorFlow function) calling a TensorFlow function that reads or writes
files, prints or calls Python (`_RISKY_TF`: a name-based list, the rest are tensor ops).

Files of Keras 3 (`tf_forget.export.model_files.detect` tells them apart) are checked
against Keras 3's own built-in classes (`_keras3_names`: its layers, initializers, ...,
`DTypePolicy`, `Functional`), minus `Lambda` and the layers that load or run foreign code
(`TFSMLayer` loads a SavedModel from a path, `JaxLayer` / `FlaxLayer` /
`TorchModuleWrapper` call functions or unpickle modules); Keras 3 writes `module` and
`registered_name` for every object, which the `.keras` rule above reads. A SavedModel
without Keras metadata (Keras 3's `model.export()`, `tf.saved_model.save`) is not rebuilt
from Python code but run as its graph: the ops its `serving_default` signature reaches (the
graph's nodes feeding the signature's outputs and every function they call) are checked
instead, and an op that reads or writes files, prints, or calls back into Python
(`_RISKY_OPS`, by name) is refused the same way.
"""

import functools
import json
import zipfile

from tf_forget.artifacts import errors
from tf_forget.artifacts import fileio
from tf_forget.artifacts import filesystem
from tf_forget.compat import keras2
from tf_forget.compat import keras3
from tf_forget.export import model_files

FLAG = "--trust_model_code"
# Serialized plain values of a `.keras` / SavedModel config, not objects with code.
_DATA = (
  "__tuple__",
  "__tensor__",
  "__numpy__",
  "__bytes__",
  "__ellipsis__",
  "__slice__",
  "TensorShape",
  "TypeSpec",
  "CompositeTensor",
  "__keras_tensor__",
)
# Layers that call a TensorFlow API function named in their config (`function`).
_TF_OP_LAYERS = ("TFOpLambda", "SlicingOpLambda")
# Parts of a TensorFlow function's name (`tf.<name>`) that a model's layer may not call.
_RISKY_TF = (
  "io",
  "gfile",
  "debugging",
  "summary",
  "saved_model",
  "raw_ops",
  "autograph",
  "config",
  "distribute",
  "data",
  "train",
  "sysconfig",
  "test",
  "lite",
  "keras",
  "experimental",
  "profiler",
  "tpu",
  "estimator",
  "queue",
)
_RISKY_TF_WORDS = (
  "print",
  "py_func",
  "numpy_function",
  "file",
  "save",
  "load",
  "restore",
  "write",
  "read",
)
# Keras 3 layers that load or run code from outside the model file (see the module docstring).
_KERAS3_FOREIGN = ("Lambda", "TFSMLayer", "JaxLayer", "FlaxLayer", "TorchModuleWrapper")
# Parts of a graph op's type that read or write files, print, or call Python (a SavedModel).
_RISKY_OPS = (
  "PyFunc",
  "File",
  "Save",
  "Restore",
  "Load",
  "Print",
  "Summary",
  "Dataset",
  "Reader",
  "Checkpoint",
  "Debug",
  "ImmutableConst",
  "Proto",
)


class UntrustedCodeError(errors.Error):
  """A model file whose loading would run code of its own (one line, naming the layer)."""


@functools.lru_cache(maxsize=1)
def _builtin_names():
  """The class names tf_keras deserializes as its own (minus `Lambda`)."""
  keras = keras2.keras()
  modules = (
    keras.layers,
    keras.layers.experimental,
    keras.layers.experimental.preprocessing,
    keras.initializers,
    keras.regularizers,
    keras.constraints,
    keras.losses,
    keras.metrics,
    keras.optimizers,
    keras.optimizers.legacy,
    keras.optimizers.experimental,
    keras.optimizers.schedules,
    keras.mixed_precision,
    keras.models,
  )
  found = set()
  for module in modules:
    for name, value in vars(module).items():
      if isinstance(value, type):
        found.update((name, value.__name__))
  optimizers = {n for n, v in vars(keras.optimizers).items() if isinstance(v, type)}
  found.update(f"Custom>{name}" for name in optimizers)  # how .h5 files name built-in ones
  found.update(f"{name}V2" for name in vars(keras.initializers) if name[:1].isupper())
  found.update(
    (
      "Functional",
      "TFOpLambda",
      "SlicingOpLambda",
      "ClassMethod",
      "InstanceMethod",
      "InstanceProperty",
      "BatchNormalizationV1",
      "BatchNormalizationV2",
      "GRUV1",
      "GRUV2",
      "LSTMV1",
      "LSTMV2",
      "GRUCellV1",
      "GRUCellV2",
      "LSTMCellV1",
      "LSTMCellV2",
    )
  )
  found.discard("Lambda")
  return frozenset(found)


@functools.lru_cache(maxsize=1)
def _keras3_names():
  """The class names Keras 3 deserializes as its own (minus `_KERAS3_FOREIGN`)."""
  keras = keras3.keras()
  modules = (
    keras.layers,
    keras.initializers,
    keras.regularizers,
    keras.constraints,
    keras.losses,
    keras.metrics,
    keras.optimizers,
    keras.optimizers.schedules,
    keras.dtype_policies,
    keras.models,
  )
  found = {"Functional", "Sequential", "Model"}
  for module in modules:
    found.update(name for name, value in vars(module).items() if isinstance(value, type))
  return frozenset(found - set(_KERAS3_FOREIGN))


def _keras_module(module):
  return module is None or any(
    module == m or module.startswith(m + ".") for m in ("keras", "tf_keras")
  )


def _refusal(node, builtin):
  """Why the serialized object `node` (a dict with "class_name") would run code, or None."""
  cls = node["class_name"]
  if cls in _DATA:
    return None
  if cls == "Lambda":
    return "runs Python code stored in the model file"
  if (
    not isinstance(cls, str)
    or cls not in builtin
    or not _keras_module(node.get("module"))
    or node.get("registered_name") not in (None, cls)
  ):
    return "is not a built-in Keras class: loading it runs the model's own code"
  function = (node.get("config") or {}).get("function") if cls in _TF_OP_LAYERS else None
  if isinstance(function, str):
    parts = function.lower().split(".")
    if set(parts) & set(_RISKY_TF) or any(word in parts[-1] for word in _RISKY_TF_WORDS):
      return f"calls tf.{function}"
  return None


def _name(node):
  config = node.get("config")
  name = config.get("name") if isinstance(config, dict) else None
  return name if isinstance(name, str) else node.get("name")


def _what(node, layer):
  """How a refusal names `node`: "layer 'evil' (Lambda)", "MyInit in layer 'dense'"."""
  name, cls = _name(node), node["class_name"]
  if isinstance(name, str):
    return f"layer {name!r} ({cls})"
  return f"{cls} in layer {layer!r}" if layer else f"object {cls}"


def _first_refusal(config, builtin):
  """(what, why) of the first object of the JSON `config` that would run code, or None."""
  stack = [(config, None)]
  while stack:
    node, layer = stack.pop()
    if isinstance(node, dict):
      if "class_name" in node:
        why = _refusal(node, builtin)
        if why:
          return _what(node, layer), why
        layer = _name(node) if isinstance(_name(node), str) else layer
      stack.extend((value, layer) for value in reversed(list(node.values())))
    elif isinstance(node, list):
      stack.extend((value, layer) for value in reversed(node))
  return None


def _json(text):
  return json.loads(text.decode("utf-8") if isinstance(text, bytes) else text)


def _saved_model(path):
  """The JSON metadata of every Keras object of the SavedModel directory `path`."""
  metadata = filesystem.join(path, "keras_metadata.pb")
  if filesystem.exists(metadata):
    proto = keras2.keras().protobuf.saved_metadata_pb2.SavedMetadata()
    proto.ParseFromString(fileio.read_bytes(metadata))
    return [_json(node.metadata) for node in proto.nodes]
  from tensorflow.core.protobuf import saved_model_pb2

  proto = saved_model_pb2.SavedModel()
  proto.ParseFromString(fileio.read_bytes(filesystem.join(path, "saved_model.pb")))
  return [
    _json(node.user_object.metadata)
    for graph in proto.meta_graphs
    for node in graph.object_graph_def.nodes
    if node.WhichOneof("kind") == "user_object"
    and node.user_object.identifier.startswith("_tf_keras")
    and node.user_object.metadata
  ]


def _configs(path, compiled):
  """The JSON configurations tf_keras would deserialize when loading `path` (as it decides
  the format: `tf_keras.saving.load_model`)."""
  if filesystem.isdir(path):
    return _saved_model(path)
  with filesystem.open_file(path, "rb") as f:
    if str(path).endswith(".keras") and zipfile.is_zipfile(f):
      with zipfile.ZipFile(f) as archive:
        config = _json(archive.read("config.json"))
      if not compiled and isinstance(config, dict):
        config.pop("compile_config", None)
      return [config]
    import h5py

    f.seek(0)
    with h5py.File(f, "r") as h5:
      keys = ("model_config", "training_config") if compiled else ("model_config",)
      return [_json(h5.attrs[key]) for key in keys if key in h5.attrs]


def _graph_ops(path):
  """[(op type, node name)] the `serving_default` signature of SavedModel `path` runs."""
  from tensorflow.core.protobuf import saved_model_pb2

  proto = saved_model_pb2.SavedModel()
  proto.ParseFromString(fileio.read_bytes(filesystem.join(path, "saved_model.pb")))
  found = []
  for graph in proto.meta_graphs:
    signature = graph.signature_def.get(model_files.SERVING)
    if signature is None:
      continue
    library = {f.signature.name: f for f in graph.graph_def.library.function}
    nodes = {node.name: node for node in graph.graph_def.node}
    todo = [t.name.split(":")[0] for t in signature.outputs.values()]
    seen, functions = set(), []
    while todo:  # the graph's nodes feeding the outputs
      name = todo.pop().lstrip("^").split(":")[0]
      if name in seen or name not in nodes:
        continue
      seen.add(name)
      found.append((nodes[name].op, name))
      functions.extend(_called(nodes[name]))
      todo.extend(nodes[name].input)
    done = set()
    while functions:  # every function they call, whole
      fname = functions.pop()
      if fname in done or fname not in library:
        continue
      done.add(fname)
      for node in library[fname].node_def:
        found.append((node.op, node.name))
        functions.extend(_called(node))
  return found


def _called(node):
  """Names of the functions a graph node's attributes name (calls, branches, bodies)."""
  out = []
  for value in node.attr.values():
    if value.HasField("func"):
      out.append(value.func.name)
    out.extend(f.name for f in value.list.func)
  return out


def _check_graph(path):
  """Raises `UntrustedCodeError` if the serving signature of SavedModel `path` runs an op of
  `_RISKY_OPS` (one without that signature is refused when loaded, `model_files`)."""
  try:
    ops = _graph_ops(path)
  except Exception as e:  # protobuf, file errors
    raise UntrustedCodeError(
      f"cannot load reference {path}: cannot read its graph ({errors.one_line(e, 300)})"
    ) from e
  for op, name in ops:
    if any(part in op for part in _RISKY_OPS):
      raise UntrustedCodeError(
        f"reference {path}: its {model_files.SERVING} signature runs op "
        f"{op} ({name!r}), which reads or writes files, prints or calls "
        f"Python; refused unless {FLAG}"
      )


def check(path, compiled=False, kind=None):
  """Raises `UntrustedCodeError` if loading the Keras model `path` would run code of its own.

  Args:
    path: a `.keras` / `.h5` file or a SavedModel directory (`imported.kind` "keras").
    compiled: the model is to be loaded compiled (its loss, metrics and optimizer are read).
    kind: its `model_files.KINDS` kind (None: `model_files.detect`); "keras3" is checked
      against Keras 3's classes, "saved_model" by its graph's ops (`_check_graph`).

  Raises:
    UntrustedCodeError: a `Lambda` layer, an object of a class that is not a built-in Keras
      class, or a TensorFlow function that touches files or Python (one line, naming the layer
      and `--trust_model_code`); a configuration that cannot be read ("cannot load").
  """
  kind = kind or model_files.detect(path)
  if kind == "saved_model":
    _check_graph(path)
    return
  try:
    configs = _configs(path, compiled)
  except Exception as e:  # h5py, zipfile, protobuf, JSON errors
    raise UntrustedCodeError(
      f"cannot load reference {path}: cannot read its model "
      f"configuration ({errors.one_line(e, 300)})"
    ) from e
  builtin = _keras3_names() if kind == "keras3" else _builtin_names()
  for config in configs:
    found = _first_refusal(config, builtin)
    if found:
      what, why = found
      raise UntrustedCodeError(
        f"reference {path}: {what} {why}; refused unless {FLAG} "
        "(runs the model's own Python code while loading it)"
      )
