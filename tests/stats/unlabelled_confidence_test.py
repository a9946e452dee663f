"""Audits without labels, from the logits: confidence bins, confident flips, confidence change.

Golden values are computed independently: softmax probabilities with `scipy.special.softmax`,
KL with `scipy.stats.entropy(p, q)`, Clopper–Pearson limits from `scipy.stats.beta.ppf`, the
mean's interval with `scipy.stats.t.interval` and `scipy.stats.sem`, bin and flip counts by
hand. The planted case: a file that moves confident images of class 3 to class 5 (and a few
back) while its overall flip rate stays below 1%: the per-class test flags exactly classes 3
and 5 after Benjamini–Hochberg, and the confident flips are exactly the planted ones.
"""

import numpy as np
import pytest
from scipy import special
from scipy import stats

from tf_forget.stats import divergence
from tf_forget.stats import unlabelled
from tf_forget.stats import unlabelled_confidence as uc
from tf_forget.stats import validate


def _beta_interval(k, n, confidence=0.95):
  """Clopper–Pearson limits from the beta quantiles (Clopper & Pearson 1934)."""
  alpha = 1 - confidence
  low = 0.0 if k == 0 else stats.beta.ppf(alpha / 2, k, n - k + 1)
  high = 1.0 if k == n else stats.beta.ppf(1 - alpha / 2, k + 1, n - k)
  return low, high


# Reference logits = log of these probabilities, so softmax gives them back; row 7 has
# confidence exactly 1 (exp(−1000) is 0 in float64).
PROBS = [
  (0.40, 0.35, 0.25),  # 0: conf 0.40, bin [0, 0.5), a = 0
  (0.45, 0.30, 0.25),  # 1: 0.45, [0, 0.5), a = 0, flipped
  (0.20, 0.60, 0.20),  # 2: 0.60, [0.5, 0.8), a = 1
  (0.10, 0.20, 0.70),  # 3: 0.70, [0.5, 0.8), a = 2, flipped
  (0.85, 0.10, 0.05),  # 4: 0.85, [0.8, 0.95), a = 0
  (0.04, 0.91, 0.05),  # 5: 0.91, [0.8, 0.95), a = 1, flipped, confident
  (0.97, 0.02, 0.01),  # 6: 0.97, [0.95, 1], a = 0, confident
  None,  # 7: 1.00, [0.95, 1], a = 2, flipped, confident
  (0.92, 0.04, 0.04),  # 8: 0.92, [0.8, 0.95), a = 0, flipped, confident
]
LOGITS = np.array([np.log(p) if p else (0.0, 0.0, 1000.0) for p in PROBS])
A = [0, 0, 1, 2, 0, 1, 0, 2, 0]
B = [0, 1, 1, 0, 0, 2, 0, 1, 2]  # flips at 1, 3, 5, 7, 8


def test_reference_confidence_is_the_softmax_max():
  top, conf = uc.reference_confidence(LOGITS)
  assert top.tolist() == A
  np.testing.assert_allclose(conf, special.softmax(LOGITS, axis=1).max(axis=1), rtol=1e-12)
  assert conf[7] == 1.0
  top, conf = uc.reference_confidence([[1.0, 1.0, 0.0]])  # a tie goes to the first class
  assert top.tolist() == [0] and conf[0] == pytest.approx(np.e / (2 * np.e + 1))


def test_reference_confidence_in_chunks_names_the_row(monkeypatch):
  rng = np.random.default_rng(3)
  x = rng.normal(size=(7, 3)) * 4
  whole = uc.reference_confidence(x)
  monkeypatch.setattr(divergence, "CHUNK_CELLS", 6)  # 2 rows a chunk
  chunked = uc.reference_confidence(x)
  np.testing.assert_array_equal(whole[0], chunked[0])
  np.testing.assert_allclose(whole[1], chunked[1], rtol=1e-15)
  x[5, 1] = np.nan
  with pytest.raises(validate.StatsInputError, match=r"ref_logits contains NaN \(row 5\)"):
    uc.reference_confidence(x)


