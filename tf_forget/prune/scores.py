"""One-shot pruning scores and exact global masks (002 §3; docs/spec.md §6.1-6.3). Pure numpy.

Pruning after training: given the prunable kernels θ of a trained
parent and, for GP / UP, the mean gradient g of its data loss, each algorithm scores every
weight; the lowest scores are pruned first under **one global threshold** over all prunable
kernels, with an **exact count** (a stable sort, not a quantile interpolation; ties go to the
weight that comes first in layer order, then in flattened order):

* MP, magnitude: |θ|;
* GP, gradient: |θ·g|;
* UP, unified (002's rule argmin |−θ∇L + εθ²|, docs/spec.md §6.1 read as the authors' released code
  computes it): |−θ·g + ε·θ²|, with ε the parent's weight decay (Keras `l2(λ)`: ε = 2λ);
  `up_formula="derivation"` reads 002's derivation line literally (L including the decay), which
  makes UP = |θ·g + ε·θ² − ε·θ²| = GP — offered for comparison only;
* RP, random: a seeded uniform permutation, the same exact count.

Hand check (docs/spec.md §6.1): θ = 2, g = 0.5, ε = 0.25 → GP 1, UP |−1 + 1| = 0; with g = 0, UP =
εθ² ranks the weights as MP does.

Compression (docs/spec.md §6.3): a ratio r = prunable weights before / after (002: 2, 4, 10, 20,
50), so the fraction pruned is t = 1 − 1/r exactly. The kept count is n / r rounded to the nearest
integer (half up); the achieved ratio and fraction are reported beside the asked ones. A ratio
below 1, or one that would keep no weight, is an error, not a silent cap.
"""

import dataclasses
import fractions
from typing import Dict, Mapping

import numpy as np

from tf_forget.artifacts import errors
from tf_forget.artifacts import names

UP_FORMULAS = ("code", "derivation")


class PruneError(errors.Error):
  """Bad pruning input: an unknown algorithm, a ratio that cannot be met, mismatched shapes."""


def magnitude(theta):
  """MP score |θ| (002 §3). Args: theta float array. Returns: float64 array, same shape."""
  return np.abs(np.asarray(theta, np.float64))


def gradient(theta, grad):
  """GP score |θ·g| (002 §3), g the mean gradient of the data loss. Same shapes."""
  theta, grad = _pair(theta, grad)
  return np.abs(theta * grad)


def unified(theta, grad, eps, formula="code"):
  """UP score (002 §3 eq. for T = L − (ε/2)‖θ‖², docs/spec.md §6.1).

  Args:
    theta, grad: float arrays of one shape (weights, mean data-loss gradient).
    eps: the parent's weight decay ε (>= 0; Keras `l2(λ)` means ε = 2λ).
    formula: "code" |−θ·g + ε·θ²| (the released code, default) or "derivation" (002's printed
      derivation read with L including the decay: |θ·(g + εθ) − εθ²| = |θ·g|, i.e. GP).

  Returns:
    float64 array of the same shape.

  Raises:
    PruneError: unknown formula, negative ε, mismatched shapes.
  """
  if formula not in UP_FORMULAS:
    raise PruneError(f"up_formula must be one of {UP_FORMULAS}, got {formula!r}")
  if not eps >= 0:
    raise PruneError(f"weight decay eps must be >= 0, got {eps!r}")
  theta, grad = _pair(theta, grad)
  if formula == "derivation":
    return np.abs(theta * (grad + eps * theta) - eps * theta * theta)
  return np.abs(-theta * grad + eps * theta * theta)


def _pair(theta, grad):
  theta, grad = np.asarray(theta, np.float64), np.asarray(grad, np.float64)
  if theta.shape != grad.shape:
    raise PruneError(f"weights {theta.shape} and gradient {grad.shape} differ in shape")
  return theta, grad


@dataclasses.dataclass(frozen=True)
class Compression:
  """An asked compression and what an exact count achieves.

  Attributes:
    ratio: asked r (prunable weights before / after).
    fraction: asked t = 1 − 1/r, as a `fractions.Fraction` when r is rational.
    total: prunable weights n.
    keep: weights kept, round(n / r) (half up).
    pruned: n − keep.
    achieved_ratio: n / keep.
    achieved_fraction: pruned / n.
  """

  ratio: float
  fraction: fractions.Fraction
  total: int
  keep: int
  pruned: int
  achieved_ratio: float
  achieved_fraction: float

  def to_json(self):
    return {
      "ratio": self.ratio,
      "fraction": float(self.fraction),
      "fraction_exact": str(self.fraction),
      "total": self.total,
      "keep": self.keep,
      "pruned": self.pruned,
      "achieved_ratio": self.achieved_ratio,
      "achieved_fraction": self.achieved_fraction,
    }


