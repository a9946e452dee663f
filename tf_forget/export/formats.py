"""The converter options of every format a file is converted to (docs/spec.md §1.1).

A TFLite format's options are its record's in the format table (`tf_forget.artifacts
.tflite_formats`: `Format.options`, keys `optimize`, `supported_types`, `int8_only`, `io_type`,
`representative`); `options` adds those of the repairs that convert without a format of their
own (`full_int8~int16x8`, `full_int8~cle`) and the key `int16x8` they need. Audited variant
names join (member variant, format, encoding) with "+" (`prune_0.9+full_int8`, `float32+sparse`):
their grammar is `tf_forget.artifacts.names`.

Encodings: "plain" stores every weight, zeros included; "sparse" adds
`tf.lite.Optimize.EXPERIMENTAL_SPARSITY` to the converter's optimizations, which stores the
(pruned) constant weights in TFLite's compressed sparse format (`Tensor.sparsity`, CSR-like
`DimensionMetadata`). A sparse file is the "sparse-encoded twin" of the plain file of the same
member variant, format and member.
"""

from tf_forget.artifacts import names
from tf_forget.artifacts import tflite_formats


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
  full_int8 = tflite_formats.get(names.REPAIRED_FORMAT).options
  if kind == "int16x8":
    return dict(full_int8, int8_only=False, io_type="int16", int16x8=True)
  if kind == "cle":
    return dict(full_int8, int16x8=False)
  names.check_format(fmt)
  return dict(tflite_formats.get(fmt).options, int16x8=False)
