"""Taxicab CIE, weighted Jaccard CIE and percentile selection (004 §3.1, A.1; docs/spec.md §4.1)."""

import hypothesis
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
import numpy as np
import pytest

from tf_forget.stats import cie
from tf_forget.stats import validate


def test_taxicab_by_hand():
  # Example 0: B = {0: 3}, V = {0: 1, 1: 2} -> |3-1| + |0-2| = 4.
  # Example 1: B = {1: 2, 2: 1}, V = {1: 2, 2: 1} -> 0.
  # Example 2: B = {0: 1, 1: 1, 2: 1}, V = {2: 3} -> 1 + 1 + 2 = 4.
  base = np.array([[0, 1, 0], [0, 2, 1], [0, 1, 2]])
  var = np.array([[0, 2, 2], [1, 1, 2], [1, 1, 2]])
  np.testing.assert_array_equal(cie.taxicab_distance(base, var, 3), [4, 0, 4])
  # Jaccard: 1 - Σmin/Σmax: ex0 1 - 1/5; ex1 0; ex2 1 - 1/5.
  np.testing.assert_allclose(cie.weighted_jaccard_distance(base, var, 3), [0.8, 0.0, 0.8])


@pytest.mark.parametrize("members,classes", [(1, 2), (5, 3), (30, 2), (30, 1000), (7, 17)])
def test_sorting_and_count_table_taxicab_agree(members, classes):
  rng = np.random.default_rng(members * classes)
  base = rng.integers(0, classes, (members, 500))
  other = rng.integers(0, classes, (members, 500))
  var = np.where(rng.random((members, 500)) < 0.5, base, other)
  by_sorting = 2 * (members - cie._intersection_sizes(base, var))
  by_counts = cie._taxicab_from_counts(base, var, classes)
  np.testing.assert_array_equal(by_sorting, by_counts)
  np.testing.assert_array_equal(cie.taxicab_distance(base, var, classes), by_counts)


def test_unequal_population_sizes_are_an_error():
  with pytest.raises(validate.StatsInputError, match="3 members but predictions_t has 2"):
    cie.taxicab_distance(np.zeros((3, 5), int), np.zeros((2, 5), int))


@pytest.mark.parametrize(
  "p,n,want",
  [
    (90, 20000, 2000),
    (95, 20000, 1000),
    (99, 20000, 200),
    (80, 19962, 3993),
    (99, 19962, 200),
    (90, 7, 1),
    (0, 10, 10),
    (100, 10, 0),
    (99.9, 1000, 1),
    (70, 10, 3),
  ],
)
def test_num_selected_is_exact_ceil(p, n, want):
  # ceil((100 - p)/100 * n) in exact arithmetic; (100-70)/100*10 is 3.0000000000000004 in
  # floating point, whose naive ceil would give 4.
  assert cie.num_selected(p, n) == want


def test_select_percentile_count_and_top_scores():
  d = np.array([5, 1, 5, 3, 0, 5, 2, 4, 1, 0])
  mask = cie.select_percentile(d, 80, seed=0)  # ceil(0.2 * 10) = 2 of the three 5s
  assert mask.sum() == 2 and (d[mask] == 5).all()
  mask = cie.select_percentile(d, 50, seed=0)  # 5 examples: the three 5s, 4, 3
  assert set(np.flatnonzero(mask)) == {0, 2, 5, 7, 3}


def test_random_tie_breaking_is_seeded():
  d = np.zeros(1000)
  d[:10] = 1
  a = cie.rank_by_distance(d, seed=1)
  b = cie.rank_by_distance(d, seed=1)
  c = cie.rank_by_distance(d, seed=2)
  np.testing.assert_array_equal(a, b)
  assert set(a[:10]) == set(range(10))  # ties never reorder different scores
  assert not np.array_equal(a[10:], c[10:])  # tied zeros come out in a seeded random order
  assert not np.array_equal(a[10:], np.arange(10, 1000))  # ... not in index order


def _populations(draw_members=st.integers(1, 6), draw_classes=st.integers(2, 5)):
  @st.composite
  def strategy(draw):
    n = draw(draw_members)
    c = draw(draw_classes)
    e = draw(st.integers(2, 25))
    shape = (n, e)
    base = draw(hnp.arrays(np.int64, shape, elements=st.integers(0, c - 1)))
    var = draw(hnp.arrays(np.int64, shape, elements=st.integers(0, c - 1)))
    return base, var, c

  return strategy()


@hypothesis.settings(max_examples=200, deadline=None)
@hypothesis.given(_populations(), st.integers(0, 2**32 - 1))
def test_jaccard_and_taxicab_rank_examples_identically(pops, seed):
  """004 appendix A.1: d_J(x) > d_J(y) iff d_T(x) > d_T(y) for populations of equal size N."""
  base, var, c = pops
  dt = cie.taxicab_distance(base, var, c)
  dj = cie.weighted_jaccard_distance(base, var, c)
  gt_t = dt[:, None] > dt[None, :]
  gt_j = dj[:, None] > dj[None, :]
  np.testing.assert_array_equal(gt_t, gt_j)
  np.testing.assert_array_equal(cie.rank_by_distance(dt, seed), cie.rank_by_distance(dj, seed))
  # A.1 eq. 2: Σ max = N + d_T / 2, so d_J = d_T / (N + d_T / 2) = 2 d_T / (2N + d_T).
  # (A.1's third line prints d_T / (2N + d_T): a factor 2 is dropped; the ranking, which
  # is all A.1 claims, is the same.)
  n = base.shape[0]
  np.testing.assert_allclose(dj, 2 * dt / (2 * n + dt), rtol=1e-12)
  assert (dt % 2 == 0).all() and (dt <= 2 * n).all()
  # The sorting path (used for many classes) agrees with the count tables used here.
  sorted_dt = 2 * (n - cie._intersection_sizes(base, var))
  np.testing.assert_array_equal(sorted_dt, dt)


@hypothesis.settings(max_examples=100, deadline=None)
@hypothesis.given(_populations(), st.integers(0, 100), st.integers(0, 1000))
def test_selection_size_and_threshold_property(pops, p, seed):
  base, var, c = pops
  d = cie.taxicab_distance(base, var, c)
  mask = cie.select_percentile(d, p, seed)
  assert mask.sum() == cie.num_selected(p, d.size)
  if mask.any() and (~mask).any():
    assert d[mask].min() >= d[~mask].max()


def test_taxicab_cie_accuracy_table():
  rng = np.random.default_rng(4)
  labels = rng.integers(0, 2, 200)
  dense = np.where(rng.random((5, 200)) < 0.9, labels, 1 - labels)
  pruned = np.where(rng.random((5, 200)) < 0.8, labels, 1 - labels)
  df = cie.taxicab_cie_accuracy(dense, pruned, labels, percentiles=(80, 90), seed=3)
  d = cie.taxicab_distance(dense, pruned, 2)
  mask = cie.select_percentile(d, 90, seed=3)
  row = df[(df.population == "compressed") & (df.subset == "p90")].iloc[0]
  assert row["n"] == 20
  np.testing.assert_allclose(row["top1"], (pruned[:, mask] == labels[mask]).mean())
  row = df[(df.population == "compressed") & (df.subset == "all")].iloc[0]
  np.testing.assert_allclose(row["top1"], (pruned == labels).mean())
  row = df[(df.population == "dense") & (df.subset == "p80")].iloc[0]
  assert row["n"] == 40