def compression(total, ratio=None, fraction=None):
  """The exact counts of pruning `total` weights by a ratio r or a fraction t (docs/spec.md §6.3).

  Args:
    total: number of prunable weights n (> 0).
    ratio: r >= 1 (002: 2, 4, 10, 20, 50); or
    fraction: t in [0, 1) (t = 1 − 1/r).

  Returns:
    A `Compression`.

  Raises:
    PruneError: neither or both given, r < 1, t outside [0, 1), or a ratio that keeps no weight.
  """
  if (ratio is None) == (fraction is None):
    raise PruneError("give exactly one of ratio and fraction")
  if int(total) != total or total < 1:
    raise PruneError(f"total must be a positive integer, got {total!r}")
  total = int(total)
  if ratio is not None:
    r = fractions.Fraction(str(ratio))
    if r < 1:
      raise PruneError(f"pruning ratio must be >= 1 (weights before / after), got {ratio!r}")
    t = 1 - 1 / r
  else:
    t = fractions.Fraction(str(fraction))
    if not 0 <= t < 1:
      raise PruneError(f"pruning fraction must be in [0, 1), got {fraction!r}")
    r = 1 / (1 - t)
  keep = int(fractions.Fraction(total) * (1 - t) + fractions.Fraction(1, 2))  # half up
  if keep < 1:
    raise PruneError(f"ratio {float(r):g} keeps no weight of {total}: it cannot be met")
  return Compression(
    ratio=float(r),
    fraction=t,
    total=total,
    keep=keep,
    pruned=total - keep,
    achieved_ratio=total / keep,
    achieved_fraction=(total - keep) / total,
  )


def global_masks(scores, pruned):
  """Masks pruning exactly the `pruned` lowest scores over all layers (one global threshold).

  Args:
    scores: {layer name: float array}, in layer order (the order breaks ties).
    pruned: how many weights to prune in total.

  Returns:
    {layer name: bool array of the score's shape}, True = kept.

  Raises:
    PruneError: a count outside [0, total], or a NaN score.
  """
  names = list(scores)
  flat = [np.asarray(scores[n], np.float64).ravel() for n in names]
  allscores = np.concatenate(flat) if flat else np.zeros([0])
  if np.isnan(allscores).any():
    raise PruneError("a pruning score is NaN (a NaN weight or gradient)")
  if not 0 <= pruned <= allscores.size:
    raise PruneError(f"cannot prune {pruned} of {allscores.size} weights")
  keep = np.ones(allscores.size, bool)
  keep[np.argsort(allscores, kind="stable")[:pruned]] = False
  out, start = {}, 0
  for name, f in zip(names, flat):
    out[name] = keep[start : start + f.size].reshape(np.shape(scores[name]))
    start += f.size
  return out


def random_masks(shapes, pruned, seed):
  """RP: exactly `pruned` weights chosen uniformly at random over all layers (seeded).

  Args:
    shapes: {layer name: shape}, in layer order.
    pruned: how many weights to prune.
    seed: the generator seed (`np.random.default_rng(seed)`).

  Returns:
    {layer name: bool array}, True = kept.
  """
  sizes = [int(np.prod(s)) for s in shapes.values()]
  order = np.random.default_rng(seed).permutation(sum(sizes)).astype(np.float64)
  scores, start = {}, 0
  for (name, shape), size in zip(shapes.items(), sizes):
    scores[name] = order[start : start + size].reshape(shape)
    start += size
  return global_masks(scores, pruned)


def masks(
  algorithm,
  weights: Mapping[str, np.ndarray],
  pruned,
  grads=None,
  eps=0.0,
  seed=0,
  up_formula="code",
) -> Dict[str, np.ndarray]:
  """The masks of one algorithm (MP, GP, UP, RP) pruning exactly `pruned` weights.

  Args:
    algorithm: "mp", "gp", "up" or "rp".
    weights: {layer name: kernel θ}, in layer order.
    pruned: weights to prune in total (`compression(...).pruned`).
    grads: {layer name: mean data-loss gradient g} (GP, UP).
    eps: the parent's weight decay ε (UP).
    seed: RP's seed.
    up_formula: see `unified`.

  Returns:
    {layer name: bool array}, True = kept.

  Raises:
    PruneError: unknown algorithm, missing gradients, bad shapes or counts.
  """
  if algorithm not in names.ONESHOT_ALGORITHMS:
    raise PruneError(
      f"unknown pruning algorithm {algorithm!r} (known: {', '.join(names.ONESHOT_ALGORITHMS)})"
    )
  if algorithm == "rp":
    return random_masks({n: np.shape(w) for n, w in weights.items()}, pruned, seed)
  if algorithm == "mp":
    return global_masks({n: magnitude(w) for n, w in weights.items()}, pruned)
  if grads is None or set(grads) != set(weights):
    raise PruneError(f"{algorithm.upper()} needs the gradient of every pruned layer")
  if algorithm == "gp":
    return global_masks({n: gradient(w, grads[n]) for n, w in weights.items()}, pruned)
  return global_masks(
    {n: unified(w, grads[n], eps, up_formula) for n, w in weights.items()}, pruned
  )
