"""Prune potential, excess error and noise similarity of 003 (docs/spec.md §6.6-6.7), stats only.

* `prune_potential`: Definition 1 with test error as loss: the largest prune ratio whose
  error is ≤ the parent's error + δ (δ = 0.5%), compared exactly in rationals / error
  counts, 0 if none (003 §5.1; docs/spec.md §6.6).
* `prune_potential_summary`: average and minimum over the distributions of a set (003
  Tables 2, 9, 10: "Train Dist." / "Test Dist."), then mean ± SD (ddof = 0) over
  repetitions; `prune_potential_difference`: 003 Table 2 "Diff." = Test − Train.
* `excess_error`: Definition 2, error on the test distribution (averaged over its
  corruptions) minus error on nominal data; `excess_error_difference`: ê − e (003 §5.1).
* `matching_label_share` and `noise_similarity`: 003 §4.1, the share of matching labels and
  the expected L2 distance between the softmax outputs of two models under noise. This
  module receives the predictions / softmax arrays; the noise injection lives elsewhere.

Errors and prune ratios are fractions (δ = 0.005). Paper: 003
(docs/papers.md).
"""

import fractions
import math

import numpy as np

from tf_forget.stats import validate

DELTA = 0.005
# Largest example count for which `prune_potential` without `num_examples` is guaranteed to
# recover k/n exactly from a float64 error (see its docstring).
MAX_DENOMINATOR = 10**7


def _exact_delta(delta):
  """δ as the rational its decimal spelling names: 0.005 -> 1/200, not the binary float."""
  if isinstance(delta, (fractions.Fraction, int, str)) and not isinstance(delta, bool):
    try:
      return fractions.Fraction(delta)
    except (ValueError, ZeroDivisionError) as e:
      raise validate.StatsInputError(f"delta must be a number, got {delta!r} ({e})") from None
  try:
    value = float(delta)
  except (TypeError, ValueError):
    raise validate.StatsInputError(f"delta must be a number, got {delta!r}") from None
  if not math.isfinite(value):
    raise validate.StatsInputError(f"delta must be finite, got {delta!r}")
  # repr of a Python float is the shortest decimal that reads back as the same float.
  return fractions.Fraction(repr(value))


def _check_num_examples(num_examples):
  if (
    isinstance(num_examples, (bool, np.bool_))
    or not isinstance(num_examples, (int, np.integer))
    or num_examples < 1
  ):
    raise validate.StatsInputError(f"num_examples must be a positive integer, got {num_examples!r}")
  return int(num_examples)


def _error_counts(errors, num_examples, name):
  """int64 error counts round(error · n); raises unless every error is a count out of n."""
  scaled = errors * num_examples
  counts = np.rint(scaled)
  if np.any(np.abs(scaled - counts) > 1e-6):
    worst = float(errors.ravel()[np.argmax(np.abs(scaled - counts).ravel())])
    raise validate.StatsInputError(
      f"{name} are not whole error counts out of num_examples={num_examples} (e.g. {worst!r})"
    )
  return counts.astype(np.int64)


def _error_fractions(errors):
  """object array of `Fraction`: each float64 error as the closest fraction with a
  denominator ≤ MAX_DENOMINATOR."""
  flat = [fractions.Fraction(float(x)).limit_denominator(MAX_DENOMINATOR) for x in errors.ravel()]
  out = np.empty(len(flat), dtype=object)
  out[:] = flat
  return out.reshape(errors.shape)


