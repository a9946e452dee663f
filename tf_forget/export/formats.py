"""TFLite formats and the variant names they produce (docs/spec.md §1.1).

The format registry is a plain dict `FORMATS`: name -> converter options (what
`converter.convert` sets on a `tf.lite.TFLiteConverter`). The formats are those of
000 §2.4 and appendix A ("float16", "hybrid" dynamic range int8 and "fixed-point" int8 with the
first 100 training examples as representative data, TFLite with MLIR), plus the float32
reference with no optimisation.

Variant names (docs/spec.md §1.1): a TFLite file is identified by (member variant, format,
encoding); its *audited variant name* joins the parts with "+", leaving out the defaults
(`prune_0.9+full_int8`, `float32+sparse`): the grammar and its table live in
`tf_forget.artifacts.names` (its one home).

Encodings: "plain" stores every weight, zeros included; "sparse" adds
`tf.lite.Optimize.EXPERIMENTAL_SPARSITY` to the converter's optimizations, which stores the
(pruned) constant weights in TFLite's compressed sparse format (`Tensor.sparsity`, CSR-like
`DimensionMetadata`). A sparse file is the "sparse-encoded twin" of the plain file of the same
member variant, format and member.
"""

from tf_forget.artifacts import names

# name -> converter options. Keys:
#   optimize: set `converter.optimizations = [tf.lite.Optimize.DEFAULT]`.
#   supported_types: names of tf dtypes for `converter.target_spec.supported_types`.
#   int8_only: `target_spec.supported_ops = [TFLITE_BUILTINS_INT8]` (fail rather than fall back
#     to float kernels).
#   io_type: dtype name of `inference_input_type` / `inference_output_type` (None: float32).
#   representative: whether the format needs a representative data set (docs/spec.md §2.5).
FORMATS = {
    "float32": dict(optimize=False, supported_types=(), int8_only=False, io_type=None,
                    representative=False),
    "float16": dict(optimize=True, supported_types=("float16",), int8_only=False, io_type=None,
                    representative=False),
    "dynamic_int8": dict(optimize=True, supported_types=(), int8_only=False, io_type=None,
                         representative=False),
    "full_int8": dict(optimize=True, supported_types=(), int8_only=True, io_type="int8",
                      representative=True),
}

if tuple(FORMATS) != names.FORMAT_NAMES:
  raise AssertionError("tf_forget.export.formats.FORMATS and artifacts.names.FORMAT_NAMES differ")


def options(fmt):
  """The converter options of format `fmt`, or of a repair that costs no bytes:
  `full_int8~int16x8` is full integer with 16-bit activations and 8-bit weights (TFLite's
  `EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8`, key `int16x8`) and int16
  input / output; `full_int8~cle` converts as `full_int8` (its model is equalized first,
  `tf_forget.export.equalization`).

  Raises:
    names.FormatError: any other name.
  """
  kind = names.repair_kind(fmt)
  if kind == "int16x8":
    return dict(FORMATS["full_int8"], int8_only=False, io_type="int16", int16x8=True)
  if kind == "cle":
    return dict(FORMATS["full_int8"], int16x8=False)
  names.check_format(fmt)
  return dict(FORMATS[fmt], int16x8=False)

