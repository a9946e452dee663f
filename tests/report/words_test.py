"""How the report says things in words (tf_forget/report/words/: `quantities`, `naming`,
`header`): rates that can be told from their gate's bound, class labels said once, ops named
distinctly, the audited data and files in words.

Expected strings are written out by hand from the rules in the module docstring.
"""

import pytest

from tf_forget.report.words import header
from tf_forget.report.words import naming
from tf_forget.report.words import quantities


@pytest.mark.parametrize(
  "fraction, text",
  [
    (0.0007, "0.07%"),
    (0.0015, "0.15%"),
    (0.0003, "0.03%"),
    (0.06, "6.0%"),
    (0.1234, "12.3%"),
    (0.0, "0%"),
    (1.0, "100.0%"),
    (None, "n/a"),
    (float("nan"), "n/a"),
  ],
)
def test_rates_keep_two_significant_digits(fraction, text):
  assert quantities.rate(fraction) == text


def test_rates_that_printed_alike_now_differ():
  # One decimal ('.1%') prints both 0.07% and 0.15% as "0.1%", and 3 flips of 10,000 as
  # "0.0%".
  assert f"{0.0007:.1%}" == f"{0.0015:.1%}" == "0.1%" and f"{3 / 10000:.1%}" == "0.0%"
  assert quantities.rate(0.0007) != quantities.rate(0.0015)
  assert quantities.rate(3 / 10000, 3, 10000) == "0.03% (3 of 10,000)"
  assert quantities.rate(0.2, 2000, 10000) == "20.0%"  # a large count is not repeated


def test_digits_grow_until_the_rate_differs_from_its_bound():
  assert quantities.rate(0.00149, bound=0.0015) == "0.149%"
  assert quantities.rate(0.0601, bound=0.06) == "6.01%"
  assert quantities.rate(0.045, bound=0.0449) == "4.50%"  # 4.5 vs 4.49: a second decimal
  assert quantities.rate(0.06, bound=0.05) == "6.0%"  # one decimal tells them apart already


def test_class_label_once_when_the_name_is_the_index():
  assert naming.class_label(3, "3") == "3" and naming.class_label(3) == "3"
  assert naming.class_label(3, "cat") == "cat (3)"
  assert naming.shown_label("3 (3)", 3) == "3" and naming.shown_label("cat (3)", 3) == "cat (3)"
  assert naming.shown_label("4", 4) == "4"


def test_ops_of_one_type_are_named_apart():
  rows = [
    {"op_name": "CONV_2D", "op_index": 0},
    {"op_name": "RESHAPE", "op_index": 2},
    {"op_name": "CONV_2D", "op_index": 1},
    {"op_name": "FULLY_CONNECTED", "op_index": 3},
  ]
  ordinals = naming.op_ordinals(rows)
  assert ordinals == {0: (1, 2), 1: (2, 2), 2: (1, 1), 3: (1, 1)}
  first = naming.op_label(
    "CONV_2D", "sequential/conv2d/Relu;sequential/conv2d/BiasAdd", ordinals[0]
  )
  second = naming.op_label(
    "CONV_2D", "sequential/conv2d_1/Relu;sequential/conv2d_1/Conv2D", ordinals[1]
  )
  assert first == "CONV_2D #1 (sequential/conv2d)"
  assert second == "CONV_2D #2 (sequential/conv2d_1)"
  # One op of its type: no number; a graph output without a layer path: no layer.
  assert naming.op_label("FULLY_CONNECTED", "StatefulPartitionedCall:0", ordinals[3]) == (
    "FULLY_CONNECTED"
  )


def test_title_and_header_in_words():
  options = {
    "path": "/data/user/images",
    "image_size": [8, 8],
    "channels": 1,
    "content": {"test": "ab" * 32},
    "calibration": {
      "name": "folder",
      "options": {"path": "/data/user/calib"},
      "content": "cd" * 32,
    },
  }
  assert header.title("folder", options, ["/data/user/model.keras"]) == (
    "tf_forget audit: model.keras on images/"
  )
  assert header.title("folder", options, ["a/m0.keras", "a/m1.keras"]) == (
    "tf_forget audit: m0.keras + 1 more on images/"
  )
  assert header.title("digits", {}) == "tf_forget audit: digits"
  user = {
    "references": ["/data/user/model.keras"],
    "candidates": {"int8": ["/data/user/int8.tflite"]},
    "compress": ["full_int8"],
  }
  rows = dict(header.rows("folder", options, "test", 10000, user))
  assert rows == {
    "your model": "model.keras",
    "your files": "int8: int8.tflite",
    "made here": "full_int8",
    "data set": "folder images/ (/data/user/images)",
    "image size": "8x8, 1 channel",
    "calibration": "folder calib/",
    "evaluation split": "test (10,000 examples)",
  }
  text = " ".join(f"{k}: {v}" for k, v in rows.items())
  assert "{" not in text and "content" not in text  # no Python dict, no hashes
  assert header.source_words("tfds", {"tfds_name": "mnist", "split": "test"}) == (
    "tfds mnist (test)"
  )
  assert header.source_words("tfrecord", {"pattern": "/d/*.rec"}) == "tfrecord /d/*.rec"
