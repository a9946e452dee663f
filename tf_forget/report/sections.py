"""The core sections' HTML: each measure's figure (`plots`) beside its numbers (`html.table`).

One function per section of the units of `tf_forget.report.units`, from the tables and values
the section reads; a section whose measure does not apply returns `unit.Skip` with why (the
notes). Other units' sections live in their own view modules (`verdict_view`,
`recall_study_view` (002), `published_report`, `human_study_view` (000 Table 7),
`prune_retrain_plots` (003), `gallery_view`); `units.registry.PAGE` puts them all in order.
"""

import numpy as np
import pandas as pd

from tf_forget.artifacts import names
from tf_forget.report import gallery_view
from tf_forget.report import html
from tf_forget.report import plots
from tf_forget.report import unit
from tf_forget.report import wording

MAX_CLASS_ROWS = 60


def _drop_empty(frame, column="topk"):
  """The frame without `column` when it is entirely NaN (top-5 of a task with <= 5 classes)."""
  if column in frame and frame[column].isna().all():
    return frame.drop(columns=[column])
  return frame


def class_level(t, variants, notes):
  """The class-level section: per variant, the figure beside its classes (families folded).

  Args:
    t: the `class_level` table.
    variants: the variants' summaries (`units.overview.summaries`).
    notes: the `class_level` notes (None: none).
  """
  if t.empty:
    return unit.Skip.of(notes or ["no compressed variant"])
  parts = ["<p class=\"lead\">Bars: absolute recall difference (compressed − dense, mean over "
           "members); plum bars: the class's mean-shifted recall differs significantly (two-"
           "tailed Welch test, docs/spec.md §3.1); green points: normalized recall difference "
           "(minus the change of overall accuracy); relative: 000 eq. 3 ratio (1 = unchanged).</p>"]
  k = min(s["members"] for s in variants.values())
  if k < 10:
    parts.append(f"<p class=\"caveat\">⚠ K = {k} members per population (the papers use 30) "
                 "and no multiple-testing correction (000's protocol): at p ≤ 0.05 about 1 "
                 "class in 20 is flagged by chance. The p (BH) column is the "
                 "Benjamini-Hochberg adjusted p-value over the variant's classes.</p>")
  blocks = {variant: rows for variant, rows in t.groupby("variant", sort=False)}
  for lead, folded in fold_families(blocks):
    parts.append(_class_block(variants, lead, blocks[lead]))
    if folded:
      names_ = ", ".join(folded)
      parts.append(f"<details><summary>{html.esc(names_)}: the same as {html.esc(lead)} "
                   f"(same significant classes, every class within "
                   f"{100 * FOLD_TOLERANCE:g} pt) — click to show</summary>"
                   + "".join(_class_block(variants, v, blocks[v]) for v in folded)
                   + "</details>")
  return "".join(parts)


FOLD_TOLERANCE = 0.005  # recall difference (fraction) within which a child repeats its lead


def fold_families(blocks):
  """Groups class-level blocks by variant family (the trained variant a file comes from).

  In each family the lead is the trained variant itself (or its first child when the family
  is dense's); a child whose significant classes equal the lead's and whose absolute recall
  difference is within `FOLD_TOLERANCE` of the lead's in every class is folded under it.

  Args:
    blocks: variant -> its `class_level` rows (report order).

  Returns:
    list of (lead, [folded variants]) in report order; unfolded children are leads themselves.
  """
  families = {}
  for variant in blocks:
    families.setdefault(names.family(variant), []).append(variant)
  out = []
  for family, members in families.items():
    members = sorted(members, key=lambda v: v != family)  # the trained variant first
    lead, rest = members[0], members[1:]
    folded, shown = [], []
    for v in rest:
      a, b = blocks[lead], blocks[v]
      diff = np.abs(a.absolute_recall_difference.to_numpy(float)
                    - b.absolute_recall_difference.to_numpy(float))
      same = (list(a.significant) == list(b.significant) and
              bool(np.all(np.nan_to_num(diff) <= FOLD_TOLERANCE)))
      (folded if same else shown).append(v)
    out.append((lead, folded))
    out += [(v, []) for v in shown]
  return out


