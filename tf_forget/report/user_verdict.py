"""Your own files in the verdict: is your file OK, and why (not) yours.

A user who brings `.tflite` files (`--candidate=NAME=FILE`, variants `user_<NAME>`) asks two
things the verdict's table alone does not answer: is my file fit to ship, and why was another
file recommended? For every user file this module writes one sentence for the verdict's first
screen (the page, the audit's terminal summary, the Markdown summary and
`report.json["recommendation"]["users"]`):

* whether it is eligible (`ship_rule.eligibility`: gates when any is set, the accuracy budget,
  the target, the latency bound), and the reason when not;
* what it forgot: the classes whose recall changed significantly;
* against the recommended file: the same top-1 predictions, or how many test examples apart
  (the two files' own top-1, member k against member k), and both sizes with their gzip sizes;
* why it was or was not chosen, in numbers: the flips it adds against the reference with
  their paired interval (`file_pairs`), the top-1 it loses, its size, its latency — or that
  it is as good (`ship_rule.as_good`) and ships instead: you ship your own bytes.

Numpy / pandas and the report's own modules only; the numbers come from the verdict table
(`verdict.table`) and the paired comparisons (`file_pairs.Pairs`).
"""

from tf_forget.artifacts import errors
from tf_forget.artifacts import names
from tf_forget.policy import ship_rule
from tf_forget.report.words import quantities


def is_user(variant):
  """Whether `variant` is a file the user brought (`user_<NAME>`)."""
  try:
    return names.is_user_format(names.parse_variant(variant).format)
  except errors.Error:
    return False


def user_name(variant):
  """The NAME of `--candidate=NAME=FILE` of a `user_<NAME>` variant."""
  return names.parse_variant(variant).format[len(names.USER_FORMAT_PREFIX) :]


def preferred(frame, best, candidates, pairs, size_col="size_bytes"):
  """The index of the user's file to recommend instead of `best`, or None: among the eligible
  `candidates` of the user's that are as good (`ship_rule.as_good`), the smallest (then the
  fewest flips).

  Args:
    frame: the verdict table (`verdict` column filled).
    best: the index of the row the rule chose.
    candidates: indices of the eligible rows.
    pairs: `file_pairs.Pairs`, or None.
    size_col: the size the rule weighs (`ship_rule.size_column`).
  """
  if pairs is None or is_user(frame.loc[best, "variant"]):
    return None
  good = [
    i
    for i in candidates
    if is_user(frame.loc[i, "variant"]) and ship_rule.as_good(pairs, frame, i, best, size_col)[0]
  ]
  if not good:
    return None
  size = lambda i: frame.loc[i].get(size_col, float("nan"))
  return min(
    good,
    key=lambda i: (
      size(i) if size(i) == size(i) else float("inf"),
      pairs.flips(frame.loc[i, "variant"]),
    ),
  )


def _kib(size):
  return "size not measured" if size != size else f"{size / 1024:.1f} KiB"


def _sizes(row):
  """'12.3 KiB, gzip 7.9 KiB' (the file and its download)."""
  g = row.get("gzip_bytes", float("nan"))
  return _kib(row["size_bytes"]) + ("" if g != g else f", gzip {_kib(g)}")


def _whose(variant):
  if variant == names.DENSE:
    return "the dense float32 file"
  return f"your {user_name(variant)} file" if is_user(variant) else f"tf_forget's {variant}"


def _pt(d):
  """'+1.69 pt [+1.45, +1.93]' of a `file_pairs.Difference` (points of the test examples)."""
  return f"{100 * d.mean:+.2f} pt [{100 * d.low:+.2f}, {100 * d.high:+.2f}]"


def _why_not(frame, user, best, pairs, size_col):
  """Why the eligible row `user` was not chosen over the recommended row `best`, in numbers
  (a phrase)."""
  u, b = frame.loc[user], frame.loc[best]
  ok, flips, top1 = ship_rule.as_good(pairs, frame, user, best, size_col)
  out = []
  if flips is not None and flips.low > 0:
    out.append(
      f"it flips {quantities.count(flips.count)} more test examples than {_whose(b['variant'])}"
      f" ({quantities.count(pairs.flips(u['variant']))} vs {quantities.count(pairs.flips(b['variant']))} "
      f"against the reference; {_pt(flips)}, paired)"
    )
  elif flips is not None and flips.high > ship_rule.AS_GOOD_MARGIN:
    out.append(
      f"its flips cannot be shown as few as {_whose(b['variant'])}'s "
      f"({_pt(flips)}: the interval reaches past {100 * ship_rule.AS_GOOD_MARGIN:g} pt)"
    )
  if top1 is not None and (top1.high < 0 or -top1.low > ship_rule.AS_GOOD_MARGIN):
    gap = 100 * (b["top1"] - u["top1"])
    out.append(
      f"its top-1 is {abs(gap):.2f} points {'lower' if gap > 0 else 'higher'} "
      f"({100 * top1.mean:+.2f} pt [{100 * top1.low:+.2f}, {100 * top1.high:+.2f}], "
      "paired)"
    )
  su, sb = u.get(size_col, float("nan")), b.get(size_col, float("nan"))
  ratio = su / sb if sb == sb else float("nan")
  if ratio == ratio and ratio > 1 + ship_rule.SIZE_TOLERANCE:
    out.append(f"it is {ratio:.2f}x the {'gzip ' if size_col == 'gzip_bytes' else ''}size")
  if not out:  # as good, but another file of yours was smaller
    out.append(f"{_whose(b['variant'])} is as good and smaller")
  return "; ".join(out)