def prune_potential(prune_ratios, errors, parent_error, delta=DELTA, num_examples=None):
  """Prune potential P(θ, D) (003 Definition 1, eq. 2, §5.1; docs/spec.md §6.6).

  A pruned network qualifies iff its top-1 test error e_t ≤ e_parent + δ, compared exactly:
  a network at exactly parent + δ qualifies (docs/spec.md §6.6). In float64 it would not always:
  parent 0 errors, pruned 50 errors out of 10,000, with error = 1 − accuracy, gives
  1 − 0.995 = 0.0050000000000000044 > 0 + 0.005. So no float comparison is made; δ is
  taken as the rational its decimal spelling names (0.005 -> 1/200, `Fraction(repr(δ))`,
  not the binary float; a `Fraction` or decimal string is used as given) and the errors are
  made exact first:

  * With `num_examples` = n (preferred; the parent and the pruned networks are evaluated on
    the same n examples of D), each error is rounded to its count k = round(e · n), which
    must be whole (within 1e-6, else `StatsInputError`: wrong n, or errors averaged over
    several sets), and the test is the integer one k_t − k_parent ≤ ⌊δ · n⌋.
  * Without it, each error is replaced by the closest fraction with denominator
    ≤ MAX_DENOMINATOR (10^7, `Fraction(e).limit_denominator`). This is tolerance-free and
    exact for every error that is a count k out of n ≤ 10^7 examples computed in float64
    (k/n, 1 − accuracy, a mean of booleans): such a float is within 2^-53 of k/n, while two
    distinct fractions with denominators ≤ 10^7 are at least 1/(n · 10^7) ≥ 10^-14 apart,
    so k/n is the closest one. A float that is not such a count (e.g. an average over
    corruptions of errors from different n) moves by at most 1/(2 · 10^7) = 5 · 10^-8,
    half an error out of 10^7 examples. Errors held in float32 do not carry k/n that
    precisely: pass `num_examples` for them.

  Args:
    prune_ratios: float `[R]` prune ratios (fraction of weights removed) of the pruned
      networks.
    errors: float `[..., R]` test error (a fraction) of each pruned network on distribution
      D, e.g. `[repetitions, distributions, R]`.
    parent_error: float `[...]` error of the unpruned parent on the same D (broadcast
      against `errors[..., 0]`).
    delta: margin δ (003: 0.5% = 0.005); a float, int, decimal string or `Fraction`.
    num_examples: optional int, the number of test examples n each error is a fraction of
      (e.g. images × noise draws); see above.

  Returns:
    float `[...]`: max prune ratio with error ≤ parent_error + δ, 0 if none qualifies (no
    monotonicity in the ratio is required: 003 Definition 1 maximises over all masks).

  Raises:
    validate.StatsInputError: non-finite or misshaped inputs, a bad `delta` or
      `num_examples`, or errors that are not whole counts out of `num_examples`.
  """
  r = validate.check_finite(prune_ratios, "prune_ratios", ndim=1)
  e = validate.check_finite(errors, "errors")
  p = validate.check_finite(parent_error, "parent_error")
  if e.shape[-1] != r.shape[0]:
    raise validate.StatsInputError(
      f"errors has {e.shape[-1]} prune ratios on its last axis but prune_ratios has {r.shape[0]}"
    )
  d = _exact_delta(delta)
  if num_examples is None:
    ok = np.asarray(_error_fractions(e) <= _error_fractions(p)[..., None] + d, dtype=bool)
  else:
    n = _check_num_examples(num_examples)
    # k_t ≤ k_parent + δ·n ⟺ k_t − k_parent ≤ ⌊δ·n⌋ (integers); clipped into int64.
    allowed = min(max(math.floor(d * n), -(2**62)), 2**62)
    ok = (_error_counts(e, n, "errors") - _error_counts(p, n, "parent_error")[..., None]) <= allowed
  return np.where(ok, r, 0.0).max(axis=-1, initial=0.0)