def _class_block(variants, variant, rows):
  cols = ["class_name", "absolute_recall_difference", "absolute_95ci",
          "normalized_recall_difference", "relative_recall_difference", "p_value", "p_bh",
          "significant"]
  short = {"class_name": "class", "absolute_recall_difference": "absolute",
           "normalized_recall_difference": "normalized",
           "relative_recall_difference": "relative", "p_value": "p", "p_bh": "p (BH)",
           "absolute_95ci": "95% CI (pt)"}
  s = variants[variant]
  count = ("n/a (Welch's test needs 2 members a side; K = 1: section 1b)"
           if s["significant_classes"] is None else s["significant_classes"])
  head = (f"<h3>{html.esc(variant)}: {count} significant classes "
          f"({'n/a' if s.get('significant_classes_bh') is None else s['significant_classes_bh']}"
          " after Benjamini-Hochberg; "
          f"{s['gained']} gained, {s['lost']} lost; mean gain "
          f"{html.esc(html.fmt(s['mean_gain'], html.PTS_ABS))}, mean loss "
          f"{html.esc(html.fmt(s['mean_loss'], html.PTS_ABS))})</h3>")
  ci = [("n/a" if lo != lo else f"[{100 * lo:+.2f}, {100 * hi:+.2f}]")
        for lo, hi in zip(rows.get("absolute_low", rows.p_value * float("nan")),
                          rows.get("absolute_high", rows.p_value * float("nan")))]
  shown = rows.assign(_abs=rows.absolute_recall_difference.abs(), absolute_95ci=ci).sort_values(
      ["significant", "_abs"], ascending=[False, False], kind="stable")[cols]
  shown = shown.rename(columns=short)
  return head + html.pair(
      plots.class_level(rows, variant), f"per-class recall difference, {variant}",
      html.table(shown, {"absolute": html.PTS_ABS, "normalized": html.PTS_ABS, "p": "p",
                         "p (BH)": "p"},
                 highlight=shown.significant.tolist(), max_rows=MAX_CLASS_ROWS))


def pie(t, pie_accuracy, cie_accuracy, variants):
  """The PIE section: #PIE, accuracy on PIE / non-PIE / all, accuracy on the Taxicab CIEs."""
  if t.empty:
    return unit.Skip.of(["no compressed variant"])
  parts = ["<p class=\"lead\">A PIE is an example whose modal label over the compressed "
           "population differs from the dense population's (ties go to the largest label; "
           "ties_* count them). Accuracy: mean over members on each subset, both populations "
           "(docs/spec.md §3.5).</p>",
           html.pair(plots.counts(t, variants), "significant classes and PIE counts",
                     html.table(t, {"pie_count": "int", "pie_fraction": html.PCT,
                                    "examples": "int", "ties_dense": "int",
                                    "ties_compressed": "int"})),
           "<h3>Accuracy on PIE / non-PIE / all</h3>"]
  acc = _drop_empty(pie_accuracy)
  parts.append(html.pair(plots.pie_accuracy(acc), "accuracy on PIE, non-PIE and all",
                         html.table(acc, {"top1": html.PCT, "topk": html.PCT, "n": "int"})))
  cie = _drop_empty(cie_accuracy)
  if not cie.empty:
    parts.append("<h3>Accuracy on Taxicab CIEs (004 Table 2)</h3><p class=\"lead\">The "
                 "examples with the largest Taxicab distance between the two populations' "
                 "label counts at each percentile (p90: top 10%); ties broken by a seeded "
                 "permutation (docs/spec.md §4.1).</p>")
    parts.append(html.table(cie, {"percentile": "int", "top1": html.PCT, "topk": html.PCT,
                                  "n": "int"}))
  return "".join(parts)


