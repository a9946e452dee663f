"""The ship rule: which file to ship, weighed on size, flips and latency for a target.

A compressed file is eligible when it

  1. runs on the deployment target (`--target`: `tf_forget.evaluate.targets`; a file an
     integer-only accelerator cannot run is "not for target", with the reason);
  2. passes every gate (`gates.py`) and loses at most the accuracy budget (the
     `--max_accuracy_drop` gate, or `DEFAULT_ACCURACY_BUDGET` when that gate is not set: a
     budget of the rule, not a gate);
  3. is at most `--max_latency_ratio` times slower than the float reference, at batch 1 and
     at `--latency_batch`: "too slow" when the lower quartile of its per-round latency ratios
     (both files timed in the same rounds, `tf_forget.evaluate.latency.ratio_interval`) is
     above the bound — a measured slowdown, not noise.

Among the eligible files, one is dominated when another is at least as good on all three
objectives — size (`--size`: the file's bytes or its gzip download), flips against the
reference (not significantly more, paired over the test examples: `file_pairs`), latency at
batch 1 (not clearly slower) — and clearly better on one (smaller by more than `SIZE_TIE`,
significantly fewer flips, or clearly faster: by more than `LATENCY_TIE` and with the
interquartile ranges of the two files' per-round ratios apart). Of the undominated files
(the front) the rule ships the smallest (sizes within `SIZE_TIE` go to the higher top-1;
without measured sizes, the smallest top-1 loss), unless one at most `SIZE_TOLERANCE` larger flips
significantly fewer test examples: then the one of those with the fewest flips. A file of
the user's (`--candidate`) that is eligible and as good as that choice ships instead
(`tf_forget.report.user_verdict`): as good means its extra flips and its top-1 loss against the
choice are not significant and their intervals stay within `AS_GOOD_MARGIN` of the test
examples, and it is at most `SIZE_TOLERANCE` larger.
"""

import dataclasses

from tf_forget.artifacts import names
from tf_forget.policy import file_pairs

DEFAULT_ACCURACY_BUDGET = 0.01
DEFAULT_MAX_LATENCY_RATIO = 2.0  # --max_latency_ratio: over the float reference's latency
SIZE_TIE = 0.01  # sizes within 1% are the same size
SIZE_TOLERANCE = 0.10  # a file at most 10% larger may be chosen for significantly fewer flips
LATENCY_TIE = 0.10  # latency ratios within 10% are the same speed (machines are noisy)
AS_GOOD_MARGIN = 0.005  # half a point of the test examples: flips and top-1 "as good"
NAN = float("nan")


@dataclasses.dataclass(frozen=True)
class Settings:
  """What the rule weighs (the configuration's `deployment` section: `--target`, `--size`,
  `--max_latency_ratio`, `--latency_batch`)."""

  target: str = "cpu"
  size: str = "bytes"
  max_latency_ratio: float = DEFAULT_MAX_LATENCY_RATIO
  latency_batch: int = 64

  @classmethod
  def from_json(cls, doc):
    """Settings of the configuration's `deployment` dict (None: the defaults)."""
    doc = doc or {}
    return cls(**{f.name: doc[f.name] for f in dataclasses.fields(cls) if f.name in doc})


def size_column(size):
  """The verdict table's column the rule weighs for `--size` ("bytes" or "gzip")."""
  return "gzip_bytes" if size == "gzip" else "size_bytes"


def _finite(x):
  return x is not None and x == x


def too_slow(row, bound):
  """The clause saying how much slower than the float reference the row is, or "" when it is
  within `bound` (or not measured)."""
  worst = None
  for key, batch in (("latency_vs_dense", 1), ("latency_batch_vs_dense", row.get("latency_batch"))):
    low = row.get(f"{key}_low", NAN)
    if _finite(low) and low > bound and (worst is None or low > worst[1]):
      worst = (batch, low, row.get(key, NAN), row.get(f"{key}_high", NAN))
  if worst is None:
    return ""
  batch, low, median, high = worst
  batch = "" if batch is None or batch != batch else f" at batch {int(batch)}"
  out = (
    f"{median:.1f}x the float reference's latency{batch} (interquartile "
    f"{low:.1f}-{high:.1f}x over the timing rounds, this machine), over the "
    f"--max_latency_ratio of {bound:g}x"
  )
  ran = row.get("runtime") or ""
  return f"{out}: {ran}" if ran else out


