"""A TFLite format added for a test: one record in the format table, as docs/architecture.md's
recipe "A TFLite format" says.

`int8_float_io`: integer-only ops (int8 weights and activations, calibrated on representative
data) with float32 input and output, which the converter wraps in QUANTIZE / DEQUANTIZE ops —
a format no record of `tflite_formats.FORMATS` is, needing no converter setting the table lacks.
"""

from tf_forget.artifacts import names
from tf_forget.artifacts import tflite_formats

NAME = "int8_float_io"
RECORD = tflite_formats.Format(
  NAME,
  optimize=True,
  supported_types=(),
  int8_only=True,
  io_type=None,
  representative=True,
  cost_class="int8",
  convert_factor=1.5,
  plain=tflite_formats.Style("++", "2", (0, (2, 2))),
  sparse=tflite_formats.Style("++..", "3", (0, (2, 1, 1, 1))),
)


def add(monkeypatch):
  """Adds `RECORD` to the table for the test, and its name where importing `names` derives the
  format names from the table (`names.FORMAT_NAMES`); returns the format's name.

  Raises:
    tflite_formats.TableError: the extended table is refused (`tflite_formats.check`).
  """
  table = tflite_formats.FORMATS + (RECORD,)
  tflite_formats.check(table)
  monkeypatch.setattr(tflite_formats, "FORMATS", table)
  monkeypatch.setattr(names, "FORMAT_NAMES", tflite_formats.names(table))
  return NAME
