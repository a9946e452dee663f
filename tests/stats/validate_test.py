"""Bad input -> one-line StatsInputError (a ValueError) naming the problem."""

import numpy as np
import pandas as pd
import pytest

from tf_forget.stats import accuracy
from tf_forget.stats import cie
from tf_forget.stats import class_level
from tf_forget.stats import exemplars
from tf_forget.stats import subgroups
from tf_forget.stats import validate

LABELS = np.array([0, 1, 2, 1])
PREDS = np.array([[0, 1, 2, 2], [0, 1, 1, 1]])


def _raises(fn, match):
  with pytest.raises(validate.StatsInputError, match=match) as info:
    fn()
  msg = str(info.value)
  assert "\n" not in msg
  assert isinstance(info.value, ValueError)


def test_mismatched_example_counts():
  _raises(lambda: accuracy.top1_accuracy(PREDS[:, :3], LABELS), "3 examples but labels have 4")


def test_labels_out_of_range():
  _raises(
    lambda: accuracy.per_class_recall(PREDS, LABELS, num_classes=2),
    "label 2 out of range for num_classes=2",
  )
  _raises(lambda: accuracy.top1_accuracy(PREDS - 1, LABELS), "negative label")


def test_empty_population_and_empty_labels():
  _raises(lambda: accuracy.top1_accuracy(np.zeros((0, 4), int), LABELS), "empty population")
  _raises(lambda: validate.check_labels([]), "empty")


def test_nan_and_fractions():
  bad = PREDS.astype(float)
  bad[0, 1] = np.nan
  _raises(lambda: accuracy.top1_accuracy(bad, LABELS), "predictions contains NaN")
  _raises(lambda: accuracy.top1_accuracy(PREDS + 0.5, LABELS), "non-integer")
  _raises(lambda: validate.check_finite([1.0, np.nan], "recall"), "recall contains NaN")


def test_wrong_rank():
  _raises(lambda: accuracy.top1_accuracy(LABELS, LABELS), "must be 2-D")
  _raises(lambda: accuracy.topk_accuracy(PREDS, LABELS), "must be 3-D")
  _raises(lambda: accuracy.topk_accuracy(PREDS[:, :, None], LABELS, k=5), "fewer than k=5")


def test_unequal_populations_where_pairing_is_required():
  a = np.zeros((3, 4), int)
  b = np.zeros((2, 4), int)
  _raises(lambda: cie.taxicab_distance(a, b), "3 members but predictions_t has 2")
  _raises(
    lambda: class_level.relative_recall_difference(np.ones((3, 2)), np.ones((2, 2))),
    "needs equal populations",
  )


def test_mismatched_examples_between_populations():
  _raises(
    lambda: exemplars.pruning_identified_exemplars(PREDS, PREDS[:, :3]),
    "3 examples but labels have 4",
  )


def test_attributes():
  _raises(lambda: validate.check_attributes({"Male": [1, 0, 1]}, 4), "shape")
  _raises(lambda: validate.check_attributes({"Male": [1, 0, 2, 1]}, 4), "other than 0/1")
  _raises(lambda: validate.check_attributes({"Male": [1, 0, np.nan, 1]}, 4), "NaN")
  _raises(lambda: validate.check_attributes([1, 0], 4), "DataFrame or a dict")
  _raises(lambda: validate.check_attributes({}, 4), "no attributes")
  _raises(
    lambda: subgroups.subgroup_masks({"Male": [1, 0, 1, 1]}, 4), "protected attribute 'Young'"
  )
  ok = validate.check_attributes(pd.DataFrame({"Male": [1, 0, 1, 1]}), 4)
  np.testing.assert_array_equal(ok["Male"], [True, False, True, True])


def test_bad_options():
  r = np.full((3, 2), 0.5)
  a = np.full(3, 0.5)
  _raises(lambda: class_level.welch_class_test(r, a, r, a, center="median"), "center")
  _raises(lambda: class_level.welch_class_test(r, a, r, a, correction="holm"), "correction")
  _raises(lambda: class_level.welch_class_test(r[:1], a[:1], r, a), "at least 2 members")
