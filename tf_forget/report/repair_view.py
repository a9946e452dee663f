"""The "why" section: which layer made a full int8 file forget, and the repaired file (#29).

Renders `repair_report`'s tables: what the per-layer analysis measured and how, the repaired
files' cost (size) and effect (flips, broken examples, the worst class) against the plain int8
file, and each analysed member's best-ranked layers, with where the Model Explorer node data
is. An optional section: None without an analysis (no full int8 file with its float model).
"""

from tf_forget.report import html
from tf_forget.report import repair_report

FORMATS = {"size_vs_int8": "num", "size_vs_float32": "num", "top1_int8": html.PCT,
           "top1_repaired": html.PCT, "flip_rate_int8": html.PCT,
           "flip_rate_repaired": html.PCT, "broken_int8": "num", "broken_repaired": "num",
           "worst_class_change_int8": html.PTS_ABS, "worst_class_change_repaired": html.PTS_ABS,
           "layers": "int", "members": "int", "k": "int", "rank": "int", "excess": "g",
           "nmse_forgotten": "g", "nmse_stable": "g", "growth_forgotten": "g",
           "snr_db_forgotten": "num",
           "snr_db_stable": "num"}
LEAD = ("Each full int8 file is compared layer by layer with its float model on the examples "
        "it <b>forgot</b> (its top-1 differs from the float32 file's) and on the <b>stable</b> "
        "rest, with LiteRT's QuantizationDebugger: each int8 op's output is compared with the "
        "float op run on the same dequantized inputs, so a layer's error is its own, not "
        "carried from earlier layers. Layers are ranked by their NMSE on the forgotten "
        "examples (squared error over the float tensor's power); excess = NMSE(forgotten) − "
        "NMSE(stable) says whether that error concentrates where the file forgot. Open the "
        "int8 file in Model Explorer and add "
        "<code>layers/&lt;member&gt;/&lt;k&gt;/full_int8.model_explorer.json</code> as node "
        "data to see its graph coloured by that error. A <code>.tflite</code> file you brought "
        "has no float model to quantize again: it is run beside the float32 file with every "
        "tensor kept, the tensors the two graphs share are matched (by name, else by position: "
        "<b>match</b>) and compared after dequantizing. That error is accumulated from the "
        "layers before, so its rows are ranked by <b>growth</b>: the NMSE of the op's output "
        "minus the largest NMSE of its inputs, on the forgotten examples.")


def repair(t, skipped=()):
  """The repaired files' cost and effect, or a line saying none was made (`skipped`: the
  files not repaired because they forgot nothing significant, issue #36)."""
  head = ("<h3>Repaired files: the top-ranked layers kept in float</h3><p>Cost: size over the "
          "plain int8 file and over float32. Effect, each member against its own float32 "
          "file: top-1, flip rate (top-1 changed), broken examples (right in float32, wrong "
          "in the file) and the recall change of the class the int8 file hurt most — before "
          "(int8) and after (repaired); means over members.</p>")
  lines = "".join(f"<p class=\"lead\">{html.esc(line)}</p>" for line in skipped)
  if t is None or t.empty:
    return head + (lines or html.skipped(["no repaired file: add --repair_layers=N to make "
                                          "full_int8~float<N>"]))
  shown = t.assign(gain=[repair_report.NO_GAIN if g is False or g == 0 else "gain"
                         for g in t["gain"]]) if "gain" in t else t
  return head + html.table(shown, FORMATS) + lines


def layers(t):
  """Each analysed member's best-ranked layers."""
  shown = t.drop(columns=["op_name"] if "op" in t else [])  # "op" names it distinctly
  shown = shown.assign(tensor_name=t["tensor_name"].map(
      lambda n: n if n is None or len(str(n)) <= 60 else str(n)[:57] + "..."))
  return ("<h3>Layers ranked by their error on the forgotten examples</h3>"
          + html.table(shown, FORMATS, highlight=list(t["kept"]), max_rows=40)
          + "<p class=\"note\">Highlighted: kept in float by the repaired file.</p>")


def section(measures):
  """The "why" section's HTML, or None without a layer analysis."""
  t = measures.tables.get("layers")
  if t is None:
    return None
  return (f"<p class=\"lead\">{LEAD}</p>"
          + repair(measures.tables.get("repair"),
                   measures.notes.get(repair_report.NOT_REPAIRED_KEY, ()))
          + layers(t))
