"""The input scaling check's decision (`tf_forget.evaluate.scaling_evidence`), on made-up paired
correctness: no model, no TensorFlow.

Every case is built from counts of the paired 2x2 table (both right, fixed: right only under the
other preprocessing, broken: right only under the given one); the expected p-values are scipy's
binomial test of the discordant pairs, computed here, not by the code under test.
"""

import numpy as np
import pytest
from scipy import stats

from tf_forget.evaluate import scaling_evidence as evidence

CLASSES = 10


def _table(both, fixed, broken, neither):
  """(labels, given top-1, other top-1) with exactly these paired counts."""
  n = both + fixed + broken + neither
  labels = np.arange(n) % CLASSES
  wrong = (labels + 1) % CLASSES
  given_right = np.r_[np.ones(both + broken, bool), np.zeros(fixed + neither, bool)]
  other_right = np.r_[
    np.ones(both, bool), np.zeros(broken, bool), np.ones(fixed, bool), np.zeros(neither, bool)
  ]
  return labels, np.where(given_right, labels, wrong), np.where(other_right, labels, wrong)


def _mcnemar(fixed, broken):
  return stats.binomtest(min(fixed, broken), fixed + broken, 0.5).pvalue


def test_a_nine_point_gap_on_256_images_is_refused():
  """86% with raw pixels, 95% with unit on the same 256 images: 9.4 points, under a 10-point
  margin, but 24 images right only with unit and none the other way (p ~ 1e-7)."""
  labels, raw, unit = _table(both=220, fixed=24, broken=0, neither=12)
  decision = evidence.verdict(labels, {"raw": raw, "unit": unit}, "raw", CLASSES, last=False)
  assert decision.kind == "better" and decision.refused
  assert decision.other.name == "unit" and decision.n == 256
  assert decision.other.gain == pytest.approx(24 / 256) and decision.other.gain < 0.10
  assert decision.other.p_value == pytest.approx(_mcnemar(24, 0))
  assert decision.accuracy == pytest.approx({"raw": 220 / 256, "unit": 244 / 256})


def test_a_gain_needs_both_the_margin_and_significance_to_refuse():
  # 1.6 points, every discordant pair one way (p = 2 / 2^4): not refused, at any look.
  labels, given, other = _table(both=200, fixed=4, broken=0, neither=52)
  for last in (False, True):
    assert not evidence.verdict(
      labels, {"unit": given, "raw": other}, "unit", CLASSES, last=last
    ).refused
  # 3.9 points, but 10 of the 30 pairs the other way (p = 0.1): not refused.
  labels, given, other = _table(both=200, fixed=20, broken=10, neither=26)
  assert _mcnemar(20, 10) > evidence.ALPHA
  assert not evidence.verdict(labels, {"unit": given, "raw": other}, "unit", CLASSES).refused


def test_a_small_insignificant_gap_is_settled_without_a_caveat():
  # 2 more images right (0.8 points, p = 0.5): at 256 images a 2-point gain is not ruled out
  # (open), at the last look nothing is said.
  labels, given, other = _table(both=220, fixed=2, broken=0, neither=34)
  top1 = {"raw": given, "unit": other}
  assert evidence.verdict(labels, top1, "raw", CLASSES, last=False).kind == "open"
  assert evidence.verdict(labels, top1, "raw", CLASSES, last=True).kind == "fine"
  # The same preprocessing scoring lower, or predicting the same: settled at the first look.
  labels, given, other = _table(both=200, fixed=0, broken=30, neither=26)
  assert (
    evidence.verdict(labels, {"raw": given, "unit": other}, "raw", CLASSES, last=False).kind
    == "fine"
  )
  assert (
    evidence.verdict(labels, {"raw": given, "unit": given}, "raw", CLASSES, last=False).kind
    == "fine"
  )


