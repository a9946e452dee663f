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
LEAD = (
  "Each full int8 file is compared with its float model on the examples it "
  "<b>forgot</b> (its top-1 differs from the float32 file's) and on the <b>stable</b> "
  "rest. First, with LiteRT's QuantizationDebugger, each int8 op's output is compared "
  "with the float op run on the same dequantized inputs (NMSE: squared error over the "
  "float tensor's power; excess = NMSE(forgotten) − NMSE(stable)). Then the ops of "
  "largest error and the ops that write or read a tensor where one channel dominates "
  "the int8 range (which the NMSE cannot see; <b>picked_by</b>: NMSE pick, range "
  "diagnosis) are tested <b>causally</b>, end to end on the forgotten examples: the "
  "file with only that op kept in float (<b>recovered</b>: broken examples it gets right "
  "again) and the file with only that op quantized (<b>caused</b>: forgotten examples it "
  "breaks by itself). Those ops are ranked by that effect (<b>evidence</b> "
  "\"ablation\"; the ops around one wide tensor together, the op writing it first), "
  "the others after them by NMSE (<b>nmse_rank</b> keeps the error "
  "ranking). <b>fault</b> says what kind: its activation range (a channel of a tensor "
  "it writes or reads spans far more than the others, so a per-tensor int8 scale leaves "
  "the others a few levels), its own int8 weights and output, or error inherited from "
  "earlier ops. Open the int8 file in Model Explorer and add "
  "<code>layers/&lt;member&gt;/&lt;k&gt;/full_int8.model_explorer.json</code> as node "
  "data to see its graph coloured by the NMSE. A <code>.tflite</code> file you brought "
  "has no float model to quantize again: it is run beside the float32 file with every "
  "tensor kept, the tensors the two graphs share are matched (by name, else by position: "
  "<b>match</b>) and compared after dequantizing. That error is accumulated from the "
  "layers before, so its rows are ranked by where it grows relative to its inputs "
  "(<b>growth_db_forgotten</b>: 10 log10 of the op's output NMSE over its inputs' "
  "largest): it shows where error appears, not which op caused the forgetting, and "
  "cannot see one channel's range crowding out the others."
)


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
  return f"<p class=\"lead\">{LEAD}</p>" + why + repair(repaired, not_repaired) + layers(t)


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
