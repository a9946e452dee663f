"""The verdict's sentences: the recommended file's, the caveats, the K = 1 design.

What `verdict.recommend` and `verdict.compute` say on the first screen, in one place: `why` (the
recommended file's sizes, top-1 change with its interval, flips, latency, what ran it, what it
forgot), `size_note` (the other size measure's choice), `caveats` (an interval reaching past the
budget, a class or subgroup that lost more than `WATCH` with no gate on it, small populations,
latency measured on this machine), `misscaled_caveat`, `design` (K = 1), `NONE_ELIGIBLE` and
`NO_SIZES`. The rule, the front and what the choice gives up are the policy's words
(`tf_forget.policy.ship_rule`).
"""

from tf_forget.artifacts import names
from tf_forget.policy import ship_rule
from tf_forget.report import single_network
from tf_forget.report.words import quantities
from tf_forget.stats import intervals

# The `pairing` of a row whose top-1 interval is over the test examples (K = 1).
K1_PAIRING = "paired examples"
SMALL_K = 10
# A worst-class / worst-subgroup change larger than this (5 points) is named in the caveats of
# the recommended file when no gate bounds it.
WATCH = 0.05
NAN = float("nan")

# A compressed file that beats its reference by more than chance allows: exact
# McNemar p below this, with more than MISSCALED_RATIO times as many fixed as broken examples.
MISSCALED_P = 0.001
MISSCALED_RATIO = 2

# The recommendation's `why` when no compressed file is eligible.
NONE_ELIGIBLE = "no compressed file is eligible: ship the dense float32 file."
# Added to the rule when the run measured no file size.
NO_SIZES = " No file sizes were measured in this run, so the smallest top-1 loss decides."


def design(run, measures):
  """The K = 1 design in one sentence for the first screen, or None (K > 1)."""
  if not measures.config.get(single_network.SETTINGS_KEY):
    return None
  n = int(run.eval[names.DENSE].ids.size)
  return (
    f"Design: one network (K = 1) against its own compressed files: intervals and tests "
    f"are over the {n} test examples (paired: McNemar, Newcombe), not over training "
    "seeds — they describe this trained network, not its training recipe."
  )


def size_note(frame, best, other_best, other):
  """The sentence saying that weighing the other size measure changes the choice."""
  b, o = frame.loc[best], frame.loc[other_best]
  col = ship_rule.size_column(other)
  what = "gzip size (the download)" if other == "gzip" else "size in bytes (the file on disk)"
  made = " Pruned and clustered files are made to compress:" if other == "gzip" else ""
  return (
    f"Weighed by {what}, the rule would choose {o['variant']} ({quantities.kib(o[col])} against "
    f"{quantities.kib(b[col])} for {b['variant']}).{made} give --size={other} if that is what "
    "your deployment pays for."
  )


def why(row, pairs):
  """The recommended file in one sentence: sizes, top-1 change, flips, latency, runtime."""
  size = (
    "size not measured"
    if not _finite(row["size_bytes"])
    else f"{quantities.kib(row['size_bytes'])}"
    + (f" (gzip {quantities.kib(row.get('gzip_bytes'))})" if _finite(row.get("gzip_bytes")) else "")
    + f", {row['size_vs_dense']:.2f}x the dense file"
  )
  flips = pairs.flips(row["variant"]) if pairs is not None else NAN
  n = pairs.examples if pairs is not None else 0
  out = (
    f"{row['variant']}: {size}; top-1 {quantities.points(row['top1_change'])} "
    f"({100 * intervals.CONFIDENCE:g}% CI {quantities.points(row['top1_low'])} to "
    f"{quantities.points(row['top1_high'])}, {pairing_words(row['pairing'])})"
  )
  if _finite(flips):
    out += f"; {quantities.count(flips)} of {n:,} test examples flipped against the reference" + (
      " (a mean over member pairs)" if int(row["members"]) > 1 else ""
    )
  if _finite(row.get("latency_vs_dense")):
    out += (
      f"; {row['latency_vs_dense']:.2f}x the float reference's latency at batch 1 "
      "(this machine" + (f", {row['runtime']}" if row.get("runtime") else "") + ")"
    )
  forgot = row.get("forgot") or ""
  return out + (f"; {forgot}" if forgot else "") + "."