def test_an_unclear_gain_at_the_last_look_is_a_caveat():
  # 10 points on 40 images (4 pairs, p = 0.125): large but not significant.
  labels, given, other = _table(both=36, fixed=4, broken=0, neither=0)
  decision = evidence.verdict(labels, {"raw": given, "unit": other}, "raw", CLASSES, last=True)
  assert decision.kind == "caveat" and not decision.refused
  assert decision.other.name == "unit" and decision.other.p_value == pytest.approx(0.125)
  # 1.2 points on 2048 images, every pair one way: significant but under the margin.
  labels, given, other = _table(both=1900, fixed=25, broken=0, neither=123)
  assert _mcnemar(25, 0) < evidence.ALPHA
  decision = evidence.verdict(labels, {"raw": given, "symmetric": other}, "raw", CLASSES)
  assert decision.kind == "caveat" and decision.other.name == "symmetric"


def test_the_highest_scoring_clearly_better_one_is_named():
  labels, given, unit = _table(both=100, fixed=100, broken=0, neither=56)
  _, _, symmetric = _table(both=100, fixed=60, broken=0, neither=96)
  decision = evidence.verdict(
    labels, {"raw": given, "symmetric": symmetric, "unit": unit}, "raw", CLASSES
  )
  assert decision.kind == "better" and decision.other.name == "unit"


def test_chance_is_refused_when_nothing_is_clearly_better():
  labels, given, other = _table(both=26, fixed=2, broken=0, neither=228)  # 10% and 11%
  decision = evidence.verdict(labels, {"symmetric": given, "raw": other}, "symmetric", CLASSES)
  assert decision.kind == "chance" and decision.refused and decision.other is None
  # At chance with raw pixels clearly better: the better one is named, not chance.
  labels, given, other = _table(both=26, fixed=200, broken=0, neither=30)
  decision = evidence.verdict(labels, {"unit": given, "raw": other}, "unit", CLASSES)
  assert decision.kind == "better" and decision.other.name == "raw"


def _grown(tables):
  """A `settle` sample function over {size: (labels, given, other)}, recording the sizes asked
  (a size missing from `tables`: the largest one, the whole split)."""
  asked = []

  def sample(size):
    asked.append(size)
    labels, given, other = tables.get(size, tables[max(tables)])
    return labels, {"raw": given, "unit": other}

  return sample, asked


def test_the_sample_grows_until_the_evidence_decides():
  # 256 images: 4.7 points, p = 0.01 (open); 512: 5.1 points, p < 0.001: refused there.
  sample, asked = _grown(
    {
      256: _table(both=220, fixed=16, broken=4, neither=16),
      512: _table(both=440, fixed=30, broken=4, neither=38),
    }
  )
  assert _mcnemar(16, 4) > evidence.ALPHA > _mcnemar(30, 4)
  decision = evidence.settle(sample, "raw", CLASSES)
  assert asked == [256, 512] and decision.kind == "better" and decision.n == 512
  # Decided at the first look: no more images read.
  sample, asked = _grown({256: _table(both=220, fixed=24, broken=0, neither=12)})
  assert evidence.settle(sample, "raw", CLASSES).kind == "better" and asked == [256]


def test_growth_stops_at_the_whole_split_and_at_the_cap():
  # A split of 360 images: the second look gets all of them and is the last.
  sample, asked = _grown(
    {
      256: _table(both=220, fixed=16, broken=4, neither=16),
      360: _table(both=310, fixed=20, broken=6, neither=24),
    }
  )
  decision = evidence.settle(sample, "raw", CLASSES)
  assert asked == [256, 512] and decision.n == 360
  assert decision.kind == "caveat" and _mcnemar(20, 6) > evidence.ALPHA
  # 1.6 points, p > 0.001 at 2048: open at every size until the cap decides (no caveat).
  tables = {
    n: _table(
      both=n * 3 // 4, fixed=n // 32, broken=n // 64, neither=n - n * 3 // 4 - n // 32 - n // 64
    )
    for n in (256, 512, 1024, 2048)
  }
  sample, asked = _grown(tables)
  decision = evidence.settle(sample, "raw", CLASSES)
  assert asked == [256, 512, 1024, 2048] == [n for n in tables if n <= evidence.MAX_SAMPLE]
  assert decision.kind == "fine" and decision.n == 2048 and _mcnemar(64, 32) > evidence.ALPHA