def subgroups(t, counts, variants, subgroup_members, notes):
  """The subgroups section (004 Tables 3-5).

  Args:
    t: the `subgroups` table (None: not measured).
    counts: the `subgroup_counts` table.
    variants: the variants' summaries.
    subgroup_members: the members averaged (the setting).
    notes: the `subgroups` notes.
  """
  if t is None:
    return unit.Skip.of(notes)
  groups = [c for c in t.columns if c not in ("variant", "model", "metric")]
  rates = t[t.model.isin(["baseline", "compressed"])]
  nd = t[t.model == "normalized_difference"]
  absolute = _with_intervals(t, groups)
  members = min(subgroup_members, min(s["members"] for s in variants.values()))
  return ("<p class=\"lead\">Rates averaged over the first "
          f"{html.esc(members)} members of each population (docs/spec.md §1.5); positive = class "
          "1; FPR / FNR are n/a in a subgroup without actual negatives / positives. Headline: the "
          "absolute difference, compressed − dense, in points with its 95% interval over the "
          "members [low, high]; below it the normalized difference 100·(compressed − dense)/dense "
          "in % (004 Table 3), which explodes on a near-zero baseline, and the rates themselves. "
          "n: the examples, positives (FNR's denominator) and negatives (FPR's) of each "
          "subgroup.</p>"
          + html.pair(plots.subgroups(t), "subgroup absolute differences (points)",
                      html.table(absolute), stacked=True)
          + ("" if counts is None else "<h3>n per subgroup</h3>" + html.table(
              counts, {"examples": "int", "positives": "int", "negatives": "int"}))
          + "<h3>Normalized difference (relative, %; 004 Table 3)</h3>"
          + html.table(nd, {g: html.PTS for g in groups})
          + "<h3>Rates</h3>" + html.table(rates, {g: html.PCT for g in groups}))


def _interval_text(value, low, high):
  """'+17.90 [+12.01, +23.79]' (points) or 'n/a'."""
  if value != value:
    return "n/a"
  ci = "" if low != low or high != high else f" [{100 * low:+.2f}, {100 * high:+.2f}]"
  return f"{100 * value:+.2f}{ci}"


def _with_intervals(table, groups):
  """The absolute-difference rows with their 95% intervals as text (points)."""
  rows = []
  key = ["variant", "metric"]
  diff = table[table.model == "absolute_difference"].set_index(key)
  low = table[table.model == "absolute_low"].set_index(key)
  high = table[table.model == "absolute_high"].set_index(key)
  for (variant, metric), row in diff.iterrows():
    rows.append({"variant": variant, "metric": metric, **{
        g: _interval_text(row[g], low.loc[(variant, metric), g],
                          high.loc[(variant, metric), g]) for g in groups}})
  return pd.DataFrame(rows, columns=["variant", "metric"] + groups)


def over_indexing(t, p, notes):
  """The over-indexing section (004 Figure 2): `t` the table (None: not measured), `p` the CIE
  percentile, `notes` why it was not measured."""
  if t is None:
    return unit.Skip.of(notes)
  return (f"<p class=\"lead\">CIEs: Taxicab at percentile {html.esc(html.fmt(p, 'int'))} "
          "(docs/spec.md §4.4). Relative representation = share among CIEs / share in the training "
          "set; above 1 the attribute is over-indexed.</p>"
          + html.pair(plots.over_indexing(t), "attribute over-indexing",
                      html.table(t, {"train_share": html.PCT, "cie_share": html.PCT,
                                     "cie_count": "int"})))


def robustness(t, notes):
  """The robustness section (000 Table 3): `t` the table (None: no corrupted split)."""
  if t is None:
    return unit.Skip.of(notes)
  return ("<p class=\"lead\">Accuracy averaged over members and severities first, then "
          "normalized to dense on the same corruption: 100·(A_t/A_0 − 1) (docs/spec.md §3.6); "
          "top1_change is the same change in points with its 95% interval over members "
          "(low / high).</p>"
          + html.pair(plots.robustness(t), "robustness per corruption",
                      html.table(_drop_empty(_drop_empty(t, "top5_norm"), "top5"),
                                 {"top1": html.PCT, "top5": html.PCT, "top1_norm": html.PTS,
                                  "top5_norm": html.PTS, "severities": "int", "members": "int",
                                  "top1_change": html.PTS_ABS, "top1_change_low": html.PTS_ABS,
                                  "top1_change_high": html.PTS_ABS},
                                 max_rows=60), stacked=True))