def test_flips_by_confidence_by_hand():
  df = uc.flips_by_confidence(LOGITS, B)
  assert list(df.index) == ["[0, 0.5)", "[0.5, 0.8)", "[0.8, 0.95)", "[0.95, 1]"]
  assert df["n"].tolist() == [2, 2, 3, 2] and df["flips"].tolist() == [1, 1, 2, 1]
  np.testing.assert_allclose(df["flip_rate"], [1 / 2, 1 / 2, 2 / 3, 1 / 2])
  np.testing.assert_allclose(df["share_of_flips"], [0.2, 0.2, 0.4, 0.2])
  for (k, n), low, high in zip([(1, 2), (1, 2), (2, 3), (1, 2)], df["low"], df["high"]):
    assert (low, high) == pytest.approx(_beta_interval(k, n), rel=1e-9)
  np.testing.assert_array_equal(df["low_edge"], [0, 0.5, 0.8, 0.95])


def test_flips_by_confidence_with_a_mask_and_other_edges():
  df = uc.flips_by_confidence(LOGITS, B, edges=(0, 0.9, 1), mask=[i != 7 for i in range(9)])
  # below 0.9: rows 0-4 (flips 1, 3); from 0.9: rows 5, 6, 8 (flips 5, 8)
  assert df["n"].tolist() == [5, 3] and df["flips"].tolist() == [2, 2]
  empty = uc.flips_by_confidence(LOGITS, B, edges=(0, 0.3, 1))
  assert empty["n"].tolist() == [0, 9] and np.isnan(empty["flip_rate"].iloc[0])


def test_confident_flips_by_hand():
  out = uc.confident_flips(LOGITS, B)
  # confident (≥ 0.9): rows 5, 6, 7, 8; flipped among them: 5, 7, 8
  assert (out["n"], out["confident"], out["flips"]) == (9, 4, 3)
  assert out["rate"] == pytest.approx(3 / 9) and out["rate_among_confident"] == 0.75
  assert (out["low"], out["high"]) == pytest.approx(_beta_interval(3, 9), rel=1e-9)
  want = _beta_interval(3, 4)
  assert (out["low_among_confident"], out["high_among_confident"]) == pytest.approx(want)
  assert out["indices"].tolist() == [7, 8, 5]  # by reference confidence 1.0, 0.92, 0.91
  only_sure = uc.confident_flips(LOGITS, B, threshold=1.0)
  assert (only_sure["confident"], only_sure["flips"]) == (1, 1)
  none = uc.confident_flips(LOGITS, B, mask=[False] * 9)
  assert none["n"] == 0 and np.isnan(none["rate"]) and np.isnan(none["rate_among_confident"])


def test_confidence_change_against_scipy_softmax():
  rng = np.random.default_rng(11)
  ref = rng.normal(size=(200, 5)) * 3
  cand = ref + rng.normal(size=ref.shape) * 0.5
  out = uc.confidence_change(ref, cand)
  p, q = special.softmax(ref, axis=1), special.softmax(cand, axis=1)
  a, i = ref.argmax(axis=1), np.arange(200)
  np.testing.assert_array_equal(out["reference_class"], a)
  np.testing.assert_allclose(out["before"], p[i, a], rtol=1e-12)
  np.testing.assert_allclose(out["after"], q[i, a], rtol=1e-9)
  np.testing.assert_allclose(out["change"], q[i, a] - p[i, a], atol=1e-12)
  s = out["change_summary"]
  change = q[i, a] - p[i, a]
  want = stats.t.interval(0.95, 199, loc=change.mean(), scale=stats.sem(change))
  assert s.n == 200 and s.mean == pytest.approx(change.mean(), abs=1e-12)
  assert (s.low, s.high) == pytest.approx(want, abs=1e-12)
  mask = a == 0
  masked = uc.confidence_change(ref, cand, mask=mask)["before_summary"]
  assert masked.n == mask.sum() and masked.mean == pytest.approx(p[i, a][mask].mean())


def test_kl_summary_against_scipy_entropy():
  rng = np.random.default_rng(5)
  ref, cand = rng.normal(size=(50, 4)), rng.normal(size=(50, 4))
  out = uc.kl_summary(ref, cand)
  want = stats.entropy(special.softmax(ref, axis=1), special.softmax(cand, axis=1), axis=1)
  np.testing.assert_allclose(out["kl"], want, rtol=1e-10)
  assert out["summary"].mean == pytest.approx(want.mean(), rel=1e-10)


