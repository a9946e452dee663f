"""The TFLite format table: every record complete and its own, refused at once otherwise."""

import dataclasses

import pytest

from tf_forget.artifacts import names
from tf_forget.artifacts import tflite_formats

FULL_INT8 = tflite_formats.get("full_int8")


def test_the_names_are_the_tables():
  assert (
    names.FORMAT_NAMES
    == tflite_formats.names()
    == ("float32", "float16", "dynamic_int8", "full_int8")
  )
  tflite_formats.check(tflite_formats.FORMATS)


def test_each_record_holds_its_facts():
  # 000 §2.4 and appendix A: float16 weights, dynamic-range int8, full int8 with
  # representative data and int8 input / output; int8 weights compute in the int8 cost class.
  assert tflite_formats.get("float16").options["supported_types"] == ("float16",)
  assert FULL_INT8.options == dict(
    optimize=True, supported_types=(), int8_only=True, io_type="int8", representative=True
  )
  assert [f.integer for f in tflite_formats.FORMATS] == [False, False, True, True]
  assert [f.convert_factor for f in tflite_formats.FORMATS] == [1.0, 1.0, 1.0, 1.5]
  assert FULL_INT8.style("sparse") == tflite_formats.Style("xx..", "X", (0, (1, 1)))
  with pytest.raises(tflite_formats.TableError, match="no style for encoding 'gzip'"):
    FULL_INT8.style("gzip")
  with pytest.raises(KeyError):
    tflite_formats.get("int4")


def test_a_record_without_a_style_cannot_be_made():
  with pytest.raises(TypeError, match="sparse"):
    tflite_formats.Format(
      "int4",
      optimize=True,
      supported_types=(),
      int8_only=False,
      io_type=None,
      representative=False,
      cost_class="int8",
      convert_factor=1.0,
      plain=tflite_formats.Style("oo", "2", "-"),
    )


@pytest.mark.parametrize(
  "change, message",
  [
    (dict(name="full_int8"), "'full_int8' is in the table twice"),
    (dict(name="int8+sparse"), "bad TFLite format record"),
    (dict(name="int4", cost_class="int4"), "cost class 'int4' is not one of float, int8"),
    (dict(name="int4", supported_types=["int4"]), "supported_types must be a tuple"),
    (dict(name="int4", plain=None), "'int4' has no style for its plain files"),
    (dict(name="int4"), "'int4' \\(plain\\) would look like 'full_int8' \\(plain\\)"),
    (
      dict(
        name="int4",
        plain=tflite_formats.Style("oo", "2", "-"),
        sparse=tflite_formats.Style("...", "h", "-"),
      ),
      "'int4' \\(sparse\\) would look like 'float32' \\(sparse\\)",
    ),
  ],
)
def test_the_check_refuses_an_incomplete_or_clashing_record(change, message):
  table = tflite_formats.FORMATS + (dataclasses.replace(FULL_INT8, **change),)
  with pytest.raises(tflite_formats.TableError, match=message):
    tflite_formats.check(table)
