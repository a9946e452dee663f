"""The input scaling check's decision: does another preprocessing clearly beat the given one?

`tf_forget.evaluate.input_scaling` runs the reference on a sample of test images under the
preprocessing given and under every other standard one; this module decides from the labels and
the top-1 predictions alone (numpy and scipy, no TensorFlow). Each other preprocessing is compared
with the given one on the same images, paired (`compare`): its gain (top-1 difference), the exact
two-sided McNemar p of the paired correctness (`tf_forget.stats.paired.mcnemar_p`) and the upper
limit of Newcombe's paired interval of the gain at `CONFIDENCE`
(`paired.paired_accuracy_difference`). Another preprocessing is

  * clearly better when it gains at least `MARGIN` (2 points) with p < `ALPHA` (0.001): the check
    refuses, naming it (the one scoring highest among the clearly better);
  * open when it scores higher, is not clearly better, and its interval still reaches `MARGIN`:
    more images could make it clearly better, so the sample grows (`settle`);
  * settled otherwise: it scores no higher, or the interval rules out a gain of `MARGIN`.

`settle` looks at `SAMPLE` (256) images, and while some preprocessing is open and none clearly
better, at twice as many, up to `MAX_SAMPLE` (2048) or the whole split. At the last look an
open or settled one that gains at least `MARGIN` without p < `ALPHA`, or gains less than `MARGIN`
with p < `ALPHA`, is a caveat (`Decision.kind` "caveat"): the audit goes on and says so. When
nothing is clearly better and the given preprocessing is not significantly above chance
(one-sided exact binomial test against 1 / classes, p ≥ `CHANCE_ALPHA`), the check refuses
("chance").

Why these constants. A model fed the values it was trained on does not score better under another
standard preprocessing, so any real gain is a fault; the margin only keeps a tiny, real gain (a
model trained on values between two standard ones) from stopping an audit whose numbers are nearly
right. 2 points of top-1 is more than the compression losses the audit exists to measure (a
dynamic-range or float16 file usually loses well under 1 point), so a scaling fault that large
would swamp them. `ALPHA` = 0.001 keeps false refusals of a correctly fed model rare across the
up to four alternatives and four looks (at most 16 tests: under 2% in all by Bonferroni, and the
tests are strongly correlated); a real fault of a few points passes it easily (9 points on 256
images: p ~ 1e-6). `CONFIDENCE` = 0.95 (one-sided 97.5%) settles "no gain of 2 points" as a
standard interval would. At 2048 images a gain of 2 points has p < 0.001 when the two
preprocessings disagree on under about 6% of the images, and no gain is settled below 2 points up
to 10% disagreement; more images would make the check cost more than a small audit.
The sample is the split's fixed order, evenly spaced (`Dataset.calibration_examples`): no
randomness, the same decision on every run.
"""

import dataclasses
from typing import Optional

import numpy as np
from scipy import stats

from tf_forget.stats import paired

SAMPLE = 256  # test images of the first look
MAX_SAMPLE = 2048  # test images the sample grows to at most (all of a smaller split)
MARGIN = 0.02  # top-1 gain (a fraction: 2 points) that refuses when significant
ALPHA = 0.001  # exact McNemar p below which a gain is not chance
CONFIDENCE = 0.95  # Newcombe interval whose upper limit settles "no gain of MARGIN"
CHANCE_ALPHA = 0.01  # one-sided binomial p at or above which a score is "near chance"
KINDS = ("better", "chance", "open", "caveat", "fine")


@dataclasses.dataclass(frozen=True)
class Comparison:
  """Another preprocessing against the given one, paired on the same images.

  Attributes:
    name: the other preprocessing.
    accuracy: its top-1 on the sample.
    gain: its top-1 minus the given one's.
    high: upper limit of Newcombe's paired interval of `gain` at `CONFIDENCE`.
    p_value: exact two-sided McNemar p of the paired correctness.
  """

  name: str
  accuracy: float
  gain: float
  high: float
  p_value: float

  @property
  def clearly_better(self):
    """At least `MARGIN` higher with p < `ALPHA`: a refusal."""
    return self.gain >= MARGIN and self.p_value < ALPHA

  @property
  def open(self):
    """Higher, not clearly better, and a gain of `MARGIN` still within its interval."""
    return not self.clearly_better and self.gain > 0 and self.high >= MARGIN

  @property
  def caveat(self):
    """Higher by `MARGIN` but not significantly, or significantly by less than `MARGIN`."""
    return (
      not self.clearly_better and self.gain > 0 and (self.gain >= MARGIN or self.p_value < ALPHA)
    )


