"""The held-out half of the test examples (a repair is chosen on one half and reported
on the other).

`held_out_halves(labels, seed)`: within each class, a seeded permutation (numpy's PCG64, whose
stream is fixed across numpy versions) puts the first floor(n_c / 2) examples in the "choose"
half and the rest in the "report" half, so the two halves are disjoint, cover the split, and
hold each class in proportion (the report half gets the odd example). The same labels and seed
give the same halves on any machine; the class order of the examples does not matter.
"""

import numpy as np

from tf_forget.stats import validate

DEFAULT_SEED = 0


def held_out_halves(labels, seed=DEFAULT_SEED):
  """(choose, report): boolean masks `[n]` of the two halves, stratified by class.

  Args:
    labels: int `[n]` class labels of the test examples, n >= 2.
    seed: the permutation's seed (recorded with whatever is chosen).

  Raises:
    validate.StatsInputError: labels that are not a 1-D integer array of at least 2.
  """
  labels = np.asarray(labels)
  if labels.ndim != 1 or labels.size < 2 or not np.issubdtype(labels.dtype, np.integer):
    raise validate.StatsInputError(
      f"labels must be a 1-D integer array of at least 2 examples, got shape "
      f"{labels.shape} and dtype {labels.dtype}"
    )
  rng = np.random.default_rng(seed)
  choose = np.zeros(labels.size, bool)
  for c in np.unique(labels):
    members = np.flatnonzero(labels == c)
    picked = rng.permutation(members)[: members.size // 2]
    choose[picked] = True
  return choose, ~choose


def held_out_halves_by_id(ids, labels, seed=DEFAULT_SEED):
  """`held_out_halves` of the examples in the order of their `ids`, as masks in the given
  order: the same examples fall in the same half however a file stores them.

  Raises:
    validate.StatsInputError: as `held_out_halves`, or ids that are not `[n]` and distinct.
  """
  ids = np.asarray(ids)
  if ids.shape != np.shape(labels) or np.unique(ids).size != ids.size:
    raise validate.StatsInputError(
      f"ids must be {np.shape(labels)} distinct values, got shape {ids.shape}"
    )
  order = np.argsort(ids, kind="stable")
  choose_sorted, _ = held_out_halves(np.asarray(labels)[order], seed)
  choose = np.zeros(ids.size, bool)
  choose[order] = choose_sorted
  return choose, ~choose
