"""One-shot pruning scores, global masks and exact counts (002 §3, docs/spec.md §6.1-6.3).

Every expected value here is computed by hand in the comments next to it.
"""

import fractions

import numpy as np
import pytest

from tests import import_check
from tf_forget.artifacts import names
from tf_forget.prune import scores


def test_spec_hand_check():
  # docs/spec.md §6.1: θ = 2, g = 0.5, ε = 0.25 → GP |2·0.5| = 1; UP |−2·0.5 + 0.25·4| = 0.
  assert scores.gradient(2.0, 0.5) == 1.0
  assert scores.unified(2.0, 0.5, 0.25) == 0.0
  # The literal derivation reading (L including the decay) gives |2·(0.5 + 0.5) − 1| = 1 = GP.
  assert scores.unified(2.0, 0.5, 0.25, formula="derivation") == 1.0
  assert scores.magnitude(-3.0) == 3.0


def test_up_ranks_as_mp_when_the_gradient_is_zero():
  rng = np.random.default_rng(0)
  weights = {"conv": rng.normal(size=(3, 3, 2, 4)), "dense": rng.normal(size=(8, 5))}
  zero = {n: np.zeros_like(w) for n, w in weights.items()}
  for pruned in (0, 1, 37, 80, 112):
    up = scores.masks("up", weights, pruned, grads=zero, eps=5e-4)
    mp = scores.masks("mp", weights, pruned)
    for name in weights:
      np.testing.assert_array_equal(up[name], mp[name])


def test_gp_and_up_differ_where_the_two_terms_compete():
  # w0: θ = 2, g = 0.5 → GP 1,   UP |−1 + 0.25·4| = 0
  # w1: θ = 1, g = 0.6 → GP 0.6, UP |−0.6 + 0.25·1| = 0.35
  # Pruning one weight: GP prunes w1 (0.6 < 1), UP prunes w0 (0 < 0.35); MP prunes w1 (1 < 2).
  weights, grads = {"l": np.array([2.0, 1.0])}, {"l": np.array([0.5, 0.6])}
  assert scores.masks("gp", weights, 1, grads=grads)["l"].tolist() == [True, False]
  assert scores.masks("up", weights, 1, grads=grads, eps=0.25)["l"].tolist() == [False, True]
  assert scores.masks("mp", weights, 1)["l"].tolist() == [True, False]


def test_one_global_threshold_across_layers():
  # Layer a holds the 3 smallest magnitudes of all: pruning 3 empties a, not 3 of each layer.
  weights = {"a": np.array([0.1, -0.2, 0.3]), "b": np.array([[1.0, -2.0], [3.0, 0.5]])}
  m = scores.masks("mp", weights, 3)
  assert m["a"].tolist() == [False, False, False]
  assert m["b"].tolist() == [[True, True], [True, True]]
  m = scores.masks("mp", weights, 4)  # next smallest: 0.5 in b
  assert m["b"].tolist() == [[True, True], [True, False]]


def test_ties_prune_in_layer_then_flat_order():
  m = scores.global_masks({"a": np.ones(3), "b": np.ones((2, 2))}, 4)
  assert m["a"].tolist() == [False, False, False]
  assert m["b"].tolist() == [[False, True], [True, True]]


@pytest.mark.parametrize("ratio, keep", [(2, 500), (4, 250), (10, 100), (20, 50), (50, 20)])
def test_ratios_of_002_give_exact_counts(ratio, keep):
  c = scores.compression(1000, ratio=ratio)
  assert (c.keep, c.pruned) == (keep, 1000 - keep)
  assert c.fraction == 1 - fractions.Fraction(1, ratio)  # t = 1 − 1/r exactly
  assert c.achieved_ratio == ratio and c.achieved_fraction == float(c.fraction)
  rng = np.random.default_rng(ratio)
  weights = {"a": rng.normal(size=(10, 30)), "b": rng.normal(size=(700,))}
  grads = {n: rng.normal(size=w.shape) for n, w in weights.items()}
  for algorithm in names.ONESHOT_ALGORITHMS:
    m = scores.masks(algorithm, weights, c.pruned, grads=grads, eps=5e-4, seed=3)
    assert sum(int(v.sum()) for v in m.values()) == keep, algorithm


def test_compression_rounding_and_errors():
  # n = 1001, r = 2: 500.5 kept rounds half up to 501; achieved ratio 1001 / 501.
  c = scores.compression(1001, ratio=2)
  assert (c.keep, c.pruned, c.achieved_ratio) == (501, 500, 1001 / 501)
  # A fraction converts exactly: t = 0.9 is r = 10.
  c = scores.compression(1000, fraction=0.9)
  assert (c.ratio, c.keep) == (10.0, 100)
  assert scores.compression(1000, ratio=2000).keep == 1  # 0.5 rounds half up to 1
  with pytest.raises(scores.PruneError, match="keeps no weight"):
    scores.compression(1000, ratio=3000)  # 0.33 rounds to 0
  with pytest.raises(scores.PruneError, match=">= 1"):
    scores.compression(1000, ratio=0.5)
  with pytest.raises(scores.PruneError, match=r"\[0, 1\)"):
    scores.compression(1000, fraction=1.0)
  with pytest.raises(scores.PruneError, match="exactly one"):
    scores.compression(1000, ratio=2, fraction=0.5)


def test_random_pruning_is_seeded_and_exact():
  shapes = {"a": (4, 5), "b": (30,)}
  m1 = scores.random_masks(shapes, 25, seed=7)
  m2 = scores.random_masks(shapes, 25, seed=7)
  m3 = scores.random_masks(shapes, 25, seed=8)
  assert all(np.array_equal(m1[n], m2[n]) for n in shapes)
  assert not all(np.array_equal(m1[n], m3[n]) for n in shapes)
  assert sum(int((~v).sum()) for v in m1.values()) == 25


def test_bad_input_is_one_line():
  weights = {"a": np.ones(3)}
  with pytest.raises(scores.PruneError, match="unknown pruning algorithm 'snip'"):
    scores.masks("snip", weights, 1)
  with pytest.raises(scores.PruneError, match="GP needs the gradient"):
    scores.masks("gp", weights, 1)
  with pytest.raises(scores.PruneError, match="differ in shape"):
    scores.gradient(np.ones(3), np.ones(4))
  with pytest.raises(scores.PruneError, match="cannot prune 4 of 3"):
    scores.masks("mp", weights, 4)
  with pytest.raises(scores.PruneError, match="NaN"):
    scores.masks("mp", {"a": np.array([1.0, np.nan])}, 1)


def test_scores_import_no_tensorflow():
  # Pure numpy: nothing of the pipeline but the error base (`tf_forget.artifacts.errors`,
  # standard library only), which makes a bad ratio a one-line error of the binaries, and the
  # name grammar that owns the algorithm names (`tf_forget.artifacts.names`, with the TFLite
  # format table it reads the format names from, `tflite_formats`; no TensorFlow).
  assert import_check.foreign_modules("from tf_forget.prune import scores", "tf_forget.prune") == (
    "tf_forget.artifacts,tf_forget.artifacts.errors,tf_forget.artifacts.names,"
    "tf_forget.artifacts.tflite_formats"
  )
  # The check itself can fail: a module that loads TensorFlow is reported.
  assert "tensorflow" in import_check.foreign_modules(
    "from tf_forget.prune import scores\nimport tensorflow", "tf_forget.prune"
  )
