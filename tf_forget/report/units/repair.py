"""Why a full int8 file forgot, and its repair (`repair_report`): per-layer error, the causal
ranking and the repaired files; the section is left out without a layer analysis.

The "why" section renders `repair_report`'s tables: what the per-layer analysis measured and how,
the repaired files' cost (size) and effect (flips, broken examples, the worst class) against the
plain int8 file, and each analysed member's best-ranked layers, with where the Model Explorer node
data is. An optional section: None without an analysis (no full int8 file with its float model).
"""

from tf_forget.report import html
from tf_forget.report import repair_report
from tf_forget.report import unit
from tf_forget.report.words import paragraphs

FORMATS = {
  "size_vs_int8": "num",
  "size_vs_float32": "num",
  "top1_int8": html.PCT,
  "top1_repaired": html.PCT,
  "flip_rate_int8": html.PCT,
  "flip_rate_repaired": html.PCT,
  "broken_int8": "num",
  "broken_repaired": "num",
  "worst_class_change_int8": html.PTS_ABS,
  "worst_class_change_repaired": html.PTS_ABS,
  "layers": "int",
  "members": "int",
  "k": "int",
  "rank": "int",
  "excess": "g",
  "nmse_forgotten": "g",
  "nmse_stable": "g",
  "growth_forgotten": "g",
  "snr_db_forgotten": "num",
  "growth_db_forgotten": "num",
  "recovered": "int",
  "caused": "int",
  "nmse_rank": "int",
  "snr_db_stable": "num",
}


def repair(t, skipped=()):
  """The repaired files' cost and effect, or a line saying none was made (`skipped`: the
  files not repaired because they forgot nothing significant)."""
  head = (
    "<h3>Repaired files</h3><p>float&lt;N&gt;: the N top-ranked ops kept in float; "
    "cle: the float model equalized across layers before conversion (no bytes); "
    "int16x8: 16-bit activations; auto: a search (cle, then ops in float in causal "
    "order, until the gates hold or the size budget), chosen on one half of the test "
    "examples and shown here on the other (examples: held-out half). Cost: size over the "
    "plain int8 file and over float32. Effect, each member against its own float32 "
    "file: top-1, flip rate (top-1 changed), broken examples (right in float32, wrong "
    "in the file) and the recall change of the class the int8 file hurt most — before "
    "(int8) and after (repaired); means over members.</p>"
  )
  lines = "".join(f"<p class=\"lead\">{html.esc(line)}</p>" for line in skipped)
  if t is None or t.empty:
    return head + (
      lines
      or html.skipped(
        ["no repaired file: add --repair=auto (or cle, int16x8, float<N>) to make one"]
      )
    )
  shown = (
    t.assign(gain=[repair_report.NO_GAIN if g is False or g == 0 else "gain" for g in t["gain"]])
    if "gain" in t
    else t
  )
  return head + html.table(shown, FORMATS) + lines


def layers(t):
  """Each analysed member's best-ranked layers."""
  shown = t.drop(columns=["op_name"] if "op" in t else [])  # "op" names it distinctly
  shown = shown.assign(
    tensor_name=t["tensor_name"].map(
      lambda n: n if n is None or len(str(n)) <= 60 else str(n)[:57] + "..."
    )
  )
  return (
    "<h3>Ops ranked by what their quantization did to the forgotten examples</h3>"
    + html.table(shown, FORMATS, highlight=list(t["kept"]), max_rows=40)
    + "<p class=\"note\">Highlighted: kept in float by the repaired file.</p>"
  )


def section(t, repaired, why_lines, not_repaired):
  """The "why" section's HTML, or `unit.Skip` without a layer analysis.

  Args:
    t: the `layers` table (None: no analysis).
    repaired: the `repair` table, or None.
    why_lines: the "why" sentences (`repair_report.WHY_KEY` notes).
    not_repaired: the lines of the files left unrepaired (`repair_report.NOT_REPAIRED_KEY`).
  """
  if t is None:
    return unit.Skip("no layer analysis in this run")
  why = "".join(f"<p class=\"lead why\">{html.esc(line)}</p>" for line in why_lines)
  return (
    f"<p class=\"lead\">{paragraphs.REPAIR_LEAD}</p>"
    + why
    + repair(repaired, not_repaired)
    + layers(t)
  )


def _compute(run, config):
  asked = bool((config.get("repair") or {}).get("repairs"))
  return unit.Part(*repair_report.compute(run, repair_asked=asked))


def _render(layers, repair, notes):
  return section(
    layers,
    repair,
    notes.get(repair_report.WHY_KEY, ()),
    notes.get(repair_report.NOT_REPAIRED_KEY, ()),
  )


UNIT = unit.Unit(
  "repair",
  reads=("run", "config"),
  makes=("layers", "repair"),
  compute=_compute,
  sections=(
    unit.Section(
      "why",
      "1d. Why a full int8 file forgot: per-layer error, and its repair",
      "1d Why",
      ("layers", "repair", "notes"),
      _render,
      optional=True,
    ),
  ),
)
