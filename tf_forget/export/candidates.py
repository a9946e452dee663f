"""The user's own `.tflite` files, audited exactly as they are.

`--candidate=NAME=PATH[,PATH...]`: the files a user's pipeline made (post-training
quantization, QAT, tfmot pruning, another converter), one per reference member. Each is stored
as an export of dense member k in the format `user_<NAME>` (`names.user_format`):

    <run>/tflite/dense/<k>/user_<NAME>.tflite   the user's bytes, unchanged (never re-converted)
    <run>/tflite/dense/<k>/user_<NAME>.json     the export JSON (docs/artifacts/tflite.md), last

so the evaluation, the report, the verdict and the bundle treat it like any exported file, and
the bundle ships the user's bytes (their sha256 is the JSON's). Its lineage is the sha256 of the
user's file (`inputs.file`): a candidate that changes on disk is stored again and its
predictions redone. A `.tflite` reference (a float file, no Keras model) is stored the same way
as the float32 file of dense member k (`import_reference_file`).

`check_signature` refuses, in one line, a file whose images or classes differ from the
reference's, a file with several inputs or outputs, or a non-image input. Inputs of any
common layout are accepted (`tf_forget.data.input_layout`): `[N, H, W, C]`, grey
`[N, H, W]`, channels-first `[N, C, H, W]`, float32 or quantized; the reference and its
candidates need only take the same images, not the same layout. `read` refuses a
truncated or corrupt file (`flatbuffer.verify`) and `check_float_reference` a
quantized file given as the reference (`reference_kind`).
"""

import os

from tf_forget.artifacts import errors
from tf_forget.artifacts import fileio
from tf_forget.artifacts import filesystem
from tf_forget.artifacts import hashing
from tf_forget.artifacts import lineage
from tf_forget.artifacts import names
from tf_forget.artifacts import tflite_json
from tf_forget.data import input_layout
from tf_forget.export import converter
from tf_forget.export import export
from tf_forget.export import export_state
from tf_forget.export import flatbuffer
from tf_forget.export import flatbuffer_graph


class CandidateError(errors.Error):
  """A user's `.tflite` file that cannot be audited as given (one line, naming the file)."""


def read(path):
  """The bytes of a user's `.tflite` file, checked to be a complete TFLite flatbuffer.

  Raises:
    CandidateError: missing, unreadable, not a `.tflite` file, or truncated or corrupt (every
      offset the parser reads is bounds-checked, `flatbuffer.verify`).
  """
  try:
    data = fileio.read_bytes(path)
  except errors.Error as e:
    raise CandidateError(f"cannot read {path}: {errors.one_line(e)}") from e
  try:
    flatbuffer.verify(data, str(path))
  except flatbuffer.TfliteFileError as e:
    raise CandidateError(str(e)) from e
  return data


def signature(data, path, output_index=None):
  """((H, W, C), classes) of a `.tflite` image classifier, from its flatbuffer.

  (H, W, C) is the image shape the data must have: the input's layout (`input_layout`: NHWC,
  grey NHW or channels-first NCHW; float32, or uint8 / int8 / int16 with its own quantization)
  says how those images are fed.

  Args:
    data, path: the file's bytes and its name (for errors).
    output_index: the class-score output of a file with several, in the file's own output
      order (`--output_index`; a converter may order a Keras model's outputs otherwise).

  Raises:
    CandidateError: several inputs, several outputs without `output_index`, an index out of
      range, a non-image input, or an output that is not [batch, classes] of float32 or a
      quantized type.
  """
  io = flatbuffer_graph.io_details(data)
  outputs = len(io["outputs"])
  if len(io["inputs"]) != 1:
    raise CandidateError(
      f"{path} has {len(io['inputs'])} inputs; a .tflite file is audited with one image input"
    )
  if output_index is None and outputs != 1:
    raise CandidateError(
      f"{path} has {outputs} outputs: choose the class scores with "
      "--output_index (in the file's output order)"
    )
  index = output_index or 0
  if not 0 <= index < outputs:
    raise CandidateError(f"{path}: --output_index={index} but it has {outputs} outputs")
  layout = input_layout_of(data, path)
  out = io["outputs"][index]["shape"]
  if len(out) != 2 or out[-1] < 1:
    raise CandidateError(f"{path}: output shape {out} is not [batch, classes]")
  try:
    input_layout.check_output(io["outputs"][index])
  except input_layout.LayoutError as e:
    raise CandidateError(f"{path}: {e}") from e
  return layout.image_shape, int(out[-1])


def input_layout_of(data, path):
  """The `input_layout.InputLayout` of a `.tflite` file's (first) input.

  Raises:
    CandidateError: an input no audit can feed (`input_layout.from_shape`), naming the file.
  """
  try:
    return input_layout.of_io(flatbuffer_graph.io_details(data)["inputs"][0])
  except input_layout.LayoutError as e:
    raise CandidateError(f"{path}: {e}") from e


