"""The verdict (`tf_forget.report.verdict`): one row per variant (`verdict`) and the
recommendation, the file to ship (given as `recommendation`), with the repairs' sentences and
why a file forgot from the repair unit's tables and notes; shown first on the page.

The page's first screen: `section` renders `verdict.table` / `verdict.recommend`
(tf_forget/report/verdict.py): the recommended file in one sentence, the rule that chose it,
caveats, then one row per variant — file, size and latency against dense, top-1 change with its
interval, worst class and worst subgroup with n and interval, #PIE, gate verdict and why. `glossary`
introduces every measure in one or two plain sentences with its paper reference.
"""

import pandas as pd

from tf_forget.report import html
from tf_forget.report import repair_report
from tf_forget.report import unit
from tf_forget.report import verdict
from tf_forget.report import verdict as verdict_lib
from tf_forget.report.words import folding
from tf_forget.report.words import paragraphs
from tf_forget.report.words import verdict_sentences


def _pt(x, digits=2):
  return "n/a" if x is None or x != x else f"{100 * x:+.{digits}f} pt"


def _change(value, low, high):
  """'−0.40 pt [−0.90, +0.10]': a change with its interval (points)."""
  if value is None or value != value:
    return "n/a"
  ci = "" if low != low or high != high else f" [{_pt(low)[:-3]}, {_pt(high)[:-3]}]"
  return _pt(value) + ci


def _size(row):
  if row.get("size_bytes") != row.get("size_bytes"):
    return "not measured"
  gz = row.get("gzip_bytes")
  return f"{row['size_bytes'] / 1024:.1f} KiB ({row['size_vs_dense']:.2f}×)" + (
    "" if gz is None or gz != gz else f", gzip {gz / 1024:.1f} KiB"
  )


def _ratio(row, key):
  """'1.9× [1.8–2.1]': a latency ratio to the float reference with its interquartile range."""
  x, low, high = row.get(key), row.get(f"{key}_low"), row.get(f"{key}_high")
  if x is None or x != x:
    return ""
  return f"{x:.2f}×" + ("" if low is None or low != low else f" [{low:.2f}–{high:.2f}]")


def _latency(row):
  if row.get("latency_ms") != row.get("latency_ms"):
    return "not measured"
  out = f"{row['latency_ms']:.3f} ms"
  if row["variant"] == "dense":
    return out
  b1, bb = _ratio(row, "latency_vs_dense"), _ratio(row, "latency_batch_vs_dense")
  batch = row.get("latency_batch")
  out += f" ({b1}" if b1 else ""
  if bb and batch == batch and batch is not None and int(batch) != 1:
    out += f"; b={int(batch)} {bb}"
  return out + (")" if b1 else "")


VERDICT_CLASSES = {
  "recommended": "verdict-rec",
  "fail": "verdict-fail",
  "over budget": "verdict-over",
  "no gain": "verdict-over",
  "not for target": "verdict-over",
  "too slow": "verdict-over",
  "dominated": "verdict-over",
  "pass": "verdict-pass",
}


def _p(value):
  v = html.fmt(value, "p")
  return v if v == "n/a" else f"{float(value):.2g}"


def _significant(count):
  """'1 class significant (McNemar + BH)': the K = 1 count of `k1_classes`."""
  if count is None or count != count:
    return "significant classes n/a"
  n = int(count)
  return f"{n} class{'' if n == 1 else 'es'} significant (McNemar + BH)"


def _file(r, deploy):
  """'deploy/v/0.tflite (plain) — ships plain: <why>' (the why for pruned variants)."""
  out = r["file"] + (f" ({r['encoding']})" if r.get("encoding") else "")
  why = verdict.ships_plain_why(deploy, r["variant"])
  return f"{out} — {why}" if why else out


def verdict_rows(frame, deploy=None):
  """The verdict table as display strings (one row per variant; empty columns dropped).

  Args:
    frame: `verdict.table`.
    deploy: the `deployment` table, for why a pruned variant ships plain (None: not said).
  """
  rows = []
  for _, r in frame.iterrows():
    r = r.to_dict()
    dense = r["variant"] == "dense"
    k1 = not dense and r.get("pairing") == verdict_sentences.K1_PAIRING  # K = 1: the paired tests
    wc = (
      ""
      if dense or not isinstance(r.get("worst_class"), str)
      else "no class lost recall"
      if r["worst_class_change"] >= 0
      else f"{r['worst_class']} (n={int(r['worst_class_n'])}) "
      f"{_change(r['worst_class_change'], r['worst_class_low'], r['worst_class_high'])} "
      f"{'McNemar ' if k1 else ''}p {_p(r['worst_class_p'])}, "
      f"BH {_p(r['worst_class_p_bh'])}"
    )
    if k1:
      wc = (wc + "; " if wc else "") + _significant(r.get("significant_classes"))
    ws = (
      ""
      if dense or not isinstance(r.get("worst_subgroup"), str)
      else f"{r['worst_subgroup']} (n={int(r['worst_subgroup_n'])} pos.) "
      + _change(r["worst_subgroup_fnr_change"], r["worst_subgroup_low"], r["worst_subgroup_high"])
    )
    reason = r.get("reason") or ""
    rows.append(
      {
        "variant": r["variant"]
        + f" (K={int(r['members'])}"
        + ("" if dense else f", {r['pairing']}")
        + ")",
        "verdict": r.get("verdict") or "",
        "file to ship": _file(r, deploy),
        "size (× dense)": _size(r),
        "latency b=1 (× float reference)": _latency(r),
        "ran": r.get("runtime") or "",
        "top-1": html.fmt(r["top1"], "pct"),
        "top-1 change [95% CI]": ""
        if dense
        else _change(r["top1_change"], r["top1_low"], r["top1_high"]),
        "worst class: recall change": wc,
        "worst subgroup: FNR change": ws,
        "#PIE": "" if dense else html.fmt(r.get("pie_count"), "int"),
        "why": ""
        if reason in ("within every bound", "the uncompressed reference", "the rule's choice")
        else reason,
      }
    )
  out = pd.DataFrame(rows)
  keep = [c for c in out.columns if c in ("variant", "verdict") or (out[c] != "").any()]
  return out[keep]


