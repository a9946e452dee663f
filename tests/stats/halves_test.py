"""The held-out halves: disjoint, covering, stratified, deterministic.

Golden by hand: with one seed, each class's choose half is the first floor(n_c / 2) of
`np.random.default_rng(seed).permutation` of its members, classes in increasing order, one
generator for all (computed here a second way, by sorting each class's positions in the
permutation).
"""

import numpy as np
import pytest

from tf_forget.stats import halves
from tf_forget.stats import validate


def test_disjoint_covering_and_stratified():
  labels = np.repeat(np.arange(5), [10, 11, 1, 0, 7])
  labels = np.random.default_rng(3).permutation(labels)
  choose, report = halves.held_out_halves(labels, seed=7)
  assert not np.any(choose & report) and np.all(choose | report)
  for c, n in zip(range(5), [10, 11, 1, 0, 7]):
    assert np.sum(choose & (labels == c)) == n // 2
    assert np.sum(report & (labels == c)) == n - n // 2


def test_the_same_seed_gives_the_same_halves_and_another_seed_others():
  labels = np.arange(400) % 10
  a, _ = halves.held_out_halves(labels, seed=1)
  b, _ = halves.held_out_halves(labels.copy(), seed=1)
  c, _ = halves.held_out_halves(labels, seed=2)
  np.testing.assert_array_equal(a, b)
  assert np.any(a != c)


def test_by_hand_from_the_generator():
  labels = np.array([1, 0, 1, 1, 0, 0, 1, 0, 1])
  rng = np.random.default_rng(0)
  want = np.zeros(labels.size, bool)
  for c in (0, 1):
    members = np.flatnonzero(labels == c)
    order = rng.permutation(members.size)  # the same draws as permuting the members
    want[members[order[: members.size // 2]]] = True
  choose, _ = halves.held_out_halves(labels, seed=0)
  np.testing.assert_array_equal(choose, want)


@pytest.mark.parametrize("labels", [[1], np.zeros((2, 2), int), [0.5, 1.5]])
def test_bad_labels_are_refused(labels):
  with pytest.raises(validate.StatsInputError):
    halves.held_out_halves(labels)


def test_by_id_the_storage_order_does_not_matter():
  # The search and the report read the split from different files; an example must
  # fall in the same half however a file orders the examples.
  rng = np.random.default_rng(3)
  ids = rng.permutation(200) + 1000
  labels = rng.integers(0, 4, 200)
  choose, report = halves.held_out_halves_by_id(ids, labels, seed=5)
  order = rng.permutation(200)
  choose2, _ = halves.held_out_halves_by_id(ids[order], labels[order], seed=5)
  assert set(ids[choose]) == set(ids[order][choose2])
  assert not (choose & report).any() and (choose | report).all()
  with pytest.raises(validate.StatsInputError):
    halves.held_out_halves_by_id(np.zeros(200), labels)