def _finite(x):
  return x is not None and x == x


def caveats(frame, best, budget, gates=None, settings=None):
  """The recommendation's caveats (module docstring), one sentence each."""
  out = []
  if settings is not None and settings.target != "cpu":
    out.append(
      f"Latency is this machine's CPU (LiteRT, XNNPACK where it takes the ops), not "
      f"the {settings.target} target's: measure on the device before you rely on it."
    )
  if best is not None:
    row = frame.loc[best]
    name = row["variant"]
    low = row["top1_low"]
    if low == low and -low > budget:
      out.append(
        f"The interval of {name}'s top-1 change reaches {quantities.points(low)}, past the "
        "budget: the data do not rule out a larger loss."
      )
    loss = row.get("worst_class_change", NAN)
    if loss == loss and -loss > WATCH:
      out.append(
        f"{name} loses {-100 * loss:.2f} pt of recall on class {row['worst_class']} "
        f"(n = {int(row['worst_class_n'])}); set --max_significant_classes to gate "
        "on class-level changes."
      )
    rise = row.get("worst_subgroup_fnr_change", NAN)
    if rise == rise and rise > WATCH and (gates is None or gates.max_subgroup_fnr_increase is None):
      out.append(
        f"{name} raises the false-negative rate of subgroup {row['worst_subgroup']} "
        f"by {quantities.points(rise)} (n = {int(row['worst_subgroup_n'])} positives); set "
        "--max_subgroup_fnr_increase to gate on it."
      )
  k = int(frame["members"].min())
  k1 = k == 1 and "pairing" in frame and (frame["pairing"] == K1_PAIRING).any()  # design says it
  if k < SMALL_K and not k1:
    out.append(
      f"Small populations (K = {k} members; the papers use 30): intervals are wide, "
      "and a class flagged significant at p ≤ 0.05 without correction may be chance "
      "(see the BH-adjusted p)."
    )
  return out


def misscaled_caveat(measures, scaling_checked=False):
  """The first-screen caveat when a compressed file of a K = 1 audit beats its reference by clearly
  more than chance allows (`k1_topline`: exact McNemar p < `MISSCALED_P`, more than
  `MISSCALED_RATIO` times as many fixed as broken examples), or None.

  A post-training conversion does not add accuracy; a file trained further than its reference
  (fine-tuned while pruning, clustering or quantization-aware training) can, and so can a
  reference fed values it was not trained on next to a quantized file that rescales its own
  input. With `scaling_checked` (the input scaling check ran and found the reference's
  preprocessing right, `tf_forget.evaluate.input_scaling`) the sentence names the first; else
  both, the scaling first."""
  t = measures.tables.get("k1_topline")
  if t is None or not len(t):
    return None
  hits = t[(t["mcnemar_p"] < MISSCALED_P) & (t["fixed"] > MISSCALED_RATIO * t["broken"])]
  if not len(hits):
    return None
  row = hits.sort_values("difference", ascending=False, kind="stable").iloc[0]
  head = (
    f"{row['variant']} beats its reference by {quantities.points(row['difference'])} "
    f"({row['fixed']} examples fixed, {row['broken']} broken; exact McNemar p = "
    f"{row['mcnemar_p']:.1g}), more than chance allows: "
  )
  if scaling_checked:
    return head + (
      "a post-training conversion does not add accuracy, so it was trained "
      "further than the reference (fine-tuned while pruning, clustering or "
      "quantization-aware training) or made from another model; the input "
      "scaling check found the reference's preprocessing right."
    )
  return head + (
    "compression does not add accuracy, so the inputs are probably mis-scaled — "
    "check --preprocess (what the reference was trained on) — or the file was "
    "trained further than the reference."
  )


def pairing_words(pairing):
  """How the top-1 interval pairs, for the recommendation's sentence."""
  return "paired over the test examples" if pairing == K1_PAIRING else f"{pairing} members"
