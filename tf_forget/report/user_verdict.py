"""Your own files in the verdict: is your file OK, and why (not) yours.

A user who brings `.tflite` files (`--candidate=NAME=FILE`, variants `user_<NAME>`) asks two
things the verdict's table alone does not answer: does my file pass, and why was another file
recommended? For every user file this module writes one sentence for the verdict's first
screen (the page, the audit's terminal summary and `report.json["recommendation"]["users"]`):

* whether it passes the gates (and the budget), and the reasons when not;
* against the recommended file: the same top-1 predictions, or how many test examples apart
  (paired over the examples: the two files' own top-1, member k against member k), and both
  sizes;
* why it was or was not chosen: it flips more test examples against the reference than the
  recommended file (at the same size: its calibration, when that file is tf_forget's full int8
  conversion of the same model), it is larger, it loses more top-1 — or it was chosen.

The preference rule (`preferred`, applied by `verdict.recommend`): the user ships their own
bytes. A user file that passes every gate and the budget is recommended instead of tf_forget's
choice when it is as good as that file: it flips at most `FLIP_TOLERANCE` of the test examples
(rounded down: on fewer than 10,000 examples, none) more than the chosen file against the
reference, loses at most as many more examples of top-1, and is at most `SIZE_TOLERANCE`
larger. Among several such files,
the smallest (then the fewest flips). Flips are the examples whose top-1 differs from the
reference's (dense member k against the file's member paired with it, `run.pairing_of`), a
mean over the member pairs.

Numpy / pandas and `tf_forget.artifacts.names` only; the numbers come from the run's stored
predictions (`collect.Run`) and the verdict table (`verdict.table`).
"""

import dataclasses

import numpy as np

from tf_forget.artifacts import errors
from tf_forget.artifacts import names

# A user file within this share of the test examples (rounded down) of the chosen file's flips
# and top-1, and at most this much larger, is "as good": it is recommended instead.
FLIP_TOLERANCE = 0.0001
SIZE_TOLERANCE = 0.10
RULE = (f" Your own files (--candidate) first: a file of yours that passes and is as good as "
        f"that choice — at most {100 * FLIP_TOLERANCE:g}% of the test examples more top-1 "
        "flips against the reference (rounded down: none below 10,000 examples), at most as "
        f"many fewer right, and at most {100 * SIZE_TOLERANCE:g}% larger — is recommended "
        "instead: you ship your own bytes.")


def is_user(variant):
  """Whether `variant` is a file the user brought (`user_<NAME>`)."""
  try:
    return names.is_user_format(names.parse_variant(variant).format)
  except errors.Error:
    return False


def user_name(variant):
  """The NAME of `--candidate=NAME=FILE` of a `user_<NAME>` variant."""
  return names.parse_variant(variant).format[len(names.USER_FORMAT_PREFIX):]


@dataclasses.dataclass(frozen=True)
class Facts:
  """What the user-file sentences compare, from the stored predictions.

  Attributes:
    examples: N, the test examples.
    flips: variant -> mean over its member pairs of the examples whose top-1 differs from the
      reference's (dense: 0).
    top1: variant -> `[members, N]` top-1 (member order of `members`).
    members: variant -> member indices k.
  """
  examples: int
  flips: dict
  top1: dict
  members: dict

  def tolerance(self):
    """The flip (and top-1) tolerance in examples: `FLIP_TOLERANCE` of N, rounded down."""
    return float(int(FLIP_TOLERANCE * self.examples + 1e-9))

  def apart(self, a, b):
    """Mean over the members both variants have of the examples where their top-1 differ
    (paired over the examples; NaN without a common member)."""
    common = [k for k in self.members.get(a, []) if k in self.members.get(b, [])]
    if not common:
      return float("nan")
    rows = lambda v: [list(self.members[v]).index(k) for k in common]
    return float(np.mean(np.sum(self.top1[a][rows(a)] != self.top1[b][rows(b)], axis=1)))