def noise(acc, sim, pp, protocol, notes):
  """The l-inf noise section (003 §4.1, §5).

  Args:
    acc, sim, pp: the `noise_accuracy` (None: no noise evaluated), `noise_similarity` and
      `noise_prune_potential` (None without pruned levels) tables.
    protocol: the `noise` settings.
    notes: the `noise` notes.
  """
  if acc is None:
    return unit.Skip.of(notes)
  lead = ("<p class=\"lead\">U(−ε, ε) noise added to the normalized input of every "
          f"exported file ({protocol.get('examples', '?')} examples max × "
          f"{protocol.get('draws', '?')} draws, the same draws for every file; 003 §4.1, "
          "docs/spec.md §6.7). top1_change is in points with its 95% interval over members (low / "
          "high; paired for the same network, else Welch), beside the ratio to dense (top1_norm); "
          "excess error is error at ε minus error at ε = 0 (003 Definition 2), _vs_dense its "
          "excess over dense's. Prune potential: the largest pruned level whose error stays "
          "within 0.5 points of dense's at the same ε (003 Definition 1). Similarity: member k "
          "against dense member k on the same noisy inputs; the dotted black line compares two "
          "separately trained dense members.</p>")
  numbers = html.table(acc, {"members": "int", "top1": html.PCT, "top1_sd": html.PCT,
                             "top1_change": html.PTS_ABS, "top1_change_low": html.PTS_ABS,
                             "top1_change_high": html.PTS_ABS, "top1_norm": html.PTS,
                             "excess_error": html.PCT,
                             "excess_error_vs_dense": html.PCT}, max_rows=60)
  numbers += html.table(sim, {"pairs": "int", "matching": html.PCT, "matching_sd": html.PCT},
                        max_rows=60)
  if pp is not None:
    numbers += html.table(pp, {"members": "int", "prune_potential": html.PCT,
                               "prune_potential_sd": html.PCT})
  return lead + html.pair(plots.noise(acc, sim, pp), "accuracy and similarity under noise",
                          numbers, stacked=True)


def deployment(t, settings, notes):
  """The deployment section: `t` the table (None: no encodings), `settings` its settings."""
  if t is None:
    return unit.Skip.of(notes)
  lead = ("<p class=\"lead\">The file each variant ships (member "
          f"{settings.get('k', 0)}; deploy encoding {html.esc(settings.get('mode'))}): the "
          "sparse-encoded twin only if its predictions equal the plain file's on the "
          f"{html.esc(settings.get('split'))} split, it is smaller, and it is not slower than "
          f"{settings.get('max_sparse_latency_ratio')}× the plain file beyond the measurement's spread "
          "at every measured batch size (sparse / plain ratios over interleaved rounds with "
          "fresh interpreters, refused when their low quartile exceeds the bound; "
          f"{settings.get('num_threads')} threads, as on a device: XNNPACK, else the built-in "
          "kernels; runtime says which ran). Sizes are raw bytes; shipped_vs_dense_float32 "
          "is the shipped file over the dense float32 file.</p>")
  formats = {c: "num" for c in t.columns if "_ms_b" in c}
  formats.update({"sparsity": html.PCT, "top1": html.PCT, "top1_change": html.PCT,
                  "plain_bytes": "int", "sparse_bytes": "int"})
  return lead + html.pair(plots.size_accuracy(t), "size vs accuracy per variant",
                          html.table(t, formats), stacked=True)


def notes(notes, settings):  # pylint: disable=redefined-outer-name
  """The notes section: every note, folded, and the settings."""
  items = [f"{k}: {n}" for k, ns in sorted(notes.items()) for n in wording.fold_notes(ns)]
  items.append("settings: " + ", ".join(f"{k}={v}" for k, v in sorted(settings.items())))
  return "<ul>" + "".join(f"<li>{html.esc(i)}</li>" for i in items) + "</ul>"


def gallery(cards, protected, more=""):
  """The gallery section: the cards, or why there are none, then `more` (HTML)."""
  if not cards and not more:
    return unit.Skip.of(["no compressed variant"])
  return (gallery_view.html(cards, protected) if cards
          else html.skipped(["no compressed variant"])) + more