@dataclasses.dataclass(frozen=True)
class Decision:
  """What the check concludes from one sample.

  Attributes:
    kind: one of `KINDS`: "better" and "chance" refuse, "open" asks for more images, "caveat"
      goes on with a caveat, "fine" goes on.
    accuracy: {preprocessing name: top-1 on the sample}.
    n: the sample's size.
    other: the `Comparison` named ("better", "open", "caveat": the highest scoring of its
      kind), else None.
  """

  kind: str
  accuracy: dict
  n: int
  other: Optional[Comparison] = None

  @property
  def refused(self):
    return self.kind in ("better", "chance")


def compare(labels, top1, given):
  """A `Comparison` of every preprocessing of `top1` but `given` with `given`, in `top1`'s order.

  Args:
    labels: int `[n]` true labels of the sample.
    top1: {preprocessing name: int `[n]` top-1}, with `given` among them.
    given: the preprocessing the audit was given.
  """
  y = np.asarray(labels)
  out = []
  for name, predicted in top1.items():
    if name == given:
      continue
    d = paired.paired_accuracy_difference(
      y, np.asarray(top1[given]), np.asarray(predicted), confidence=CONFIDENCE
    )
    out.append(
      Comparison(
        name=name,
        accuracy=d["accuracy_b"],
        gain=d["difference"],
        high=d["high"],
        p_value=paired.mcnemar_p(d["broken"], d["fixed"]),
      )
    )
  return out


def near_chance(right, n, num_classes):
  """Whether `right` of `n` correct is not significantly above chance (1 / `num_classes`)."""
  test = stats.binomtest(int(right), int(n), 1.0 / num_classes, alternative="greater")
  return test.pvalue >= CHANCE_ALPHA


def _highest(rows, kind):
  found = [r for r in rows if getattr(r, kind)]
  return max(found, key=lambda r: r.accuracy) if found else None


def verdict(labels, top1, given, num_classes, last=True):
  """The `Decision` of one sample (see the module docstring).

  Args:
    labels: int `[n]` true labels of the sample (n > 0).
    top1: {preprocessing name: int `[n]` top-1}, with `given` among them.
    given: the preprocessing the audit was given.
    num_classes: the number of classes (chance is 1 / num_classes).
    last: no larger sample will be looked at: an open comparison is then decided ("caveat" or
      "fine") instead of "open".
  """
  y = np.asarray(labels)
  rows = compare(y, top1, given)
  right = int(np.sum(np.asarray(top1[given]) == y))
  accuracy = {given: right / y.size, **{r.name: r.accuracy for r in rows}}
  decided = lambda kind, other=None: Decision(kind, accuracy, int(y.size), other)
  better = _highest(rows, "clearly_better")
  if better is not None:
    return decided("better", better)
  unsure = _highest(rows, "open")
  if unsure is not None and not last:
    return decided("open", unsure)
  if near_chance(right, y.size, num_classes):
    return decided("chance")
  doubt = _highest(rows, "caveat")
  return decided("caveat", doubt) if doubt is not None else decided("fine")


def settle(sample, given, num_classes, first=SAMPLE, cap=MAX_SAMPLE):
  """The `Decision` on a sample grown while it is "open" (see the module docstring).

  Args:
    sample: callable(size) -> (labels int `[m]`, {preprocessing name: top-1 int `[m]`}) of
      `size` test images (m = size), or of the whole split when it has fewer (m < size).
    given, num_classes: as for `verdict`.
    first: the first sample's size.
    cap: the largest sample; sizes double from `first` while they stay within it.
  """
  size = first
  while True:
    labels, top1 = sample(size)
    last = len(labels) < size or 2 * size > cap
    decision = verdict(labels, top1, given, num_classes, last=last)
    if decision.kind != "open":
      return decision
    size *= 2
