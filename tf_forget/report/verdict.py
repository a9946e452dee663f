"""The report's verdict block: which file to ship, what it costs, how sure we are.

One row per variant, against the dense population:

* the file a user ships (`deploy/<variant>/0.tflite`, the encoding the audit chose), its size
  and batch-1 latency, both also as ratios to the dense float32 file (`deployment` table);
* top-1 change (points) with its t-based confidence interval over members
  (`tf_forget.stats.intervals`: Welch for independently trained populations, paired for a
  network compared with itself before compression — the pairing of `tf_forget.report.pairing`);
  with one dense member (K = 1) instead the paired per-example interval of the
  `k1_topline` table (Newcombe's, over the test examples; `single_network`), and the
  recommendation states that design (`design`);
* the worst class: the largest mean recall loss (000 Figure 2's absolute recall difference,
  docs/spec.md §3.3), its number of test examples, interval, Welch p-value (docs/spec.md §3.1) and
  the Benjamini-Hochberg adjusted one over the variant's classes; with K = 1 instead the largest
  recall drop of `k1_classes` (Newcombe interval, exact McNemar p, BH p) and the number of
  classes it marks significant (`significant_classes`);
* the worst subgroup: the largest FNR increase over the protected subgroups (004 Table 3,
  docs/spec.md §4.2; first `subgroup_members` members, docs/spec.md §1.5), its number of actual
  positives and interval; with K = 1 that of `k1_subgroups` (paired bootstrap interval over the test
  examples);
* #PIE (000 §2.3) and the gate verdict with its reasons (`gates.py`; with K = 1 the gates read
  the same paired numbers, `gates.gate_measures`, and a failed gate's reason names the test);
  the flip-rate and KL gates read the `divergence` table through the same function.

The recommendation (`recommend`): among the compressed variants that pass every gate and lose
at most the accuracy budget (the `--max_accuracy_drop` gate, or `DEFAULT_ACCURACY_BUDGET`
when that gate is not set — a budget for the recommendation only, not a gate: the exit status
is unaffected), the smallest shipped file; sizes within `SIZE_TIE` of each other go to the
higher top-1. Without measured sizes, the one with the smallest top-1 loss. If none
qualifies: the dense float32 file. Then the user's own files (`user_verdict`): one
of theirs that is as good as that choice ships instead, and each gets one sentence; a repaired
file that bought nothing (`repair_report.no_gain`) is "no gain", never recommended. Caveats say
when the interval of the recommended file's change reaches past the budget or when populations
are small (K < `SMALL_K`; the papers use K = 30, docs/spec.md §1.5).
"""

import pandas as pd

from tf_forget.artifacts import names
from tf_forget.report import gates as gates_lib
from tf_forget.report import pairing as pairing_lib
from tf_forget.report import repair_report
from tf_forget.report import single_network
from tf_forget.report import user_verdict
from tf_forget.report import verdict_cells as cells
from tf_forget.stats import accuracy
from tf_forget.stats import intervals

DEFAULT_ACCURACY_BUDGET = 0.01
SIZE_TIE = 0.01
SMALL_K = 10
# A worst-class / worst-subgroup change larger than this (5 points) is named in the caveats of
# the recommended file when no gate bounds it.
WATCH = 0.05
NAN = float("nan")
# The `pairing` of a row whose top-1 interval is over the test examples (K = 1).
K1_PAIRING = "paired examples"
# A compressed file that beats its reference by more than chance allows: exact
# McNemar p below this, with more than MISSCALED_RATIO times as many fixed as broken examples.
MISSCALED_P = 0.001
MISSCALED_RATIO = 2


def _interval(values_0, values_t, paired, confidence):
  return intervals.mean_difference_interval(values_0, values_t, paired=paired,
                                            confidence=confidence, bounds=(0.0, 1.0))


def _empty(paired):
  nan = float("nan")
  return {"difference": nan, "low": nan, "high": nan, "n_0": 0, "n_t": 0, "spread": nan,
          "method": "paired" if paired else "welch", "confidence": intervals.CONFIDENCE}


def top1_interval(run, variant, confidence=intervals.CONFIDENCE):
  """The interval of the variant's top-1 change (fraction), `intervals` dict (NaN without a
  paired member: every parent link stale, `pairing.py`)."""
  p0, pt, paired = pairing_lib.comparison(run, variant)
  if not pt.members.size:
    return _empty(paired)
  return _interval(accuracy.top1_accuracy(p0.top1, p0.labels),
                   accuracy.top1_accuracy(pt.top1, pt.labels), paired, confidence)