def facts(run, variants):
  """`Facts` of the run's `variants` (dense and the files compared), or None without a user
  file among them."""
  if not any(is_user(v) for v in variants):
    return None
  dense = run.eval[names.DENSE]
  flips, top1, members = {}, {}, {}
  for v in variants:
    pop = run.eval.get(v)
    if pop is None:
      continue
    top1[v], members[v] = pop.top1, [int(k) for k in pop.members]
    if v == names.DENSE:
      flips[v] = 0.0
      continue
    pairs = [(int(k0), int(kt)) for k0, kt in run.pairing_of(v)["pairs"]]
    row_0 = {int(k): r for r, k in enumerate(dense.members)}
    row_t = {int(k): r for r, k in enumerate(pop.members)}
    counts = [np.sum(dense.top1[row_0[k0]] != pop.top1[row_t[kt]]) for k0, kt in pairs
              if k0 in row_0 and kt in row_t]
    flips[v] = float(np.mean(counts)) if counts else float("nan")
  return Facts(int(dense.ids.size), flips, top1, members)


def as_good(frame, user, best, f):
  """Whether the verdict row `user` is as good as the row `best` (see the module docstring)."""
  u, b = frame.loc[user], frame.loc[best]
  tol = f.tolerance()
  fu, fb = f.flips.get(u["variant"], np.nan), f.flips.get(b["variant"], np.nan)
  if not (fu == fu and fb == fb) or fu > fb + tol:
    return False
  if u["top1"] == u["top1"] and b["top1"] == b["top1"] and (
      b["top1"] - u["top1"]) * f.examples > tol + 1e-9:
    return False
  su, sb = u["size_bytes"], b["size_bytes"]
  return not (su == su and sb == sb) or su <= sb * (1 + SIZE_TOLERANCE)


def preferred(frame, best, candidates, f):
  """The index of the user's file to recommend instead of `best`, or None.

  Args:
    frame: the verdict table (`verdict.table`, `verdict` column filled).
    best: the index of the row tf_forget's rule chose.
    candidates: indices of the rows that pass every gate and the budget.
    f: `Facts`.
  """
  if f is None or is_user(frame.loc[best, "variant"]):
    return None
  good = [i for i in candidates
          if is_user(frame.loc[i, "variant"]) and as_good(frame, i, best, f)]
  if not good:
    return None
  key = lambda i: (frame.loc[i, "size_bytes"] if frame.loc[i, "size_bytes"] ==
                   frame.loc[i, "size_bytes"] else np.inf, f.flips.get(frame.loc[i, "variant"]))
  return min(good, key=key)


def _kib(size):
  return "size not measured" if size != size else f"{size / 1024:.1f} KiB"


def _count(x):
  """A count of examples: whole, or one decimal for a mean over members ("n/a": undefined)."""
  if x != x:
    return "n/a"
  return f"{x:.0f}" if float(x).is_integer() else f"{x:.1f}"


def _whose(variant):
  if variant == names.DENSE:
    return "the dense float32 file"
  return f"your {user_name(variant)} file" if is_user(variant) else f"tf_forget's {variant}"


def _why_not(u, b, f):
  """Why the passing row `u` was not chosen over the recommended row `b` (a phrase)."""
  fu, fb = f.flips.get(u["variant"], np.nan), f.flips.get(b["variant"], np.nan)
  ratio = u["size_bytes"] / b["size_bytes"] if b["size_bytes"] == b["size_bytes"] else np.nan
  same_size = ratio == ratio and abs(ratio - 1) <= SIZE_TOLERANCE
  out = []
  if fu > fb + f.tolerance():
    more = (f"it flips {_count(fu - fb)} more test examples than {_whose(b['variant'])} "
            f"({_count(fu)} vs {_count(fb)} against the reference)")
    if same_size:
      fmt = names.parse_variant(b["variant"]).format if b["variant"] != names.DENSE else ""
      more += (" at the same size: its calibration" if fmt == names.REPAIRED_FORMAT
               else " at the same size: how it was converted")
    out.append(more)
  if (b["top1"] - u["top1"]) * f.examples > f.tolerance() + 1e-9:
    out.append(f"its top-1 is {100 * (b['top1'] - u['top1']):.2f} points lower")
  if ratio == ratio and ratio > 1 + SIZE_TOLERANCE:
    out.append(f"it is {ratio:.2f}x the size")
  if not out:  # as good, but another file of yours was smaller
    out.append(f"{_whose(b['variant'])} is as good and smaller")
  return "; ".join(out)