def section(frame, deployment, recommendation):
  """The verdict section's HTML: the recommendation, its rule and caveats, the table.

  Args:
    frame: the `verdict` table (None: not computed).
    deployment: the `deployment` table, or None.
    recommendation: `verdict.recommend`'s dict, or None.
  """
  if frame is None or recommendation is None:
    return unit.Skip.of(["no verdict computed"])
  rec = recommendation
  none = rec["variant"] == "dense"
  head = (
    f"Ship <b>{html.esc(rec['file'])}</b>" + ("" if none else f" — {html.esc(rec['why'])}")
    if not none
    else f"Ship <b>{html.esc(rec['file'])}</b>: {html.esc(rec['why'])}"
  )
  out = [f"<p class=\"recommendation{' none' if none else ''}\">{head}</p>"]
  # Your own files: does each pass, and why it is (not) the one to ship.
  out += [f"<p class=\"user-file\">{html.esc(u)}</p>" for u in rec.get("users", [])]
  if rec.get("design"):  # K = 1: the design before anything else
    out.append(f"<p class=\"lead design\"><b>{html.esc(rec['design'])}</b></p>")
  if rec.get("front_note"):
    out.append(f"<p class=\"lead front\">{html.esc(rec['front_note'])}</p>")
  out += [f"<p class=\"lead gives-up\">{html.esc(g)}</p>" for g in rec.get("gives_up", [])]
  if rec.get("size_note"):
    out.append(f"<p class=\"lead\">{html.esc(rec['size_note'])}</p>")
  out.append(f"<p class=\"lead\">{html.esc(rec['rule'])}</p>")
  out += [f"<p class=\"caveat\">⚠ {html.esc(c)}</p>" for c in folding.fold(rec["caveats"])]
  out += [f"<p class=\"lead why\">{html.esc(r)}</p>" for r in rec.get("why_forgot", [])]
  out += [f"<p class=\"lead repair\">{html.esc(r)}</p>" for r in rec.get("repairs", [])]
  shown = verdict_rows(frame, deployment)
  out.append(
    html.table(
      shown,
      classes="verdict sortable",
      row_classes=[VERDICT_CLASSES.get(v, "") for v in shown.verdict],
    )
  )
  tail = paragraphs.VERDICT_K1_TAIL if rec.get("design") else paragraphs.VERDICT_POPULATION_TAIL
  out.append(
    "<p class=\"lead\">"
    + (paragraphs.VERDICT_K1_LEAD if rec.get("design") else paragraphs.VERDICT_POPULATION_LEAD)
    + tail
    + paragraphs.VERDICT_FILES
    + "</p>"
  )
  return "".join(out)


def glossary():
  """The glossary section's HTML (collapsed)."""
  items = "".join(f"<dt>{html.esc(t)}</dt><dd>{html.esc(d)}</dd>" for t, d in paragraphs.GLOSSARY)
  return f"<details><summary>{paragraphs.GLOSSARY_SUMMARY}</summary><dl class=\"glossary\">{items}</dl></details>"


# The tables the verdict, its gates (`gate_inputs.gate_measures`) and its words read.
TABLES = (
  "class_level",
  "subgroups",
  "subgroup_counts",
  "k1_topline",
  "k1_classes",
  "k1_subgroups",
  "divergence",
  "deployment",
  "repair",
)


def _compute(
  run,
  config,
  settings,
  notes,
  variants,
  class_level,
  subgroups,
  subgroup_counts,
  k1_topline,
  k1_classes,
  k1_subgroups,
  divergence,
  deployment,
  repair,
):
  tables = unit.Reads(
    TABLES,
    {
      "class_level": class_level,
      "subgroups": subgroups,
      "subgroup_counts": subgroup_counts,
      "k1_topline": k1_topline,
      "k1_classes": k1_classes,
      "k1_subgroups": k1_subgroups,
      "divergence": divergence,
      "deployment": deployment,
      "repair": repair,
    },
  )
  measures = unit.Measures(
    tables=tables, notes=dict(notes), config=dict(settings), values={"variants": variants}
  )
  user = config.get("user") or {}
  table, rec = verdict_lib.compute(
    run,
    measures,
    config.get("gates"),
    deployment=config.get("deployment"),
    scaling_checked=bool(user.get("input_scaling_check", False)),
  )
  skipped = notes.get(repair_report.NOT_REPAIRED_KEY, [])
  if rec is not None and (repair is not None or skipped):
    rec["repairs"] = repair_report.sentences(tables, skipped)
  if rec is not None and notes.get(repair_report.WHY_KEY):
    rec["why_forgot"] = list(notes[repair_report.WHY_KEY])
  return unit.Part({"verdict": table}, gives={"recommendation": rec})


def _render(verdict, deployment, recommendation):
  return section(verdict, deployment, recommendation)


UNIT = unit.Unit(
  "verdict",
  reads=("run", "config", "settings", "notes", "variants") + TABLES,
  makes=("verdict",),
  gives=("recommendation",),
  compute=_compute,
  sections=(
    unit.Section(
      "verdict",
      "Verdict: which file to ship, and what it costs",
      "Verdict",
      ("verdict", "deployment", "recommendation"),
      _render,
    ),
  ),
)