def prune_potential_summary(potentials, ddof=0):
  """Average and minimum prune potential over a distribution set, mean ± SD over reps.

  003 Tables 2, 9, 10 (docs/spec.md §6.6): per repetition, the average and the minimum over the
  distributions of the set (e.g. the corruptions of the test distribution), then mean and
  SD (ddof = 0) over repetitions.

  Args:
    potentials: float `[repetitions, distributions]`.
    ddof: SD degrees of freedom (docs/spec.md §6.6: 0).

  Returns:
    dict `average_mean`, `average_sd`, `minimum_mean`, `minimum_sd`.
  """
  p = validate.check_finite(potentials, "potentials", ndim=2)
  avg = p.mean(axis=1)
  low = p.min(axis=1)
  return {
    "average_mean": float(avg.mean()),
    "average_sd": float(avg.std(ddof=ddof)),
    "minimum_mean": float(low.mean()),
    "minimum_sd": float(low.std(ddof=ddof)),
  }


def prune_potential_difference(train_potential, test_potential):
  """003 Table 2 "Diff.": prune potential on the test minus the train distribution, p' − p."""
  return np.asarray(test_potential, dtype=np.float64) - np.asarray(
    train_potential, dtype=np.float64
  )


def excess_error(test_errors, nominal_error):
  """Excess error e(θ, D') (003 Definition 2 with test error; docs/spec.md §6.6).

  The test distribution D' is the set of its corruptions: its error is the mean over
  them (003 §5.1 "the excess error is evaluated by averaging over all corruptions").

  Args:
    test_errors: float `[..., corruptions]` errors on each corruption of D'.
    nominal_error: float `[...]` error on nominal test data (train distribution D).

  Returns:
    float `[...]`.
  """
  te = validate.check_finite(test_errors, "test_errors")
  ne = validate.check_finite(nominal_error, "nominal_error")
  return te.mean(axis=-1) - ne


def excess_error_difference(excess_pruned, excess_parent):
  """ê − e: additional excess error of the pruned network over its parent (003 §5.1)."""
  return np.asarray(excess_pruned, dtype=np.float64) - np.asarray(excess_parent, dtype=np.float64)


def matching_label_share(labels_a, labels_b):
  """Share of matching predicted labels E[argmax f_θ(x') = argmax f_θ̂(x')] (003 §4.1).

  Args:
    labels_a: int `[..., examples]` labels of model a (e.g. `[noise_levels, draws, examples]`).
    labels_b: int, same shape, of model b on the same noisy inputs.

  Returns:
    float `[...without the last two axes]` if at least 2-D (mean over draws and examples),
    else a float.
  """
  a = np.asarray(labels_a)
  b = np.asarray(labels_b)
  if a.shape != b.shape:
    raise validate.StatsInputError(f"labels_a shape {a.shape} != labels_b shape {b.shape}")
  if a.size == 0:
    raise validate.StatsInputError("labels_a is empty")
  same = (a == b).astype(np.float64)
  return same.mean(axis=tuple(range(max(0, a.ndim - 2), a.ndim)))


def noise_similarity(softmax_a, softmax_b):
  """Noise similarity of two models from their softmax outputs (003 §4.1, Figure 4).

  Args:
    softmax_a: float `[..., draws, examples, C]` softmax of model a on noisy inputs.
    softmax_b: float, same shape, of model b on the same inputs.

  Returns:
    dict `matching` (share of equal argmax labels, lowest index on ties, docs/spec.md §1.2) and
    `l2` (mean over draws and examples of ‖f_a(x') − f_b(x')‖_2), each float `[...]`.
  """
  a = validate.check_finite(softmax_a, "softmax_a")
  b = validate.check_finite(softmax_b, "softmax_b")
  if a.shape != b.shape:
    raise validate.StatsInputError(f"softmax_a shape {a.shape} != softmax_b shape {b.shape}")
  if a.ndim < 2:
    raise validate.StatsInputError("softmax arrays need at least [examples, classes]")
  dist = np.linalg.norm(a - b, axis=-1)
  axes = tuple(range(max(0, dist.ndim - 2), dist.ndim))
  return {
    "matching": matching_label_share(a.argmax(axis=-1), b.argmax(axis=-1)),
    "l2": dist.mean(axis=axes),
  }
