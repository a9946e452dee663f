"""The report's verdict block: which file to ship, what it costs, how sure we are.

One row per variant, against the dense population:

* the file a user ships (`deploy/<variant>/0.tflite`, the encoding the audit chose), its bytes
  and gzip bytes (the download), its size over the dense float32 file's, its batch-1 latency
  and its latency ratios to the float reference at batch 1 and `--latency_batch` (timed in
  the same rounds), what ran (ops delegated to XNNPACK / all ops) and whether the deployment
  target runs it (`deployment` table);
* top-1 change (points) with its t-based confidence interval over members
  (`tf_forget.stats.intervals`: Welch for independently trained populations, paired for a
  network compared with itself before compression — the pairing of `tf_forget.report.pairing`);
  with one dense member (K = 1) instead the paired per-example interval of the
  `k1_topline` table (Newcombe's, over the test examples; `single_network`), and the
  recommendation states that design (`verdict_sentences.design`);
* the worst class: the largest mean recall loss (000 Figure 2's absolute recall difference,
  docs/spec.md §3.3), its number of test examples, interval, Welch p-value (docs/spec.md §3.1) and
  the Benjamini-Hochberg adjusted one over the variant's classes; with K = 1 instead the largest
  recall drop of `k1_classes` (Newcombe interval, exact McNemar p, BH p) and the number of
  classes it marks significant (`significant_classes`);
* the worst subgroup: the largest FNR increase over the protected subgroups (004 Table 3,
  docs/spec.md §4.2; first `subgroup_members` members, docs/spec.md §1.5), its number of actual
  positives and interval; with K = 1 that of `k1_subgroups` (paired bootstrap interval over the test
  examples);
* #PIE (000 §2.3) and the gate verdict with its reasons (`tf_forget/policy/gates.py`; with K = 1
  the gates read the same paired numbers, `gate_inputs.gate_measures`, and a failed gate's reason
  names the test);
  the flip-rate and KL gates read the `divergence` table through the same function.

The cells that differ between the designs (the top-1 interval and its pairing, the worst class,
the worst subgroup, what changed significantly) come from the report's design, one interface
with two implementations (`verdict_cells.design`: K >= 2 or K = 1).

The recommendation (`recommend`) applies `ship_rule`: eligibility (gates, the accuracy
budget, the target, `--max_latency_ratio`), the size × flips × latency front, the choice on it,
then the user's own files (`user_verdict`): one of theirs that is as good as that choice ships
instead, and each gets one sentence. If no file is eligible: the dense float32 file. A repaired
file that bought nothing (`repair_report.no_gain`) is "no gain", never recommended. Caveats say
when the interval of the recommended file's change reaches past the budget, when a class or
subgroup lost much with no gate on it, when populations are small (K <
`verdict_sentences.SMALL_K`; the papers use K = 30, docs/spec.md §1.5), and that latency is this
machine's (`verdict_sentences`).
"""

import pandas as pd

from tf_forget.artifacts import names
from tf_forget.policy import file_pairs
from tf_forget.policy import gate_inputs
from tf_forget.policy import gates as gates_lib
from tf_forget.policy import ship_rule
from tf_forget.report import repair_report
from tf_forget.report import user_verdict
from tf_forget.report import verdict_cells as cells
from tf_forget.report.words import verdict_sentences
from tf_forget.stats import intervals

NAN = float("nan")


def _shipped(deploy, variant, settings):
  """The shipped file's deployment cells of the verdict table (NaN / "" where not measured):
  encoding, bytes and gzip bytes, batch-1 latency, the latency ratios to the float reference
  (batch 1 and the user's batch, median and interquartile range over the timing rounds), what
  ran (`deployment.runtime_words`) and whether the target runs it."""
  out = {
    "encoding": "",
    "size_bytes": NAN,
    "gzip_bytes": NAN,
    "latency_ms": NAN,
    "latency_batch": settings.latency_batch,
    "runtime": "",
  }
  if deploy is None or variant not in set(deploy.variant):
    return out
  row = deploy[deploy.variant == variant].iloc[0]
  enc = row["encoding"]
  out.update(
    encoding=enc,
    size_bytes=_number(row.get(f"{enc}_bytes")),
    gzip_bytes=_number(row.get(f"{enc}_gzip_bytes")),
    latency_ms=_number(row.get(f"{enc}_ms_b1")),
    runtime=row.get("runtime") or "",
  )
  for key, batch in (("latency_vs_dense", 1), ("latency_batch_vs_dense", settings.latency_batch)):
    for part in ("", "_low", "_high"):
      out[key + part] = _number(row.get(f"vs_reference_b{batch}{part}"))
  runs = row.get(f"runs_on_{settings.target}")
  if runs is not None and runs == runs:
    out["runs_on_target"] = bool(runs)
    out["target_reason"] = row.get(f"why_not_{settings.target}") or ""
  return out