def reference_kind(data):
  """What a `.tflite` file stores, read from its main subgraph's tensor types.

  Args:
    data: the bytes of a complete TFLite flatbuffer.

  Returns:
    None for a float32 file; otherwise "full-integer int16" / "full-integer uint8" /
    "full-integer int8" (activations of that type, in that order: a 16x8 file keeps int8
    weights, a uint8-I/O file int8 activations inside), "dynamic-range int8" (or uint8 /
    int16: quantized constants, float activations), or "float16-weight" (float16 constants,
    which DEQUANTIZE ops turn into float32 at load, or float16 activations).
  """
  tensors = flatbuffer_graph.graph(data).tensors
  activations = {t.dtype for t in tensors if not t.constant}
  constants = {t.dtype for t in tensors if t.constant}
  for dtype in ("int16", "uint8", "int8"):
    if dtype in activations:
      return f"full-integer {dtype}"
  for dtype in ("int8", "uint8", "int16"):
    if dtype in constants:
      return f"dynamic-range {dtype}"
  if "float16" in activations | constants:
    return "float16-weight"
  return None


def check_float_reference(data, path):
  """Raises `CandidateError` unless the `.tflite` file given as `--reference` is float32.

  A quantized reference would be audited as the "float32" file of the dense member (and
  shipped as one): the flag names the float model, a quantized file is a candidate.
  """
  kind = reference_kind(data)
  if kind is not None:
    raise CandidateError(
      f"--reference must be the float model; {path} is a {kind} file: give "
      f"it as --candidate=NAME={path}"
    )


def check_signature(path, got, want, what="the reference"):
  """Raises `CandidateError` unless `got` == `want` (((H, W, C), classes) pairs)."""
  if tuple(got[0]) != tuple(want[0]):
    raise CandidateError(f"{path} takes {tuple(got[0])} images but {what} takes {tuple(want[0])}")
  if got[1] != want[1]:
    raise CandidateError(f"{path} outputs {got[1]} classes but {what} outputs {want[1]}")


def status(run_dir, variant, k, path):
  """`lineage.Status` of a stored user file: its JSON records the current sha256 of `path` and
  the stored copy is intact."""
  stored, meta_path = export_state.export_paths(run_dir, variant, k)
  if not filesystem.exists(meta_path):
    return lineage.MISSING
  return lineage.status(
    lambda: tflite_json.read(meta_path),
    {"file": hashing.file_sha256(path)},
    "stored",
    extra=lambda meta: lineage.file_reason(stored, meta.get("sha256"), ".tflite", "stored"),
  )


def store(run_dir, variant, k, path, dataset, reference=None, output_index=None):
  """Stores the user's file `path` as the export `variant` of dense member k.

  Args:
    run_dir, variant, k: where (`variant`: a `names.Variant` of member "dense").
    path: the user's `.tflite` file.
    dataset: the audited `dataset_api.Dataset` (recorded).
    reference: the ((H, W, C), classes) the file must match (None: the data set's).
    output_index: the class-score output of a file with several (`signature`); recorded as
      the JSON's `output_index`, which the evaluation reads.

  Returns:
    The export JSON dict.

  Raises:
    CandidateError: see `read`, `signature`, `check_signature`.
    export_state.ExportError: the files cannot be written.
  """
  data = read(path)
  got = signature(data, path, output_index)
  want = reference or (tuple(dataset.spec.image_shape), dataset.spec.num_classes)
  check_signature(path, got, want, "the reference" if reference else "the data set")
  sha = hashing.sha256_bytes(data)
  meta = {
    "schema": tflite_json.SCHEMA,
    "variant": variant.name,
    "member_variant": variant.member_variant,
    "k": int(k),
    "format": variant.format,
    "encoding": variant.encoding,
    "source": {
      "file": filesystem.abspath(path),
      "sha256": sha,
      "kind": "user .tflite",
      "dataset": dataset.spec.name,
      "dataset_options": dict(dataset.spec.options),
    },
    "converter": None,
    "representative": None,
    "inputs": {"file": sha},
    "versions": converter.versions(),
    "sha256": sha,
    "size_bytes": flatbuffer.sizes(data),
    "sparsity": flatbuffer.weight_stats(data),
    "sparse_tensors": flatbuffer.sparse_tensors(data),
    "io": flatbuffer_graph.io_details(data),
    "output_index": output_index,
  }
  stored, meta_path = export_state.export_paths(run_dir, variant, k)
  filesystem.makedirs(os.path.dirname(stored))
  export.write_export(stored, meta_path, data, meta)
  return meta


def reference_variant():
  """The export a `.tflite` reference is stored as: the float32 file of the dense member."""
  return names.Variant(names.DENSE)


def candidate_variant(name):
  """The export of the user's candidate `name` (`user_<name>` of the dense member)."""
  return names.Variant(names.DENSE, names.user_format(name))
