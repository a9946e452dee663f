"""Why a compressed file forgot, in rows and in words.

From one layer analysis (docs/artifacts/layers.md, `tf_forget.evaluate.layer_analysis`):
  * `layer_rows`: its `TOP_LAYERS` best-ranked ops for the report's `layers` table — the op
    named distinctly (`op_labels`: `CONV_2D #2 (sequential/conv2d_1)`), how it was ranked
    (`evidence`: "ablation" for the ops measured end to end, else "error statistic"), what
    picked an ablated op (`picked_by`: "NMSE pick", "range diagnosis", or both), the
    ablation's counts (`recovered`: broken examples it recovers when kept alone in float;
    `caused`: forgotten examples it breaks when quantized alone), its fault kind, and today's
    error statistics as columns (NMSE forgotten / stable, excess, SNR, a user file's growth in
    dB, `nmse_rank`);
  * `sentences`: the "why" in words — which ranking it is and what it can and cannot see (for
    an ablation, how many ops each score picked), the top ops with what picked them, their
    fault and evidence, and each activation tensor where one channel dominates
    the per-tensor int8 range (`range_diagnosis.sentence`, restated here without importing the
    pipeline).
Numpy-free; `tf_forget.artifacts.names` and `naming` only.
"""

from tf_forget.artifacts import names
from tf_forget.report.words import naming

TOP_LAYERS = 10
# How a row's tensors were compared: per layer by the debugger, or matched between two files.
PER_LAYER = "per layer"
LAYER_COLUMNS = [
  "member_variant",
  "k",
  "format",
  "basis",
  "rank",
  "op_name",
  "op",
  "tensor_name",
  "match",
  "evidence",
  "picked_by",
  "fault",
  "recovered",
  "caused",
  "nmse_rank",
  "nmse_forgotten",
  "nmse_stable",
  "excess",
  "growth_forgotten",
  "growth_db_forgotten",
  "snr_db_forgotten",
  "snr_db_stable",
  "kept",
]
FAULT_WORDS = {
  "range": "its activation range",
  "weights": "its own int8 weights and output",
  "inherited": "error inherited from earlier ops",
}
TOP_SENTENCES = 2  # ablated ops described in words
# What picked an ablated op (`tf_forget.evaluate.ablation_candidates`): in the table, in words.
PICKED_COLUMN = {"nmse": "NMSE pick", "range": "range diagnosis"}
PICKED_WORDS = {"nmse": "its NMSE", "range": "the range diagnosis"}


def op_labels(doc):
  """{tensor name: 'CONV_2D #2 (sequential/conv2d_1)'} of an analysis's ranked ops, so that
  two ops of one type differ (`naming.op_label`)."""
  ordinals = naming.op_ordinals(doc.get("rows") or doc.get("ranking") or [])
  return {
    r["tensor_name"]: naming.op_label(
      r["op_name"], r.get("file_tensor_name") or r["tensor_name"], ordinals.get(r.get("op_index"))
    )
    for r in doc.get("ranking") or []
  }


def layer_rows(doc, kept):
  """The `layers` rows of one analysis (`kept`: tensor names a repaired file keeps)."""
  labels = op_labels(doc)
  return [
    {
      "member_variant": doc["member_variant"],
      "k": int(doc["k"]),
      "format": doc.get("format", names.REPAIRED_FORMAT),
      "basis": doc["basis"],
      "rank": r["rank"],
      "op_name": r["op_name"],
      "op": labels.get(r["tensor_name"]),
      "tensor_name": r["tensor_name"],
      "match": r.get("match", PER_LAYER),
      "evidence": r.get("evidence", "error statistic"),
      "picked_by": ", ".join(PICKED_COLUMN.get(p, p) for p in r.get("picked_by") or []) or None,
      "fault": r.get("fault"),
      "recovered": r.get("recovered"),
      "caused": r.get("caused"),
      "nmse_rank": r.get("nmse_rank", r["rank"]),
      "nmse_forgotten": r["nmse_forgotten"],
      "nmse_stable": r["nmse_stable"],
      "excess": r["excess"],
      "growth_forgotten": r.get("growth_forgotten"),
      "growth_db_forgotten": r.get("growth_db_forgotten"),
      "snr_db_forgotten": r["snr_db_forgotten"],
      "snr_db_stable": r["snr_db_stable"],
      "kept": r["tensor_name"] in kept,
    }
    for r in doc["ranking"][:TOP_LAYERS]
  ]