def k1_top1(measures, variant):
  """The variant's `k1_topline` row as an interval dict (`difference`, `low`, `high`), or None
  when the report has no K = 1 tables (`single_network`) or none for the variant."""
  t = measures.tables.get("k1_topline")
  if t is None or variant not in set(t.variant):
    return None
  row = t[t.variant == variant].iloc[0]
  return {"difference": float(row["difference"]), "low": float(row["low"]),
          "high": float(row["high"])}


def design(run, measures):
  """The K = 1 design in one sentence for the first screen, or None (K > 1)."""
  if not measures.config.get(single_network.SETTINGS_KEY):
    return None
  n = int(run.eval[names.DENSE].ids.size)
  return (f"Design: one network (K = 1) against its own compressed files: intervals and tests "
          f"are over the {n} test examples (paired: McNemar, Newcombe), not over training "
          "seeds — they describe this trained network, not its training recipe.")


def _shipped(deploy, variant):
  """(encoding, bytes, batch-1 ms) of the variant's shipped file, NaN where not measured."""
  if deploy is None or variant not in set(deploy.variant):
    return "", NAN, NAN
  row = deploy[deploy.variant == variant].iloc[0]
  enc = row["encoding"]
  size = row["sparse_bytes"] if enc == "sparse" else row["plain_bytes"]
  ms = row.get(f"{enc}_ms_b1", NAN)
  return enc, float(size) if size is not None else NAN, float(ms) if ms is not None else NAN


def ships_plain_why(deploy, variant):
  """Why a pruned variant ships its plain file, in one sentence, or "".

  The reason is the one recorded with the decision in `eval/encodings.json`
  (`tf_forget.evaluate.deploy.choose_encoding`: the sparse twin slower than the bound beyond its
  ratio interval, not smaller, predicting differently, ...), so the verdict says what the bundle
  did.

  Args:
    deploy: the `deployment` table (`deployment.table`) or None.
    variant: an audited variant name.
  """
  if deploy is None or variant not in set(deploy.variant):
    return ""
  row = deploy[deploy.variant == variant].iloc[0]
  try:
    pruned = names.parse_variant(variant).member_variant != names.DENSE
  except names.FormatError:
    return ""
  reason = row.get("reason") or ""
  return f"ships plain: {reason}" if pruned and row["encoding"] == "plain" and reason else ""


def table(run, measures, gates, confidence=intervals.CONFIDENCE):
  """The verdict table, one row per variant (dense first), as the module docstring says.

  Args:
    run: `collect.Run`.
    measures: `measures.Measures` (with the `deployment` table when the run has one).
    gates: `gates.Gates`.
    confidence: level of the top-1 interval (the class and subgroup intervals come from their
      tables, at `intervals.CONFIDENCE`).

  Returns:
    DataFrame; changes are fractions (points / 100), NaN where undefined.
  """
  deploy = measures.tables.get("deployment")
  _, dense_bytes, dense_ms = _shipped(deploy, names.DENSE)
  classes = measures.tables["class_level"]
  rows = []
  for variant, s in measures.variants.items():
    enc, size, ms = _shipped(deploy, variant)
    row = {"variant": variant, "members": s["members"],
           "file": f"deploy/{variant}/0.tflite", "encoding": enc, "size_bytes": size,
           "size_vs_dense": size / dense_bytes, "latency_ms": ms,
           "latency_vs_dense": ms / dense_ms, "top1": s["top1"]}
    if variant == names.DENSE:
      rows.append(dict(row, top1_change=0.0, verdict="baseline",
                       reason="the uncompressed reference"))
      continue
    k1 = k1_top1(measures, variant)
    top = k1 or top1_interval(run, variant, confidence)
    pairing = K1_PAIRING if k1 else "paired" if top["method"] == "paired" else "independent"
    row.update(top1_change=top["difference"], top1_low=top["low"], top1_high=top["high"],
               pairing=pairing)
    # K = 1: the worst class / subgroup and the gates from the paired tests.
    g = gates_lib.gate_measures(variant, s, measures.config, measures.tables)
    k1_design = g.get("design") == gates_lib.K1_DESIGN
    if k1_design:
      wc = cells.k1_worst_class(measures.tables.get("k1_classes"), variant)
      row["significant_classes"] = g["significant_classes"]
    else:
      wc = cells.worst_class(run, classes[classes.variant == variant])
    if wc is not None:
      row.update(worst_class=wc["name"], worst_class_n=wc["n"],
                 worst_class_change=wc["difference"], worst_class_low=wc["low"],
                 worst_class_high=wc["high"], worst_class_p=wc["p_value"],
                 worst_class_p_bh=wc["p_bh"])
    ws = cells.k1_worst_subgroup(g) if k1_design else cells.worst_subgroup(measures, variant)
    if ws is not None:
      row.update(worst_subgroup=ws["name"], worst_subgroup_n=ws["n"],
                 worst_subgroup_fnr_change=ws["difference"], worst_subgroup_low=ws["low"],
                 worst_subgroup_high=ws["high"])
    passed, reasons = gates_lib.verdict(variant, g, gates)
    row.update(pie_count=s.get("pie_count", NAN), gate="pass" if passed else "fail",
               reasons="; ".join(reasons))
    rows.append(row)
  return pd.DataFrame(rows)