def eligibility(frame, gates, ship, no_gain=None, budget=None):
  """Fills the `verdict` and `reason` columns up to the front; returns the eligible indices.

  Args:
    frame: the verdict table (`tf_forget.report.verdict.table`), modified in place.
    gates: `gates.Gates`.
    ship: the `tree.Deployment` section (target, max_latency_ratio).
    no_gain: {repaired variant: why} of the repairs that bought nothing: "no gain".
    budget: the accuracy budget (fraction).
  """
  out = []
  for i, row in frame.iterrows():
    v = row["variant"]
    if v == names.DENSE:
      continue
    slow = too_slow(row, ship.max_latency_ratio)
    runs = row.get("runs_on_target", True)
    if v in (no_gain or {}):
      verdict, reason = "no gain", no_gain[v]
    elif runs is False:
      verdict = "not for target"
      reason = f"{ship.target} cannot run it: {row.get('target_reason') or 'not supported'}"
    elif row["gate"] == "fail":
      verdict, reason = "fail", row["reasons"]
    elif not _finite(row["top1_change"]):
      verdict, reason = "undefined", "top-1 change undefined (no paired member)"
    elif -row["top1_change"] > budget + 1e-12:  # a loss of exactly the budget is within it
      verdict = "over budget"
      reason = f"top-1 {100 * row['top1_change']:+.2f} pt, budget -{100 * budget:.2f} pt"
    elif slow:
      verdict, reason = "too slow", slow
    else:
      verdict, reason = "pass", "within every bound"
      out.append(i)
    frame.at[i, "verdict"], frame.at[i, "reason"] = verdict, reason
  return out


def _no_worse_flips(pairs, a, b):
  """Whether a flips not significantly more examples than b (True without a comparison)."""
  d = None if pairs is None else pairs.flips_apart(a, b)
  return d is None or not d.low > 0


def _fewer_flips(pairs, a, b):
  """Whether a flips significantly fewer examples than b."""
  d = None if pairs is None else pairs.flips_apart(a, b)
  return d is not None and d.high < 0


def _latency(row):
  """(median, low, high) of the row's batch-1 latency ratio to the float reference (low / high:
  the interquartile range over the timing rounds, the median when not recorded), or None."""
  x = row.get("latency_vs_dense", NAN)
  if not _finite(x):
    return None
  low, high = row.get("latency_vs_dense_low", NAN), row.get("latency_vs_dense_high", NAN)
  return (x, low if _finite(low) else x, high if _finite(high) else x)


def _size(frame, i, size_col):
  x = frame.loc[i].get(size_col, NAN)
  return x if _finite(x) else NAN


def _slower(a, b):
  """Whether latency `a` is clearly above `b`: beyond `LATENCY_TIE` and beyond both spreads (the
  lower quartile of a's ratios above the upper quartile of b's)."""
  return a[0] > b[0] * (1 + LATENCY_TIE) and a[1] > b[2]


def dominates(frame, j, i, pairs, size_col):
  """Whether row j dominates row i (module docstring), and the words saying how."""
  a, b = frame.loc[j], frame.loc[i]
  sa, sb = _size(frame, j, size_col), _size(frame, i, size_col)
  la, lb = _latency(a), _latency(b)
  size_ok = not (_finite(sa) and _finite(sb)) or sa <= sb * (1 + SIZE_TIE)
  speed_ok = la is None or lb is None or not _slower(la, lb)
  if not (size_ok and speed_ok and _no_worse_flips(pairs, a["variant"], b["variant"])):
    return None
  better = []
  if _finite(sa) and _finite(sb) and sa < sb * (1 - SIZE_TIE):
    better.append(f"smaller ({sa / 1024:.1f} vs {sb / 1024:.1f} KiB)")
  if _fewer_flips(pairs, a["variant"], b["variant"]):
    better.append(
      f"fewer flips ({pairs.flips(a['variant']):.0f} vs {pairs.flips(b['variant']):.0f})"
    )
  if la is not None and lb is not None and _slower(lb, la):
    better.append(f"faster ({la[0]:.2f}x vs {lb[0]:.2f}x the reference's latency)")
  return ", ".join(better) or None


def front(frame, eligible, pairs, size_col):
  """(front indices, {dominated index: (index of a dominating row, how)}); a dominated row is
  named with a dominating row of the front when one dominates it."""
  beats = {
    i: [
      (j, how)
      for j in eligible
      if j != i
      for how in [dominates(frame, j, i, pairs, size_col)]
      if how
    ]
    for i in eligible
  }
  on_front = [i for i in eligible if not beats[i]]
  dominated = {
    i: next((b for b in beats[i] if b[0] in on_front), beats[i][0]) for i in eligible if beats[i]
  }
  return on_front, dominated