def _planted(symmetric):
  """10 classes, 1000 images per reference class, 600 of them confident (logit margin 5:
  softmax max e⁵ / (e⁵ + 9) = 0.943) and 400 not (margin 1: e / (e + 9) = 0.232). The file
  moves 60 confident images 3 → 5 and 10 back 5 → 3 (symmetric: 35 each way), and 16
  unconfident images elsewhere (0→1, 1→2, 2→0, 4→6, 6→7, 7→8, 8→9, 9→4, two each)."""
  a = np.repeat(np.arange(10), 1000)
  confident = np.tile(np.arange(1000) < 600, 10)
  logits = np.zeros((10_000, 10))
  logits[np.arange(10_000), a] = np.where(confident, 5.0, 1.0)
  b = a.copy()
  to_5, to_3 = (35, 35) if symmetric else (60, 10)
  b[3000 : 3000 + to_5] = 5  # confident images of class 3
  b[5000 : 5000 + to_3] = 3  # confident images of class 5
  planted = np.r_[3000 : 3000 + to_5, 5000 : 5000 + to_3]
  for c, d in [(0, 1), (1, 2), (2, 0), (4, 6), (6, 7), (7, 8), (8, 9), (9, 4)]:
    b[c * 1000 + 900 : c * 1000 + 902] = d  # unconfident images (index ≥ 600 in the class)
  return a, b, logits, planted


def test_planted_confident_swap_is_found_below_one_percent_flips():
  a, b, logits, planted = _planted(symmetric=False)
  overall = unlabelled.flip_rate(a, b)
  assert overall["flips"] == 86 and overall["flip_rate"] < 0.01
  shift = unlabelled.per_class_shift(unlabelled.class_transitions(a, b, 10))
  assert np.flatnonzero(shift["significant"]).tolist() == [3, 5]
  assert (shift["left"][3], shift["entered"][3]) == (60, 10)
  out = uc.confident_flips(logits, b)
  assert (out["confident"], out["flips"]) == (6000, 70)
  assert sorted(out["indices"].tolist()) == planted.tolist()
  bins = uc.flips_by_confidence(logits, b)
  assert bins["flips"].tolist() == [16, 0, 70, 0]  # 0.232 and 0.943 confidences
  homogeneity = unlabelled.marginal_homogeneity(unlabelled.class_transitions(a, b, 10))
  assert homogeneity["stuart_maxwell"]["p_value"] < 1e-4
  assert homogeneity["bowker"]["p_value"] < 1e-4


def test_even_swap_keeps_shares_and_shows_in_the_class_flip_rate():
  # 35 each way: the shares of 3 and 5 do not change, so the share test cannot flag them
  # (p = 1) and the 3↔5 pair adds 0 to Bowker; the flip rates of 3 and 5 (35/1000) lie far
  # above the overall rate (86/10000), and the confident flips still count all 70.
  a, b, logits, _ = _planted(symmetric=True)
  shift = unlabelled.per_class_shift(unlabelled.class_transitions(a, b, 10))
  assert not shift["significant"].any() and shift["p_value"][3] == 1.0
  overall = unlabelled.flip_rate(a, b)["flip_rate"]
  assert shift["low"][3] > overall and shift["low"][5] > overall
  assert uc.confident_flips(logits, b)["flips"] == 70


@pytest.mark.parametrize(
  "call, match",
  [
    (lambda: uc.reference_confidence([0.1, 0.2]), "ref_logits must be 2-D"),
    (lambda: uc.reference_confidence(np.zeros((0, 3))), "ref_logits must be 2-D"),
    (lambda: uc.reference_confidence([["a", "b"]]), "must hold real numbers"),
    (lambda: uc.flips_by_confidence(LOGITS, B[:5]), "b has 5 examples but ref_logits 9"),
    (lambda: uc.flips_by_confidence(LOGITS, [3] * 9), "out of range for num_classes=3"),
    (lambda: uc.flips_by_confidence(LOGITS, B, edges=(0, 0.5)), "edges must increase from 0"),
    (lambda: uc.flips_by_confidence(LOGITS, B, edges=(0, 0.6, 0.5, 1)), "edges must increase"),
    (lambda: uc.flips_by_confidence(LOGITS, B, mask=[1, 0]), "mask has shape"),
    (lambda: uc.confident_flips(LOGITS, B, threshold=0), "threshold must be in"),
    (lambda: uc.confident_flips(LOGITS, B, threshold=1.5), "threshold must be in"),
    (lambda: uc.confidence_change(LOGITS, LOGITS[:, :2]), "cand_logits"),
    (lambda: uc.kl_summary(LOGITS, LOGITS, confidence=0), "confidence must be in"),
  ],
)
def test_bad_input_is_one_line(call, match):
  with pytest.raises(validate.StatsInputError, match=match) as e:
    call()
  assert "\n" not in str(e.value)