def _number(x):
  return float(x) if x is not None and x == x else NAN


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


def table(run, measures, gates, confidence=intervals.CONFIDENCE, settings=None):
  """The verdict table, one row per variant (dense first), as the module docstring says.

  Args:
    run: `collect.Run`.
    measures: `unit.Measures` (with the `deployment` table when the run has one).
    gates: `gates.Gates`.
    confidence: level of the top-1 interval (the class and subgroup intervals come from their
      tables, at `intervals.CONFIDENCE`).
    settings: `ship_rule.Settings` (the target and the batch whose cells are read).

  Returns:
    DataFrame; changes are fractions (points / 100), NaN where undefined.
  """
  settings = settings or ship_rule.Settings()
  deploy = measures.tables.get("deployment")
  dense = _shipped(deploy, names.DENSE, settings)
  design = cells.design(measures)
  rows = []
  for variant, s in measures.variants.items():
    shipped = _shipped(deploy, variant, settings)
    row = dict(
      {"variant": variant, "members": s["members"], "file": f"deploy/{variant}/0.tflite"},
      **shipped,
      size_vs_dense=shipped["size_bytes"] / dense["size_bytes"],
      top1=s["top1"],
    )
    if variant == names.DENSE:
      rows.append(
        dict(
          row,
          top1_change=0.0,
          verdict="baseline",
          latency_vs_dense=1.0,
          reason="the uncompressed reference",
        )
      )
      continue
    top, pairing = design.top1(run, measures, variant, confidence)
    row.update(
      top1_change=top["difference"], top1_low=top["low"], top1_high=top["high"], pairing=pairing
    )
    g = gate_inputs.gate_measures(variant, s, measures.config, measures.tables)
    row.update(design.counts(g))
    wc = design.worst_class(run, measures, variant)
    row["forgot"] = design.forgot(measures, variant)
    if wc is not None:
      row.update(
        worst_class=wc["name"],
        worst_class_n=wc["n"],
        worst_class_change=wc["difference"],
        worst_class_low=wc["low"],
        worst_class_high=wc["high"],
        worst_class_p=wc["p_value"],
        worst_class_p_bh=wc["p_bh"],
      )
    ws = design.worst_subgroup(measures, variant, g)
    if ws is not None:
      row.update(
        worst_subgroup=ws["name"],
        worst_subgroup_n=ws["n"],
        worst_subgroup_fnr_change=ws["difference"],
        worst_subgroup_low=ws["low"],
        worst_subgroup_high=ws["high"],
      )
    passed, reasons = gates_lib.verdict(variant, g, gates)
    row.update(
      pie_count=s.get("pie_count", NAN),
      gate="pass" if passed else "fail",
      reasons="; ".join(reasons),
    )
    rows.append(row)
  return pd.DataFrame(rows)


