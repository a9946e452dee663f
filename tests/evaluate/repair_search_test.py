"""The auto repair's stopping rule (tf_forget/evaluate/repair_search.py), by hand.

Ten examples, two classes; float32 right on all but the last. A candidate that breaks examples
0-5 (six broken, none fixed: exact McNemar p = 2 * 0.5^6 = 0.03125 <= 0.05, more than 3
broken) forgot significantly; one that breaks 0-2 (p = 0.25) did not. Its flip rate is the
changed top-1 over n; its accuracy drop float32's top-1 minus its own.
"""

import numpy as np
import pytest

from tf_forget.evaluate import repair_search
from tf_forget.policy import gates

LABELS = np.array([0, 1] * 5)
REF_TOP1 = np.where(np.arange(10) < 9, LABELS, 1 - LABELS)


def _logits(top1):
  out = np.full((len(top1), 2), -2.0)
  out[np.arange(len(top1)), top1] = 2.0
  return out


def _measures(broken):
  top1 = REF_TOP1.copy()
  top1[list(broken)] = 1 - LABELS[list(broken)]
  return repair_search.measures(LABELS, REF_TOP1, _logits(REF_TOP1), _logits(top1), 2)


def test_measures_by_hand():
  m = _measures(range(6))
  assert (m["n"], m["broken"], m["fixed"], m["changed"]) == (10, 6, 0, 0)
  assert m["flip_rate"] == pytest.approx(0.6)
  assert m["accuracy_drop"] == pytest.approx(0.9 - 0.3)
  assert m["p"] == pytest.approx(2 * 0.5**6)
  # softmax([2, -2]) vs softmax([-2, 2]): KL = (p - q) log(p / q), p = 1 / (1 + e^-4)
  p = 1 / (1 + np.exp(-4.0))
  kl = p * np.log(p / (1 - p)) + (1 - p) * np.log((1 - p) / p)
  assert m["kl"] == pytest.approx(0.6 * kl, rel=1e-9)


def test_a_candidate_holds_only_when_it_forgot_nothing_significant_and_passes_the_gates():
  assert repair_search.failures(_measures(range(6)), {})[0].startswith("forgot significantly")
  small = _measures(range(3))
  assert repair_search.failures(small, {}) == []
  assert repair_search.failures(small, {"max_flip_rate": 0.3}) == []
  assert repair_search.failures(small, {"max_flip_rate": 0.2}) == ["flip_rate 0.3 > 0.2"]


def test_settings_keep_only_the_gates_a_half_can_measure():
  g = gates.Gates(max_accuracy_drop=0.01, max_subgroup_fnr_increase=0.1, max_kl=0.5)
  assert repair_search.settings(g, 1.5, seed=3) == {
    "gates": {"max_accuracy_drop": 0.01, "max_kl": 0.5},
    "max_size": 1.5,
    "seed": 3,
  }
  assert repair_search.settings(None, 2)["gates"] == {}
