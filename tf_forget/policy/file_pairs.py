"""Two shipped files compared on the same test examples: flips and top-1, paired.

The ship rule (`tf_forget.policy.ship_rule`) calls a file "as good" as another, or "better" on
flips, only when a paired comparison over the test examples supports it. Per variant and test
example i this module keeps

  * f_i, the share of the variant's member pairs (`tf_forget.report.collect.Run.pairing_of`:
    dense member k0 against the variant's member kt) whose top-1 differs at example i (a flip
    against the reference; 0 or 1 with one member);
  * c_i, the share of the variant's members right at example i.

Two variants a, b are compared by the mean of the per-example differences
d_i = f_i(a) - f_i(b) (flips) and e_i = c_i(a) - c_i(b) (top-1), each with the t interval of a
mean over the N examples (`scipy.stats.ttest_1samp`; with one member per variant this is the
paired difference of two proportions on the same examples). A difference whose interval lies
within ±margin is "within the margin"; one whose interval excludes 0 is significant.
"""

import dataclasses

import numpy as np

from tf_forget.artifacts import names

CONFIDENCE = 0.95


@dataclasses.dataclass(frozen=True)
class Difference:
  """The mean paired difference a - b over the test examples (a fraction of N) and its interval.

  Attributes:
    mean, low, high: the mean of the per-example differences and its `CONFIDENCE` t interval.
    count: the mean difference in examples (mean * N).
  """

  mean: float
  low: float
  high: float
  count: float

  def significant(self):
    """Whether the interval excludes 0."""
    return self.low > 0 or self.high < 0


def difference(values):
  """`Difference` of per-example differences `values` ([N]); a constant array has the
  degenerate interval [v, v]."""
  d = np.asarray(values, float)
  mean = float(d.mean())
  if np.ptp(d) == 0:
    return Difference(mean, mean, mean, mean * d.size)
  from scipy import stats  # where an interval is computed: the ship rule's names need none

  ci = stats.ttest_1samp(d, 0.0).confidence_interval(CONFIDENCE)
  return Difference(mean, float(ci.low), float(ci.high), mean * d.size)


@dataclasses.dataclass(frozen=True)
class Pairs:
  """Per-example flips and correctness of the compared variants.

  Attributes:
    examples: N, the test examples.
    flip_share: variant -> [N] f_i (dense: zeros).
    correct_share: variant -> [N] c_i.
    top1: variant -> [members, N] top-1 (member order of `members`).
    members: variant -> member indices k.
  """

  examples: int
  flip_share: dict
  correct_share: dict
  top1: dict
  members: dict

  def flips(self, variant):
    """The mean number of test examples the variant flips against the reference (NaN when it
    has no paired member)."""
    f = self.flip_share.get(variant)
    return float("nan") if f is None else float(np.sum(f))

  def flips_apart(self, a, b):
    """`Difference` of the flips of a minus b, or None when one has no paired member."""
    if a not in self.flip_share or b not in self.flip_share:
      return None
    return difference(self.flip_share[a] - self.flip_share[b])

  def top1_apart(self, a, b):
    """`Difference` of the top-1 of a minus b, or None when one is missing."""
    if a not in self.correct_share or b not in self.correct_share:
      return None
    return difference(self.correct_share[a] - self.correct_share[b])

  def apart(self, a, b):
    """Mean over the members both variants have of the examples where their own top-1
    differ (NaN without a common member)."""
    common = [k for k in self.members.get(a, []) if k in self.members.get(b, [])]
    if not common:
      return float("nan")
    rows = lambda v: [list(self.members[v]).index(k) for k in common]
    return float(np.mean(np.sum(self.top1[a][rows(a)] != self.top1[b][rows(b)], axis=1)))


def _flip_share(run, variant, dense, pop):
  """f_i of one variant over its member pairs, or None without a pair."""
  row_0 = {int(k): r for r, k in enumerate(dense.members)}
  row_t = {int(k): r for r, k in enumerate(pop.members)}
  pairs = [(int(k0), int(kt)) for k0, kt in run.pairing_of(variant)["pairs"]]
  flips = [
    dense.top1[row_0[k0]] != pop.top1[row_t[kt]] for k0, kt in pairs if k0 in row_0 and kt in row_t
  ]
  return np.mean(flips, axis=0) if flips else None


def compute(run, variants):
  """`Pairs` of the run's `variants` (dense and the files compared; the missing skipped)."""
  dense = run.eval[names.DENSE]
  flip_share, correct, top1, members = {}, {}, {}, {}
  for v in variants:
    pop = run.eval.get(v)
    if pop is None or not pop.members.size:
      continue
    top1[v], members[v] = pop.top1, [int(k) for k in pop.members]
    correct[v] = np.mean(pop.top1 == pop.labels[None, :], axis=0)
    share = np.zeros(dense.ids.size) if v == names.DENSE else _flip_share(run, v, dense, pop)
    if share is not None:
      flip_share[v] = share
  return Pairs(int(dense.ids.size), flip_share, correct, top1, members)