def recommend(
  frame,
  gates,
  settings=None,
  pairs=None,
  no_gain=None,
  default_budget=ship_rule.DEFAULT_ACCURACY_BUDGET,
):
  """Names the file to ship and the rule that chose it (`ship_rule`); fills the table's
  `verdict` and `reason` columns.

  Args:
    frame: from `table` (modified in place: `verdict` and `reason` of compressed rows).
    gates: `gates.Gates`.
    settings: `ship_rule.Settings` (None: the defaults).
    pairs: `file_pairs.Pairs` of the table's variants (None: no paired comparison; nothing is
      "as good" and flips do not weigh).
    no_gain: {repaired variant: why} of the repairs that bought nothing
      (`repair_report.no_gain`): verdict "no gain", never recommended.
    default_budget: the accuracy budget when the `max_accuracy_drop` gate is not set.

  Returns:
    dict `variant`, `file`, `rule` (sentences), `why` (one sentence), `caveats` (list),
    `front` (the undominated variants), `front_note` (the front and the dominated files in one
    sentence), `gives_up` (sentences); with a user's file
    recommended instead of the rule's choice also `instead_of` (that variant); `size_note`
    when the other size measure would choose another file.
  """
  settings = settings or ship_rule.Settings()
  budget = gates.max_accuracy_drop if gates.max_accuracy_drop is not None else default_budget
  rule = ship_rule.rule_text(
    gates, settings, budget, users=bool(frame["variant"].map(user_verdict.is_user).any())
  )
  eligible = ship_rule.eligibility(frame, gates, settings, no_gain, budget)
  size_col = ship_rule.size_column(settings.size)
  if not ship_rule.has_sizes(frame, size_col):
    rule += verdict_sentences.NO_SIZES
  on_front, dominated = ship_rule.front(frame, eligible, pairs, size_col)
  for i, (j, how) in dominated.items():
    frame.at[i, "verdict"] = "dominated"
    frame.at[i, "reason"] = f"{frame.loc[j, 'variant']} is as good and {how}"
  best = ship_rule.choose(frame, on_front, pairs, size_col)
  if best is None:
    dense = frame[frame.variant == names.DENSE].iloc[0]
    return {
      "variant": names.DENSE,
      "file": dense["file"],
      "rule": rule,
      "why": verdict_sentences.NONE_ELIGIBLE,
      "caveats": verdict_sentences.caveats(frame, None, budget, gates, settings),
      "front": [],
      "gives_up": [],
    }
  out = {
    "front": [frame.loc[i, "variant"] for i in on_front],
    "front_note": ship_rule.front_note(frame, on_front, dominated, settings.size),
    "gives_up": ship_rule.gives_up(frame, best, on_front, pairs, size_col),
  }
  other = "gzip" if settings.size == "bytes" else "bytes"
  other_col = ship_rule.size_column(other)
  other_best = (
    ship_rule.choose(frame, ship_rule.front(frame, eligible, pairs, other_col)[0], pairs, other_col)
    if ship_rule.has_sizes(frame, other_col)
    else None
  )
  if other_best is not None and (
    frame.loc[other_best, other_col] < frame.loc[best, other_col] * (1 - ship_rule.SIZE_TIE)
  ):
    out["size_note"] = verdict_sentences.size_note(frame, best, other_best, other)
  mine = user_verdict.preferred(frame, best, eligible, pairs, size_col)
  if mine is not None:  # the user's own bytes, as good as the rule's choice
    out["instead_of"] = frame.loc[best, "variant"]
    frame.at[best, "reason"] = (
      f"within every bound; your {frame.loc[mine, 'variant']} is as good and ships instead"
    )
    best = mine
  frame.at[best, "verdict"] = "recommended"
  frame.at[best, "reason"] = "the rule's choice"
  row = frame.loc[best]
  out.update(
    variant=row["variant"],
    file=row["file"],
    rule=rule,
    why=verdict_sentences.why(row, pairs),
    caveats=verdict_sentences.caveats(frame, best, budget, gates, settings),
  )
  return out


def compute(
  run,
  measures,
  gates_json=None,
  confidence=intervals.CONFIDENCE,
  deployment=None,
  scaling_checked=False,
):
  """(verdict DataFrame, recommendation dict) of a run; see `table` and `recommend`. With
  K = 1 the recommendation also has `design` (the design's `statement`); with the user's files
  `users` (one sentence per file, `user_verdict`), and their rows come first in the table.

  Args:
    run: `collect.Run`.
    measures: `unit.Measures`.
    gates_json: the configuration's `gates` dict.
    confidence: level of the top-1 interval.
    deployment: the configuration's `deployment` dict (`ship_rule.Settings.from_json`).
    scaling_checked: whether the audit's input scaling check ran
      (`verdict_sentences.misscaled_caveat`).
  """
  gates = gates_lib.Gates.from_json(gates_json)
  settings = ship_rule.Settings.from_json(deployment)
  frame = table(run, measures, gates, confidence, settings)
  pairs = file_pairs.compute(run, list(frame["variant"]))
  rec = recommend(frame, gates, settings, pairs, no_gain=repair_report.no_gain(measures.tables))
  sentence = cells.design(measures).statement(run, measures)
  if sentence:
    rec["design"] = sentence
  misscaled = verdict_sentences.misscaled_caveat(measures, scaling_checked)
  if misscaled:  # first: it puts every other number in doubt
    rec["caveats"].insert(0, misscaled)
  # The audit's own checks that did not refuse but are unsure (the input scaling), first too.
  rec["caveats"][:0] = list(run.caveats)
  if frame["variant"].map(user_verdict.is_user).any():  # one sentence per file of the user's
    rec["users"] = user_verdict.sentences(
      frame, rec, pairs, gates.any(), ship_rule.size_column(settings.size)
    )
    frame = user_verdict.users_first(frame)
  return frame, rec
