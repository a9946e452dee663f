"""The gates and verdict without labels (docs/spec.md §8.9), on predictions made here.

A file that swaps classes 3 and 8 on two images each out of 500 keeps its overall flip rate at
0.8% and both classes' shares as they were (the share test sees nothing), but class 3's flip rate
is 2 / 50 = 4% and, the reference being sure of those images, its confident flips 0.8%: the
per-class and confident-flip gates catch it. The summaries are laid out as
`tf_forget.report.unlabelled_audit` lays them out, from `tf_forget.stats` (pure python: no
TensorFlow).
"""

import numpy as np
import pytest

from tf_forget.policy import gate_inputs
from tf_forget.policy import gates as gates_lib
from tf_forget.policy import unlabelled_gates
from tf_forget.stats import unlabelled
from tf_forget.stats import unlabelled_confidence


def _swap_summary():
  a = np.repeat(np.arange(10), 50)
  b = a.copy()
  b[[150, 151]] = 8  # two 3s become 8s
  b[[400, 401]] = 3  # two 8s become 3s
  logits = np.full((500, 10), -5.0)
  logits[np.arange(500), a] = 5.0  # the reference is sure of every image
  rate = unlabelled.flip_rate(a, b)
  shift = unlabelled.per_class_shift(unlabelled.class_transitions(a, b, 10))
  sure = unlabelled_confidence.confident_flips(logits, b)
  worst = int(np.argmax(shift["flip_rate"]))
  return {
    "design": unlabelled_gates.DESIGN,
    "n": rate["n"],
    "flips": rate["flips"],
    "flip_rate": rate["flip_rate"],
    "flip_low": rate["low"],
    "flip_high": rate["high"],
    "worst_class": str(worst),
    "worst_class_flip_rate": float(shift["flip_rate"][worst]),
    "worst_class_flips": int(shift["left"][worst]),
    "worst_class_n": int(shift["n"][worst]),
    "confident_flips": sure["flips"],
    "confident_flip_rate": sure["rate"],
    "confident_threshold": sure["threshold"],
    "kl_mean": 0.01,
  }, shift


def test_an_even_swap_is_caught_by_class_and_confident_gates_not_by_the_flip_rate():
  s, shift = _swap_summary()
  assert s["flip_rate"] == pytest.approx(0.008) and not shift["significant"].any()
  gates = gates_lib.Gates(
    max_flip_rate=0.01, max_class_flip_rate=0.03, max_confident_flip_rate=0.005
  )
  passed, reasons = gates_lib.verdict("user_swap", s, gates)  # dispatched by the design
  assert not passed
  assert reasons == [
    "class 3: flip rate 4.00% (2 of 50 images the reference gives it; max 3.00%)",
    "confident flips 0.80% (4 of 500 images, reference confidence >= 0.9; max 0.50%)",
  ]
  assert gate_inputs.gate_measures("user_swap", s, {}, {}) is s  # no labelled measure added


def test_the_verdict_takes_the_defaults_where_no_gate_is_set():
  s, _ = _swap_summary()
  assert gates_lib.verdict("user_swap", s, gates_lib.Gates()) == (True, [])
  like, reasons = unlabelled_gates.decides_like(s, gates_lib.Gates())  # class bound 5%: passes
  assert not like and reasons == [
    "confident flips 0.80% (4 of 500 images, reference confidence >= 0.9; max 0.50%)"
  ]
  looser = gates_lib.Gates(max_confident_flip_rate=0.01)
  assert unlabelled_gates.decides_like(s, looser) == (True, [])
  assert unlabelled_gates.bounds(looser) == {
    "max_flip_rate": 0.01,
    "max_class_flip_rate": 0.05,
    "max_confident_flip_rate": 0.01,
  }


def test_an_undefined_measure_fails_its_gate():
  s, _ = _swap_summary()
  s["confident_flip_rate"] = None
  passed, reasons = unlabelled_gates.verdict("x", s, gates_lib.Gates(max_confident_flip_rate=0.1))
  assert not passed and reasons[0].startswith("gate max_confident_flip_rate could not be evaluated")


@pytest.mark.parametrize(
  "gates, unlabelled_data, message",
  [
    (gates_lib.Gates(max_accuracy_drop=0.01), True, "--max_accuracy_drop needs labels"),
    (gates_lib.Gates(max_significant_classes=0), True, "--max_significant_classes needs labels"),
    (gates_lib.Gates(max_class_flip_rate=0.1), False, "--max_class_flip_rate gates an audit"),
  ],
)
def test_gates_the_data_cannot_evaluate_are_refused(gates, unlabelled_data, message):
  with pytest.raises(unlabelled_gates.GateError, match=message):
    unlabelled_gates.check(gates, unlabelled_data)
  unlabelled_gates.check(gates_lib.Gates(max_flip_rate=0.01, max_kl=1), unlabelled_data)