def _same(pairs, a, b):
  """'the same top-1 predictions on all 200 test examples' or '3 of 200 test examples apart'
  (the two files' own top-1, member k against member k: `file_pairs.Pairs.apart`)."""
  apart = pairs.apart(a, b)
  if apart == 0:
    return f"the same top-1 predictions on all {pairs.examples:,} test examples"
  if apart != apart:
    return "no member to compare with"
  return f"{quantities.count(apart)} of {pairs.examples:,} test examples apart"


def _next_best(frame):
  """tf_forget's smallest eligible file (a row), or None."""
  rows = frame[frame["verdict"].isin(("pass", "dominated")) & ~frame["variant"].map(is_user)]
  if rows.empty:
    return None
  return rows.sort_values("size_bytes", kind="stable").iloc[0]


def _status(u, gated):
  """Whether the row is fit to ship, in words that name a gate only when one is set."""
  if u["verdict"] in ("recommended", "pass", "dominated"):
    return "passes every gate and is eligible" if gated else "is eligible"
  return f"is not eligible ({u['verdict']}: {u['reason']})"


def sentence(frame, user, best, pairs, gated, instead_of=None, size_col="size_bytes"):
  """The sentence of the verdict row `user` (index) against the recommended row `best`.

  Args:
    frame: the verdict table (`verdict` column filled).
    user, best: row indices.
    pairs: `file_pairs.Pairs`.
    gated: whether any gate is set (the words say "gate" only then).
    instead_of: the row the rule chose, when the user's file replaced it (or None).
    size_col: the size the rule weighs (`ship_rule.size_column`).
  """
  u, b = frame.loc[user], frame.loc[best]
  head = f"Your {user_name(u['variant'])} file ({u['variant']}, {_sizes(u)})"
  k = int(u["members"])
  means = f" (means over {k} members)" if k > 1 else ""
  forgot = u.get("forgot") or ""
  forgot = f"; {forgot}" if forgot else ""
  if user == best:
    if instead_of is None:
      alt = _next_best(frame)
      return (
        f"{head} {_status(u, gated)} and is recommended: the rule's choice{forgot}"
        + (
          ""
          if alt is None
          else f"; against {_whose(alt['variant'])} ({_sizes(alt)}): "
          f"{_same(pairs, u['variant'], alt['variant'])}{means}"
        )
        + "."
      )
    o = frame.loc[instead_of]
    _, flips, _ = ship_rule.as_good(pairs, frame, user, instead_of, size_col)
    return (
      f"{head} {_status(u, gated)} and is recommended instead of {_whose(o['variant'])} "
      f"({_sizes(o)}): {_same(pairs, u['variant'], o['variant'])}, "
      f"{quantities.count(pairs.flips(u['variant']))} vs {quantities.count(pairs.flips(o['variant']))} flips "
      f"against the reference{means} ({_pt(flips)}, paired) — as good, and within "
      f"{100 * ship_rule.SIZE_TOLERANCE:g}% of its size: you ship your own bytes{forgot}."
    )
  against = (
    f"against the recommended file, {_whose(b['variant'])} ({_sizes(b)}): "
    f"{_same(pairs, u['variant'], b['variant'])}{means}"
  )
  status = _status(u, gated)
  if u["verdict"] in ("pass", "dominated"):
    return (
      f"{head} {status}{forgot}; {against}; not chosen: "
      f"{_why_not(frame, user, best, pairs, size_col)}."
    )
  return f"{head} {status}{forgot}; {against}."


def sentences(frame, recommendation, pairs, gated, size_col="size_bytes"):
  """One sentence per user row of the verdict table (table order); `size_col`: the size the
  rule weighs."""
  best = frame.index[frame.variant == recommendation["variant"]][0]
  instead = recommendation.get("instead_of")
  instead_of = frame.index[frame.variant == instead][0] if instead else None
  return [
    sentence(frame, i, best, pairs, gated, instead_of, size_col)
    for i in frame.index
    if is_user(frame.loc[i, "variant"])
  ]


def users_first(frame):
  """The verdict table with the user's rows first, then the others in their order."""
  if not frame["variant"].map(is_user).any():
    return frame
  order = sorted(range(len(frame)), key=lambda i: not is_user(frame["variant"].iloc[i]))
  return frame.iloc[order].reset_index(drop=True)