def choose(frame, on_front, pairs, size_col):
  """The rule's choice among the front (module docstring), or None when it is empty."""
  if not on_front:
    return None
  size = lambda i: _size(frame, i, size_col)
  sized = [i for i in on_front if _finite(size(i))]
  if not sized:  # no size measured: the smallest top-1 loss
    return max(on_front, key=lambda i: (frame.loc[i, "top1_change"], -i))
  least = min(size(i) for i in sized)
  tied = [i for i in sized if size(i) <= least * (1 + SIZE_TIE)]  # the same size
  smallest = max(tied, key=lambda i: (frame.loc[i, "top1"], -size(i), -i))
  limit = size(smallest) * (1 + SIZE_TOLERANCE)
  better = [
    i
    for i in sized
    if size(i) <= limit
    and i != smallest
    and _fewer_flips(pairs, frame.loc[i, "variant"], frame.loc[smallest, "variant"])
  ]
  if not better:
    return smallest
  return min(better, key=lambda i: (pairs.flips(frame.loc[i, "variant"]), size(i), i))


def as_good(pairs, frame, user, best, size_col="size_bytes"):
  """Whether row `user` is as good as row `best` (module docstring; sizes in `size_col`, the
  measure the rule weighs): (bool, the flips and top-1 `file_pairs.Difference`s of user -
  best)."""
  a, b = frame.loc[user, "variant"], frame.loc[best, "variant"]
  flips = None if pairs is None else pairs.flips_apart(a, b)
  top1 = None if pairs is None else pairs.top1_apart(a, b)
  if flips is None or top1 is None:
    return False, flips, top1
  ok = (
    not flips.low > 0
    and flips.high <= AS_GOOD_MARGIN
    and not top1.high < 0
    and -top1.low <= AS_GOOD_MARGIN
  )
  su, sb = _size(frame, user, size_col), _size(frame, best, size_col)
  ok = ok and (not (_finite(su) and _finite(sb)) or su <= sb * (1 + SIZE_TOLERANCE))
  return ok, flips, top1


def has_sizes(frame, size_col):
  """Whether any row of the table has a measured size in `size_col`."""
  return size_col in frame and frame[size_col].notna().any()


def rule_text(gates, ship, budget, users=False):
  """The rule in sentences, with its settings (and the user-file preference when `users`)."""
  gated = gates.max_accuracy_drop is not None
  size = "gzip size (the download)" if ship.size == "gzip" else "size in bytes"
  return (
    "Rule: eligible are the compressed files that "
    + ("pass every gate and " if gates.any() else "")
    + f"lose at most {100 * budget:.2f} points of top-1 "
    + (
      "(--max_accuracy_drop)"
      if gated
      else "(default budget, not a gate; --max_accuracy_drop sets it)"
    )
    + f", run on the target ({ship.target}: {names.TARGET_TITLES.get(ship.target, ship.target)}) "
    f"and are at most {ship.max_latency_ratio:g}x slower than the float reference at batch 1 "
    f"and {ship.latency_batch} (--max_latency_ratio, this machine). Of those no other beats "
    f"on {size}, flips against the reference and latency (the front), the smallest ships, "
    f"unless one at most {100 * SIZE_TOLERANCE:g}% larger flips significantly fewer test "
    "examples (paired over the examples)."
    + (
      " Your own files (--candidate) ship instead when as good: extra flips and top-1 loss "
      f"not significant and within {100 * AS_GOOD_MARGIN:g}% of the test examples, at most "
      f"{100 * SIZE_TOLERANCE:g}% larger."
      if users
      else ""
    )
  )


def front_note(frame, on_front, dominated, size):
  """The front and the dominated files in one sentence: 'Front (size in bytes × flips × latency):
  a, b; dominated: c (by a).'."""
  what = "gzip size" if size == "gzip" else "size in bytes"
  names_of = lambda idx: ", ".join(frame.loc[i, "variant"] for i in idx)
  out = f"Front ({what} × flips × latency): {names_of(on_front)}"
  if dominated:
    out += "; dominated: " + ", ".join(
      f"{frame.loc[i, 'variant']} (by {frame.loc[j, 'variant']})" for i, (j, _) in dominated.items()
    )
  return out + "."


def gives_up(frame, best, on_front, pairs, size_col="size_bytes"):
  """Sentences saying what the chosen row gives up against front files that flip
  significantly fewer examples (in numbers; sizes in the measure the rule weighs)."""
  out = []
  b = frame.loc[best]
  for i in on_front:
    if i == best:
      continue
    o = frame.loc[i]
    d = pairs.flips_apart(b["variant"], o["variant"]) if pairs is not None else None
    if d is None or not d.low > 0:
      continue
    ratio = _size(frame, i, size_col) / _size(frame, best, size_col)
    out.append(
      f"{b['variant']} flips {d.count:.0f} more test examples than {o['variant']} "
      f"({100 * d.mean:+.2f} pt of the examples, {100 * file_pairs.CONFIDENCE:g}% CI "
      f"{100 * d.low:+.2f} to {100 * d.high:+.2f}), which is "
      + (
        f"{ratio:.2f}x its {'gzip ' if size_col == 'gzip_bytes' else ''}size."
        if ratio == ratio
        else "of unmeasured size."
      )
    )
  return out
