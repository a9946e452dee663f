"""Output divergence of a compressed file from its reference.

Golden values by hand: softmax probabilities of planted logits and KL = Σ p ln(p / q) written
out in the comments; the summary of five values with the printed Student t quantile
t_{0.975, 4} = 2.776445 and numpy's linear percentile rule worked by hand. Independent
references: scipy.special.rel_entr / scipy.stats.entropy / scipy.special.log_softmax on
random logits, a naive per-class loop (numpy.mean, numpy.percentile, scipy.stats.t.interval),
and seeded simulations of the interval's coverage.
"""

import json

import numpy as np
import pytest
from scipy import special
from scipy import stats

from tf_forget.stats import divergence
from tf_forget.stats import paired
from tf_forget.stats import validate

LN3 = np.log(3.0)


def _json(x):
  """A `Summary`, or a list / dict of them, as JSON (NaN as None, so NaN equals NaN)."""
  if isinstance(x, dict):
    return {k: s.to_json() for k, s in x.items()}
  if isinstance(x, list):
    return [s.to_json() for s in x]
  return x.to_json()


def _same(got, want):
  return _json(got) == _json(want)


def _random_logits(seed, n=200, c=7, scale=3.0, noise=0.5, dtype=np.float64):
  rng = np.random.default_rng(seed)
  a = rng.normal(0.0, scale, (n, c))
  b = a + rng.normal(0.0, noise, (n, c))
  return a.astype(dtype), b.astype(dtype), rng.integers(0, c, n)


def test_kl_and_delta_p_by_hand_two_classes():
  # [0, 0] -> p = (1/2, 1/2); [0, ln 3] -> q = (1/4, 3/4).
  # KL = 1/2 ln((1/2)/(1/4)) + 1/2 ln((1/2)/(3/4)) = 1/2 ln 2 + 1/2 ln(2/3) = 1/2 ln(4/3)
  #    = 0.143841036225890
  ref, cand = [[0.0, 0.0], [0.0, 0.0]], [[0.0, LN3], [0.0, LN3]]
  np.testing.assert_allclose(
    divergence.kl_divergence(ref, cand), [0.143841036225890] * 2, rtol=1e-13
  )
  # y = 1: Δp = 3/4 − 1/2 = 0.25; y = 0: Δp = 1/4 − 1/2 = −0.25.
  np.testing.assert_allclose(
    divergence.true_class_probability_change(ref, cand, [1, 0]), [0.25, -0.25], rtol=1e-13
  )