def _same(f, a, b):
  """'the same top-1 predictions on all 200 test examples' or '3 of 200 test examples apart'
  (the two files' own top-1, paired over the examples: `Facts.apart`)."""
  apart = f.apart(a, b)
  if apart == 0:
    return f"the same top-1 predictions on all {f.examples:,} test examples"
  if apart != apart:
    return "no member to compare with"
  return f"{_count(apart)} of {f.examples:,} test examples apart"


def _next_best(frame):
  """tf_forget's smallest file that passes too (a row), or None."""
  rows = frame[(frame["verdict"] == "pass") & ~frame["variant"].map(is_user)]
  if rows.empty:
    return None
  return rows.sort_values("size_bytes", kind="stable").iloc[0]


def sentence(frame, user, best, f, instead_of=None):
  """The sentence of the verdict row `user` (index) against the recommended row `best`.

  Args:
    frame: the verdict table (`verdict` column filled).
    user, best: row indices.
    f: `Facts`.
    instead_of: the row tf_forget's rule chose, when the user's file replaced it (or None).
  """
  u, b = frame.loc[user], frame.loc[best]
  name = user_name(u["variant"])
  head = f"Your {name} file ({u['variant']}, {_kib(u['size_bytes'])})"
  k = int(u["members"])
  means = f" (means over {k} members)" if k > 1 else ""
  status = {"recommended": "passes the gates", "pass": "passes the gates"}.get(
      u["verdict"], f"does not pass ({u['verdict']}: {u['reason']})")
  if user == best:
    if instead_of is None:
      alt = _next_best(frame)
      return (f"{head} passes the gates and is recommended: the smallest file that does"
              + ("" if alt is None else
                 f"; against {_whose(alt['variant'])} ({_kib(alt['size_bytes'])}): "
                 f"{_same(f, u['variant'], alt['variant'])}{means}") + ".")
    o = frame.loc[instead_of]
    return (f"{head} passes the gates and is recommended instead of {_whose(o['variant'])} "
            f"({_kib(o['size_bytes'])}): {_same(f, u['variant'], o['variant'])}, "
            f"{_count(f.flips.get(u['variant'], np.nan))} vs "
            f"{_count(f.flips.get(o['variant'], np.nan))} flips against "
            f"the reference{means} — as good"
            + (f", and within {100 * SIZE_TOLERANCE:g}% of its size"
               if u["size_bytes"] == u["size_bytes"] and o["size_bytes"] == o["size_bytes"]
               else "") + ": you ship your own bytes.")
  against = (f"against the recommended file, {_whose(b['variant'])} "
             f"({_kib(b['size_bytes'])}): {_same(f, u['variant'], b['variant'])}{means}")
  if u["verdict"] == "pass":
    return f"{head} {status}; {against}; not chosen: {_why_not(u, b, f)}."
  return f"{head} {status}; {against}."


def sentences(frame, recommendation, f):
  """One sentence per user row of the verdict table (table order), or [] without `f`."""
  if f is None:
    return []
  best = frame.index[frame.variant == recommendation["variant"]][0]
  instead = recommendation.get("instead_of")
  instead_of = (frame.index[frame.variant == instead][0] if instead else None)
  return [sentence(frame, i, best, f, instead_of) for i in frame.index
          if is_user(frame.loc[i, "variant"])]


def users_first(frame):
  """The verdict table with the user's rows first, then the others in their order."""
  if not frame["variant"].map(is_user).any():
    return frame
  order = sorted(range(len(frame)), key=lambda i: not is_user(frame["variant"].iloc[i]))
  return frame.iloc[order].reset_index(drop=True)
