"""The recipe "A TFLite format" (docs/architecture.md) acted out: one record added to the table.

`tests/extra_format.py` adds the record `int8_float_io` to `tflite_formats.FORMATS` for the test;
through the real functions, the format's name joins the name grammar, its converter options are
the record's, the report draws its plain and sparse files in the record's styles, and the cost
plan of the user's files counts it in its cost class and conversion factor.
(`tests/export/add_format_test.py` converts a model to it.)
"""

import types

import numpy as np
import pytest

from tests import extra_format
from tf_forget.artifacts import names
from tf_forget.artifacts import tflite_formats
from tf_forget.export import formats
from tf_forget.pipeline import user_costs
from tf_forget.report import palette


@pytest.fixture
def fmt(monkeypatch):
  return extra_format.add(monkeypatch)


def test_the_table_does_not_have_it_without_the_record():
  assert extra_format.NAME not in names.FORMAT_NAMES
  with pytest.raises(names.FormatError, match="unknown TFLite format 'int8_float_io'"):
    names.check_format(extra_format.NAME)


def test_its_name_joins_the_grammar(fmt):
  assert names.parse_formats(f"float32,{fmt}") == ["float32", fmt]
  variant = names.parse_variant(f"prune_0.9+{fmt}+sparse")
  assert (variant.member_variant, variant.format, variant.encoding) == ("prune_0.9", fmt, "sparse")
  assert variant.file_stem == f"{fmt}+sparse"
  assert names.family(f"prune_0.9+{fmt}") == "prune_0.9" and names.family(fmt) == "dense"


def test_its_converter_options_are_the_record(fmt):
  assert formats.options(fmt) == dict(
    optimize=True,
    supported_types=(),
    int8_only=True,
    io_type=None,
    representative=True,
    int16x8=False,
  )
  assert tflite_formats.get(fmt).options == {
    key: value for key, value in formats.options(fmt).items() if key != "int16x8"
  }


def test_the_report_draws_it_in_its_style(fmt):
  variants = [
    "dense",
    fmt,
    f"{fmt}+sparse",
    "prune_0.9",
    f"prune_0.9+{fmt}",
    f"prune_0.9+{fmt}+sparse",
  ] + [f for f in names.FORMAT_NAMES if f != fmt]
  styles = palette.styles(variants)  # StyleError if two looked the same
  for name, style in (
    (fmt, extra_format.RECORD.plain),
    (f"{fmt}+sparse", extra_format.RECORD.sparse),
    (f"prune_0.9+{fmt}", extra_format.RECORD.plain),
    (f"prune_0.9+{fmt}+sparse", extra_format.RECORD.sparse),
  ):
    assert (styles[name]["hatch"], styles[name]["marker"], styles[name]["linestyle"]) == (
      style.hatch,
      style.marker,
      style.linestyle,
    )
  assert styles[fmt]["color"] == styles["dense"]["color"]
  assert styles[f"prune_0.9+{fmt}"]["color"] == styles["prune_0.9"]["color"]


def test_the_cost_plan_counts_it_in_its_class(fmt):
  # A Keras reference with one 100 x 10 dense kernel: 1000 MACs per image, 1010 parameters.
  layer = types.SimpleNamespace(
    kernel=np.zeros((100, 10)), output=types.SimpleNamespace(shape=(None, 10))
  )
  model = types.SimpleNamespace(layers=[layer], count_params=lambda: 1010)
  user = types.SimpleNamespace(references=("model.keras",), candidates=())
  dataset = types.SimpleNamespace(
    spec=types.SimpleNamespace(eval_split="test"), num_examples=lambda split: 1000
  )
  e = user_costs.user_estimate(user, dataset, (fmt,), (), keras_model=model)
  assert [(f.name, f.macs, f.integer) for f in e.files] == [
    ("float32", 1000, False),
    (fmt, 1000, True),
  ]
  assert e.conversions == 2 and e.analyses == 0
  base = user_costs.CONVERT_BASE + user_costs.CONVERT_PER_PARAMETER * 1010
  assert user_costs.convert_seconds(1010, fmt) == pytest.approx(1.5 * base)
  per_image = {
    c: user_costs.SECONDS_PER_IMAGE + 1000 * user_costs.SECONDS_PER_MAC[c]
    for c in ("float", "int8")
  }
  keras = 1000 * user_costs.KERAS_FACTOR * per_image["float"]
  assert e.seconds == pytest.approx(
    1000 * (per_image["float"] + per_image["int8"]) + keras + base + 1.5 * base
  )