def range_sentence(row, label=None):
  """'CONV_2D (sequential/conv2d) output channel 6 spans 100x the median channel: per-tensor
  int8 leaves the other 15 channels about 7 levels' (a `range_diagnosis.dominant` row)."""
  op = label or naming.op_label(row["op_name"], row["tensor_name"])
  return (
    f"{op} output channel {row['channel']} spans {row['ratio']:.0f}x the median "
    f"channel: per-tensor int8 leaves the other {row['channels'] - 1} channels about "
    f"{row['levels_others']:.0f} levels"
  )


def _who(doc):
  return f"{names.Variant(doc['member_variant'], doc.get('format', '')).name}/{doc['k']}"


def _ablated_sentence(doc, row, label):
  ablation = doc.get("ablation") or {}
  broken = ablation.get("plain", {}).get("broken_forgotten", 0)
  if row.get("picked_by"):
    label += ", picked by " + " and ".join(PICKED_WORDS.get(p, p) for p in row["picked_by"])
  text = (
    f"{label}: {FAULT_WORDS.get(row.get('fault'), 'unknown')} — kept alone in float it "
    f"recovers {row['recovered']} of the {broken} examples the file broke, quantized "
    f"alone (everything else float) it breaks {row['caused']} of the "
    f"{ablation.get('forgotten', 0)} forgotten"
  )
  if row.get("range"):
    text += f"; {range_sentence(row['range'])}"
  return text


def sentences(doc):
  """The analysis's "why" in words (module docstring), one sentence each."""
  who, labels, ranking = _who(doc), op_labels(doc), doc.get("ranking") or []
  if doc.get("error") or not ranking:
    return []
  if doc.get("ranked_by") == "ablation":
    ablation = doc["ablation"]
    picked = (
      "ops of largest error"
      if "picked_range" not in ablation
      else f"ops of largest error ({ablation['picked_nmse']}) or named by the range "
      f"diagnosis ({ablation['picked_range']})"
    )
    out = [
      f"Why {who} forgot (ranked by ablation: each of the {ablation['ablated']} "
      f"{picked} quantized alone and kept alone in float, end to end on the "
      f"{ablation['forgotten']} forgotten and {ablation['stable']} stable "
      "examples):"
    ]
    out += [
      _ablated_sentence(doc, r, labels.get(r["tensor_name"], r["op_name"])) + "."
      for r in ranking[:TOP_SENTENCES]
      if r.get("evidence") == "ablation"
    ]
    shown = {
      r["tensor"]
      for r in doc.get("ranges") or []
      for a in ranking[:TOP_SENTENCES]
      if a.get("range") and a["range"].get("tensor") == r["tensor"]
    }
    out += [range_sentence(r) + "." for r in doc.get("ranges") or [] if r["tensor"] not in shown]
    return out
  top = ranking[0]
  label = labels.get(top["tensor_name"], top["op_name"])
  where = (
    "on the forgotten examples"
    if doc["basis"] == "forgotten"
    else "on every example: it forgot nothing"
  )
  if top.get("match"):  # a user's file, compared tensor by tensor
    growth = top.get("growth_db_forgotten")
    return [
      f"Where {who}'s error grows most ({where}): {label}"
      + (f", {growth:+.1f} dB over its inputs" if growth is not None else "")
      + ". This ranking compares tensors of your file with the float32 file's: it sees "
      "where error appears, not which op's quantization caused the forgetting (that "
      "needs the float model to quantize again), and a per-tensor statistic cannot see "
      "one channel's range crowding out the others."
    ]
  nmse = top["nmse_forgotten"] if doc["basis"] == "forgotten" else top["nmse_stable"]
  return [
    f"Where {who} errs most ({where}): {label}"
    + (f", NMSE {nmse:.3g}" if nmse is not None else "")
    + " (an error statistic, not an ablation)."
  ]