def _pairing_words(pairing):
  """How the top-1 interval pairs, for the recommendation's sentence."""
  return "paired over the test examples" if pairing == K1_PAIRING else f"{pairing} members"


def _points(x):
  return f"{100 * x:+.2f} pt"


def recommend(frame, gates, default_budget=DEFAULT_ACCURACY_BUDGET, users=None, no_gain=None):
  """Names the file to ship and the rule that chose it; fills the table's `verdict` column.

  Args:
    frame: from `table` (modified in place: `verdict` and `reason` of compressed rows).
    gates: `gates.Gates`.
    default_budget: the accuracy budget when the `max_accuracy_drop` gate is not set.
    users: `user_verdict.Facts` when the user brought files: one of theirs that is as good as
      the rule's choice is recommended instead (`user_verdict.preferred`); None: no user file.
    no_gain: {repaired variant: why} of the repairs that bought nothing
      (`repair_report.no_gain`): verdict "no gain", never recommended.

  Returns:
    dict `variant`, `file`, `rule` (one sentence), `why` (one sentence), `caveats` (list); with
    a user's file recommended instead of the rule's choice also `instead_of` (that variant).
  """
  gated = gates.max_accuracy_drop is not None
  budget = gates.max_accuracy_drop if gated else default_budget
  rule = ("Rule: the smallest shipped file among the compressed variants that pass every gate "
          f"and lose at most {100 * budget:.2f} points of top-1 "
          + ("(--max_accuracy_drop)" if gated else
             "(default budget, not a gate; set --max_accuracy_drop to change it)")
          + f"; sizes within {100 * SIZE_TIE:g}% go to the higher top-1.")
  if users is not None:
    rule += user_verdict.RULE
  has_size = frame["size_bytes"].notna().any()
  candidates = []
  for i, row in frame.iterrows():
    if row["variant"] == names.DENSE:
      continue
    if row["variant"] in (no_gain or {}):
      frame.at[i, "verdict"], frame.at[i, "reason"] = "no gain", no_gain[row["variant"]]
    elif row["gate"] == "fail":
      frame.at[i, "verdict"], frame.at[i, "reason"] = "fail", row["reasons"]
    elif row["top1_change"] != row["top1_change"]:
      frame.at[i, "verdict"] = "undefined"
      frame.at[i, "reason"] = "top-1 change undefined (no paired member)"
    elif -row["top1_change"] > budget + 1e-12:  # a loss of exactly the budget is within it
      frame.at[i, "verdict"] = "over budget"
      frame.at[i, "reason"] = (f"top-1 {_points(row['top1_change'])}, budget "
                               f"-{100 * budget:.2f} pt")
    else:
      frame.at[i, "verdict"], frame.at[i, "reason"] = "pass", "within every bound"
      candidates.append(i)
  if not has_size:
    rule += " No file sizes were measured in this run, so the smallest top-1 loss decides."
  if not candidates:
    dense = frame[frame.variant == names.DENSE].iloc[0]
    return {"variant": names.DENSE, "file": dense["file"], "rule": rule,
            "why": "no compressed variant passes: ship the dense float32 file.",
            "caveats": _caveats(frame, None, budget, gates)}
  cand = frame.loc[candidates]
  if has_size and cand["size_bytes"].notna().any():
    smallest = cand["size_bytes"].min()
    near = cand[cand["size_bytes"] <= smallest * (1 + SIZE_TIE)]
    best = near.sort_values(["top1", "size_bytes"], ascending=[False, True], kind="stable").index[0]
  else:
    best = cand.sort_values("top1_change", ascending=False, kind="stable").index[0]
  instead_of = None
  mine = user_verdict.preferred(frame, best, candidates, users)
  if mine is not None:  # the user's own bytes, as good as the rule's choice
    instead_of = frame.loc[best, "variant"]
    frame.at[best, "reason"] = (f"within every bound; your {frame.loc[mine, 'variant']} is as "
                                "good and ships instead")
    best = mine
  frame.at[best, "verdict"] = "recommended"
  row = frame.loc[best]
  size = (f"{row['size_bytes'] / 1024:.1f} KiB, {row['size_vs_dense']:.2f}x the dense file"
          if row["size_bytes"] == row["size_bytes"] else "size not measured")
  why = (f"{row['variant']}: {size}; top-1 {_points(row['top1_change'])} "
         f"({100 * intervals.CONFIDENCE:g}% CI {_points(row['top1_low'])} to "
         f"{_points(row['top1_high'])}, {_pairing_words(row['pairing'])}).")
  out = {"variant": row["variant"], "file": row["file"], "rule": rule, "why": why,
         "caveats": _caveats(frame, best, budget, gates)}
  if instead_of is not None:
    out["instead_of"] = instead_of
  return out