def test_kl_by_hand_three_classes_and_its_direction():
  # [0, ln 2, 0] -> p = (1/4, 1/2, 1/4); [5, 5, 5] -> q = (1/3, 1/3, 1/3).
  # KL(p ‖ q) = 2 · 1/4 ln(3/4) + 1/2 ln(3/2) = 1/2 ln(9/8) = 0.058891517828192
  # KL(q ‖ p) = 2 · 1/3 ln(4/3) + 1/3 ln(2/3) = 1/3 ln(32/27) = 0.056633012265132
  ref, cand = [[0.0, np.log(2.0), 0.0]], [[5.0, 5.0, 5.0]]
  assert divergence.kl_divergence(ref, cand)[0] == pytest.approx(0.058891517828192, rel=1e-13)
  assert divergence.kl_divergence(cand, ref)[0] == pytest.approx(0.056633012265132, rel=1e-13)
  # y = 1: Δp = 1/3 − 1/2 = −1/6
  assert divergence.true_class_probability_change(ref, cand, [1])[0] == pytest.approx(-1 / 6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_kl_is_zero_for_equal_outputs_and_ignores_row_constants(dtype):
  a, b, _ = _random_logits(1, dtype=dtype)
  assert np.all(divergence.kl_divergence(a, a) == 0.0)
  shift = np.linspace(-50, 50, a.shape[0])[:, None]
  # Adding a constant to a row leaves its softmax unchanged: KL ≈ 0 (a + shift is rounded per
  # entry, by up to e = 2⁻¹⁹ = 1.9e-6 in float32 for |a + shift| < 64: KL ~ e²/2 ~ 1e-12).
  assert divergence.kl_divergence(a, (a + shift).astype(dtype)).max() < 1e-9
  # Shifted by up to ±155, the rounding of the logits themselves moves KL to first order:
  # up to 2⁻¹⁷ = 7.6e-6 per float32 entry in [128, 256) (a few times that in KL; 2.2e-6 seen),
  # 2⁻⁴⁶ = 1.4e-14 per float64 one.
  base = divergence.kl_divergence(a, b)
  shifted = divergence.kl_divergence((a - 3 * shift).astype(dtype), (b + shift).astype(dtype))
  np.testing.assert_allclose(shifted, base, rtol=1e-9, atol=3e-5 if dtype == np.float32 else 1e-12)


@pytest.mark.parametrize("seed, scale, noise", [(2, 3.0, 0.5), (3, 10.0, 5.0), (4, 1.0, 1e-3)])
def test_kl_agrees_with_scipy_and_is_nonnegative(seed, scale, noise):
  a, b, y = _random_logits(seed, n=300, c=11, scale=scale, noise=noise)
  kl = divergence.kl_divergence(a, b)
  p, q = special.softmax(a, axis=1), special.softmax(b, axis=1)
  np.testing.assert_allclose(kl, special.rel_entr(p, q).sum(axis=1), rtol=1e-9, atol=1e-15)
  np.testing.assert_allclose(kl, stats.entropy(p, q, axis=1), rtol=1e-9, atol=1e-15)
  assert kl.dtype == np.float64 and np.all(kl >= 0) and np.all(kl > 0)
  np.testing.assert_allclose(
    divergence.true_class_probability_change(a, b, y),
    q[np.arange(300), y] - p[np.arange(300), y],
    atol=1e-14,
  )
  np.testing.assert_array_equal(
    divergence.top1_agreement(a, b), a.argmax(axis=1) == b.argmax(axis=1)
  )


def test_float32_logits_are_computed_in_float64():
  a, b, _ = _random_logits(5, n=100, c=1000, noise=0.01, dtype=np.float32)
  # scipy on the same float32 values widened to float64: the module adds no float32 rounding.
  want = stats.entropy(
    special.softmax(a.astype(np.float64), axis=1),
    special.softmax(b.astype(np.float64), axis=1),
    axis=1,
  )
  np.testing.assert_allclose(divergence.kl_divergence(a, b), want, rtol=1e-9)


def test_row_chunks_give_the_same_numbers(monkeypatch):
  a, b, y = _random_logits(6, n=37, c=5)
  whole = divergence.divergence(a, b, y)
  monkeypatch.setattr(divergence, "CHUNK_CELLS", 12)  # 2 rows per chunk, the last one alone
  chunked = divergence.divergence(a, b, y)
  np.testing.assert_array_equal(chunked.kl, whole.kl)
  np.testing.assert_array_equal(chunked.delta_p, whole.delta_p)
  np.testing.assert_array_equal(chunked.agree, whole.agree)
  monkeypatch.setattr(divergence, "CHUNK_CELLS", 1)  # fewer cells than a row: one row a chunk
  np.testing.assert_array_equal(divergence.kl_divergence(a, b), whole.kl)


def test_memory_mapped_logits(tmp_path):
  a, b, y = _random_logits(7, dtype=np.float32)
  np.save(tmp_path / "a.npy", a)
  np.save(tmp_path / "b.npy", b)
  mapped = divergence.kl_divergence(
    np.load(tmp_path / "a.npy", mmap_mode="r"), np.load(tmp_path / "b.npy", mmap_mode="r")
  )
  np.testing.assert_array_equal(mapped, divergence.kl_divergence(a, b))


def test_huge_logits_stay_finite():
  # p = (1, e^−20000) = (1, 0), q = (0, 1) in float64: log p − log q = (20000, −20000), so
  # KL = 1 · 20000 + 0 = 20000 exactly; Δp for y = 0 is 0 − 1 = −1.
  for dtype in (np.float32, np.float64):
    ref = np.array([[1e4, -1e4]], dtype)
    cand = np.array([[-1e4, 1e4]], dtype)
    assert divergence.kl_divergence(ref, cand)[0] == 20000.0
    assert divergence.true_class_probability_change(ref, cand, [0])[0] == -1.0
  a, b, y = _random_logits(8, scale=1e4, noise=1e4, dtype=np.float32)
  out = divergence.divergence(a, b, y)
  assert np.isfinite(out.kl).all() and np.isfinite(out.delta_p).all()
  assert np.all(out.kl >= 0) and np.all(np.abs(out.delta_p) <= 1)


def test_log_softmax_agrees_with_scipy():
  a, _, _ = _random_logits(9, scale=50.0)
  np.testing.assert_allclose(
    divergence.log_softmax(a), special.log_softmax(a, axis=1), rtol=1e-12, atol=1e-12
  )
  assert np.isfinite(divergence.log_softmax([[1e4, -1e4]])).all()


def test_summarize_by_hand():
  # values 1, 2, 3, 4, 10: n = 5, mean = 20/5 = 4,
  # s² = (9 + 4 + 1 + 0 + 36) / 4 = 12.5, s/√n = sqrt(12.5 / 5) = 1.581139,
  # half-width = t_{0.975, 4} · 1.581139 = 2.776445 · 1.581139 = 4.389945.
  # Percentiles at h = (n − 1)·q between the sorted values: p50 h = 2 -> 3;
  # p90 h = 3.6 -> 4 + 0.6 · (10 − 4) = 7.6; p99 h = 3.96 -> 4 + 0.96 · 6 = 9.76; max 10.
  s = divergence.summarize([10.0, 2.0, 4.0, 1.0, 3.0])
  assert s.n == 5 and s.mean == pytest.approx(4.0)
  assert s.low == pytest.approx(4 - 4.389945, abs=2e-6)
  assert s.high == pytest.approx(4 + 4.389945, abs=2e-6)
  assert (s.p50, s.max) == (3.0, 10.0)
  assert s.p90 == pytest.approx(7.6) and s.p99 == pytest.approx(9.76)
  assert divergence.INTERVAL_METHOD == "student_t"


def test_summarize_mask_single_and_empty_selections():
  v = np.array([5.0, 1.0, 2.0, 7.0])
  masked = divergence.summarize(v, mask=[True, False, True, True])
  assert _same(masked, divergence.summarize([5.0, 2.0, 7.0]))
  one = divergence.summarize(v, mask=[0, 1, 0, 0])  # 0 / 1 masks are accepted
  assert (one.n, one.mean, one.p50, one.p99, one.max) == (1, 1.0, 1.0, 1.0, 1.0)
  assert np.isnan(one.low) and np.isnan(one.high)
  none = divergence.summarize(v, mask=np.zeros(4, dtype=bool))
  assert none.n == 0 and all(np.isnan(getattr(none, k)) for k in ("mean", "low", "p50", "max"))
  assert json.dumps(none.to_json(), allow_nan=False)  # strict JSON: NaN written as null
  assert none.to_json()["mean"] is None and one.to_json()["n"] == 1


@pytest.mark.parametrize(
  "draw, n",
  [
    (lambda rng, n: rng.normal(1.0, 2.0, n), 10),  # t interval exact: coverage 0.95
    # chi-square(1) (mean 1, skewness 2.8), shaped like per-example KL values; at n = 300 the
    # coverage is 0.945 (20,000 simulations), inside the band with 3 standard errors to spare.
    (lambda rng, n: rng.chisquare(1, n), 300),
  ],
)
def test_mean_interval_coverage_by_simulation(draw, n):
  rng = np.random.default_rng(29)
  hits = 0
  for _ in range(2000):
    s = divergence.summarize(draw(rng, n))
    hits += s.low <= 1.0 <= s.high
  assert 0.93 <= hits / 2000 <= 0.97


def test_summarize_by_class_equals_a_naive_loop():
  rng = np.random.default_rng(10)
  y = rng.integers(0, 6, 500)
  y[y == 4] = 0  # class 4 has no example
  y[17] = 5
  y[y == 5] = 3
  y[17] = 5  # class 5 has a single example
  values = rng.exponential(0.1, 500)
  got = divergence.summarize_by_class(values, y, num_classes=7)  # class 6: no example
  assert len(got) == 7 and [s.n for s in got] == [int((y == c).sum()) for c in range(7)]
  for c, s in enumerate(got):
    v = values[y == c]
    if v.size == 0:
      assert all(np.isnan(x) for x in (s.mean, s.low, s.high, s.p50, s.p90, s.p99, s.max))
      continue
    p50, p90, p99 = np.percentile(v, [50, 90, 99])
    np.testing.assert_allclose(
      [s.mean, s.p50, s.p90, s.p99, s.max], [v.mean(), p50, p90, p99, v.max()], rtol=1e-12
    )
    if v.size == 1:
      assert np.isnan(s.low) and np.isnan(s.high)
    else:
      low, high = stats.t.interval(0.95, v.size - 1, loc=v.mean(), scale=stats.sem(v))
      np.testing.assert_allclose([s.low, s.high], [low, high], rtol=1e-10)
    assert _same(s, divergence.summarize(values, mask=y == c))


def test_largest_breaks_ties_by_index():
  v = [1.0, 3.0, 3.0, 2.0, 3.0, -1.0]
  assert divergence.largest(v, 3).tolist() == [1, 2, 4]
  assert divergence.largest(v, 4).tolist() == [1, 2, 4, 3]
  assert divergence.largest(v, 10).tolist() == [1, 2, 4, 3, 0, 5]
  assert divergence.largest(v, np.int64(0)).tolist() == []


def test_divergence_end_to_end():
  #  example 0: equal outputs, right on both       -> KL 0, unchanged
  #  example 1: [0, 0, 0] -> candidate favors 1    -> a = 0 (first of a tie) right, b = 1: broken
  #  example 2: reference says 2, candidate 1 = y  -> fixed
  #  example 3: reference 0, candidate 2, y = 1    -> changed
  ref = [[5.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 1.0, 3.0], [2.0, 0.0, 0.0]]
  cand = [[5.0, 0.0, 0.0], [0.0, LN3, 0.0], [0.0, 4.0, 3.0], [0.0, 0.0, 2.0]]
  y = [0, 0, 1, 1]
  groups = {"first_two": [True, True, False, False], "last": [False, False, False, True]}
  out = divergence.divergence(ref, cand, y, subgroups=groups, gallery=2)
  np.testing.assert_array_equal(out.kl, divergence.kl_divergence(ref, cand))
  # example 1: p = (1/3, 1/3, 1/3), q = (1/5, 3/5, 1/5); example 3 swaps two classes of p.
  assert out.kl[0] == 0.0
  assert out.kl[1] == pytest.approx(2 / 3 * np.log(5 / 3) + 1 / 3 * np.log(5 / 9), rel=1e-13)
  assert out.delta_p[1] == pytest.approx(1 / 5 - 1 / 3, rel=1e-13)
  assert out.agree.tolist() == [True, False, False, False]
  assert out.flips.counts == paired.flips(y, [0, 0, 2, 0], [0, 1, 1, 2]).counts
  assert out.flips.counts == {"broken": 1, "fixed": 1, "changed": 1, "unchanged": 1, "n": 4}
  assert out.flip_rate == 0.75
  assert out.largest_kl.tolist() == list(np.argsort(-out.kl, kind="stable")[:2])
  for quantity, summary in ((out.kl, out.kl_summary), (out.delta_p, out.delta_p_summary)):
    assert _same(summary.overall, divergence.summarize(quantity))
    assert _same(summary.by_class, divergence.summarize_by_class(quantity, y, 3))
    assert summary.by_class[2].n == 0
    assert _same(
      summary.by_subgroup, {k: divergence.summarize(quantity, m) for k, m in groups.items()}
    )
  doc = out.kl_summary.to_json()
  assert json.loads(json.dumps(doc, allow_nan=False))["by_subgroup"]["last"]["n"] == 1
  assert divergence.divergence(ref, cand, y).kl_summary.by_subgroup == {}


A2 = [[0.0, 1.0], [1.0, 0.0]]


@pytest.mark.parametrize(
  "call",
  [
    lambda: divergence.kl_divergence(A2, [[0.0, 1.0, 2.0], [1.0, 0.0, 2.0]]),  # shape mismatch
    lambda: divergence.kl_divergence(A2, A2[:1]),  # example count mismatch
    lambda: divergence.kl_divergence([0.0, 1.0], [0.0, 1.0]),  # 1-D logits
    lambda: divergence.kl_divergence(np.zeros((0, 3)), np.zeros((0, 3))),  # empty
    lambda: divergence.kl_divergence(np.zeros((2, 0)), np.zeros((2, 0))),  # no class
    lambda: divergence.kl_divergence(A2, [[0.0, np.nan], [1.0, 0.0]]),  # NaN
    lambda: divergence.kl_divergence([[0.0, 1.0], [np.inf, 0.0]], A2),  # +inf
    lambda: divergence.kl_divergence(A2, [[0.0, 1.0], [-np.inf, 0.0]]),  # −inf
    lambda: divergence.kl_divergence([["a", "b"]], [["a", "b"]]),  # not numbers
    lambda: divergence.top1_agreement(np.ones((2, 2), bool), A2),  # booleans
    lambda: divergence.true_class_probability_change(A2, A2, [0, 2]),  # label out of range
    lambda: divergence.true_class_probability_change(A2, A2, [0, -1]),  # negative label
    lambda: divergence.true_class_probability_change(A2, A2, [0]),  # label count
    lambda: divergence.true_class_probability_change(A2, A2, [0.5, 1]),  # not integer
    lambda: divergence.log_softmax([[0.0, np.nan]]),
    lambda: divergence.summarize([]),
    lambda: divergence.summarize([1.0, np.nan]),
    lambda: divergence.summarize([[1.0, 2.0]]),  # not 1-D
    lambda: divergence.summarize([1.0, 2.0], mask=[True]),
    lambda: divergence.summarize([1.0, 2.0], mask=[0, 2]),
    lambda: divergence.summarize([1.0, 2.0], confidence=1.0),
    lambda: divergence.summarize_by_class([1.0, 2.0], [0, 3], num_classes=3),
    lambda: divergence.summarize_by_class([1.0, 2.0], [0], num_classes=3),
    lambda: divergence.largest([1.0, 2.0], -1),
    lambda: divergence.largest([1.0, 2.0], 1.5),
    lambda: divergence.divergence(A2, A2, [0, 1], subgroups={"g": [True]}),
    lambda: divergence.divergence(A2, A2, [0, 1], gallery=-2),
    lambda: divergence.divergence(A2, A2, [0, 1], confidence=0.0),
  ],
)
def test_bad_input_is_a_one_line_value_error(call):
  with pytest.raises(ValueError) as err:
    call()
  assert isinstance(err.value, validate.StatsInputError) and "\n" not in str(err.value)


def test_bad_logits_are_named_with_the_row():
  a = np.zeros((5000, 400), np.float32)  # several chunks; row 4321 is in a later one
  b = a.copy()
  b[4321, 7] = np.nan
  with pytest.raises(validate.StatsInputError, match=r"^cand_logits contains NaN \(row 4321\)$"):
    divergence.kl_divergence(a, b)
  a[12, 0] = -np.inf
  with pytest.raises(
    validate.StatsInputError, match=r"^ref_logits contains an infinite value \(row 12\)$"
  ):
    divergence.divergence(a, b, np.zeros(5000, np.int64))