def _caveats(frame, best, budget, gates=None):
  out = []
  if best is not None:
    row = frame.loc[best]
    name = row["variant"]
    low = row["top1_low"]
    if low == low and -low > budget:
      out.append(f"The interval of {name}'s top-1 change reaches {_points(low)}, past the "
                 "budget: the data do not rule out a larger loss.")
    loss = row.get("worst_class_change", NAN)
    if loss == loss and -loss > WATCH:
      out.append(f"{name} loses {_points(loss)} of recall on class {row['worst_class']} "
                 f"(n = {int(row['worst_class_n'])}); set --max_significant_classes to gate "
                 "on class-level changes.")
    rise = row.get("worst_subgroup_fnr_change", NAN)
    if rise == rise and rise > WATCH and (gates is None or
                                           gates.max_subgroup_fnr_increase is None):
      out.append(f"{name} raises the false-negative rate of subgroup {row['worst_subgroup']} "
                 f"by {_points(rise)} (n = {int(row['worst_subgroup_n'])} positives); set "
                 "--max_subgroup_fnr_increase to gate on it.")
  k = int(frame["members"].min())
  k1 = k == 1 and "pairing" in frame and (frame["pairing"] == K1_PAIRING).any()  # design says it
  if k < SMALL_K and not k1:
    out.append(f"Small populations (K = {k} members; the papers use 30): intervals are wide, "
               "and a class flagged significant at p ≤ 0.05 without correction may be chance "
               "(see the BH-adjusted p).")
  return out


def misscaled_caveat(measures):
  """The first-screen caveat when a compressed file of a K = 1 audit beats its reference by clearly
  more than chance allows (`k1_topline`: exact McNemar p < `MISSCALED_P`, more than
  `MISSCALED_RATIO` times as many fixed as broken examples), or None. Compression does not add
  accuracy; a reference fed values it was not trained on (a forgotten --preprocess), next to a
  quantized file that rescales its own input, does (`tf_forget.evaluate.input_scaling`)."""
  t = measures.tables.get("k1_topline")
  if t is None or not len(t):
    return None
  hits = t[(t["mcnemar_p"] < MISSCALED_P) & (t["fixed"] > MISSCALED_RATIO * t["broken"])]
  if not len(hits):
    return None
  row = hits.sort_values("difference", ascending=False, kind="stable").iloc[0]
  return (f"{row['variant']} beats its reference by {_points(row['difference'])} ({row['fixed']} "
          f"examples fixed, {row['broken']} broken; exact McNemar p = {row['mcnemar_p']:.1g}), "
          "more than chance allows: compression does not add accuracy, so the inputs are "
          "probably mis-scaled — check --preprocess (what the reference was trained on).")


def compute(run, measures, gates_json=None, confidence=intervals.CONFIDENCE):
  """(verdict DataFrame, recommendation dict) of a run; see `table` and `recommend`. With
  K = 1 the recommendation also has `design` (`design`); with the user's files `users` (one
  sentence per file, `user_verdict`), and their rows come first in the table."""
  gates = gates_lib.Gates.from_json(gates_json)
  frame = table(run, measures, gates, confidence)
  users = user_verdict.facts(run, list(frame["variant"]))
  rec = recommend(frame, gates, users=users, no_gain=repair_report.no_gain(measures.tables))
  sentence = design(run, measures)
  if sentence:
    rec["design"] = sentence
  misscaled = misscaled_caveat(measures)
  if misscaled:  # first: it puts every other number in doubt
    rec["caveats"].insert(0, misscaled)
  if users is not None:  # one sentence per file of the user's, their rows first
    rec["users"] = user_verdict.sentences(frame, rec, users)
    frame = user_verdict.users_first(frame)
  return frame, rec
