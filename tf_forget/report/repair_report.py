"""Why a full int8 file (or a user's file) forgot, and what a repair bought and cost (#29).

Reads what the audit's "why and repair" stages wrote (docs/artifacts/layers.md): each
analysed member's `layers/<member variant>/<k>/<format>.json`, and the predictions and export
JSONs of its files. Two tables:

* `layers`: per analysed member and file, its `TOP_LAYERS` best-ranked layers: op, how it was
  compared (`match`: "per layer" by the QuantizationDebugger, or a user file's tensor matched
  by "name" / "position", `eval.tensor_match`), NMSE on the forgotten and on the stable
  examples, the excess NMSE(forgotten) − NMSE(stable), the growth of a matched tensor's
  accumulated NMSE over its inputs', SNR on both, and whether the repaired file keeps the
  layer in float;
* `repair`: per repaired variant `<base>~float<N>`, averaged over its members (each against its
  own float32 file): size over the plain int8 file and over float32, top-1 of the int8 and the
  repaired file, their flip rates against float32 (top-1 changed), the broken examples (right
  in float32, wrong in the file), and the recall change of the member's worst class (the class
  whose recall fell most from float32 to int8, from its analysis) before and after; the ops
  kept in float (`kept_ops`, each op named so that two of one type differ: `CONV_2D #2
  (sequential/conv2d_1)`), and `gain`: whether it broke fewer examples or lost less on the
  worst class than the int8 file (a repair without gain is "no gain" in the verdict and never
  recommended, `no_gain`; issue #36). One row per N of `--repair_layers=1,2,3`, in order of N.

A full int8 file that forgot nothing significant is not repaired (`not_repaired` says so, by
the audit's rule `paired.forgot_significantly`). Without an analysis both tables are empty and
the section is left out. Numpy / pandas, `tf_forget.artifacts`, `tf_forget.stats.paired` and
`wording` only.
"""

import os

import numpy as np
import pandas as pd

from tf_forget.artifacts import errors
from tf_forget.artifacts import fileio
from tf_forget.artifacts import layout
from tf_forget.artifacts import names
from tf_forget.report import wording
from tf_forget.stats import paired

TOP_LAYERS = 10
NOTES_KEY = "repair"
NOT_REPAIRED_KEY = "not_repaired"  # the notes' lines of the files left unrepaired (#36)
LAYER_COLUMNS = ["member_variant", "k", "format", "basis", "rank", "op_name", "op",
                 "tensor_name", "match", "nmse_forgotten", "nmse_stable", "excess",
                 "growth_forgotten",
                 "snr_db_forgotten", "snr_db_stable", "kept"]
# How a row's tensors were compared: per layer by the debugger, or matched between two files.
PER_LAYER = "per layer"
REPAIR_COLUMNS = ["variant", "base", "layers", "members", "kept_ops", "size_vs_int8",
                  "size_vs_float32", "top1_int8", "top1_repaired", "flip_rate_int8",
                  "flip_rate_repaired", "broken_int8", "broken_repaired", "worst_class",
                  "worst_class_change_int8", "worst_class_change_repaired", "gain"]
NO_GAIN = "no gain"
# A repair gains when it breaks fewer examples or loses less recall on the worst class (by more
# than float rounding).
EPS = 1e-9


def _analyses(run_dir):
  """{(member variant, k, format): analysis dict} of the run's readable analyses."""
  root = os.path.join(run_dir, "layers")
  out = {}
  if not fileio.isdir(root):
    return out
  for member_variant, k, directory in layout.walk(root):
    for name in sorted(fileio.listdir(directory)):
      fmt = name[:-len(".json")]
      if not name.endswith(".json") or fmt.endswith(".model_explorer"):
        continue
      try:
        out[(member_variant, int(k), fmt)] = fileio.read_json(
            layout.layers(run_dir, member_variant, k, fmt), "layer analysis")
      except errors.Error:
        continue
  return out


def _export(run_dir, variant, k):
  """The export JSON of the audited variant `variant` (a name) of member k."""
  _, meta_path = layout.tflite_paths(run_dir, names.parse_variant(variant), k)
  return fileio.read_json(meta_path, "export JSON")


def _top1(run, variant, k):
  """Top-1 `[N]` of member k of `variant` on the evaluation split (None if absent)."""
  pop = run.eval.get(variant)
  if pop is None or int(k) not in set(pop.members.tolist()):
    return None
  return pop.top1[list(pop.members).index(int(k))]


def op_labels(doc):
  """{tensor name: 'CONV_2D #2 (sequential/conv2d_1)'} of an analysis's ranked ops, so that
  two ops of one type differ (`wording.op_label`; issue #36)."""
  ordinals = wording.op_ordinals(doc.get("rows") or doc.get("ranking") or [])
  return {r["tensor_name"]: wording.op_label(
      r["op_name"], r.get("file_tensor_name") or r["tensor_name"],
      ordinals.get(r.get("op_index")))
          for r in doc.get("ranking") or []}


def layer_rows(doc, kept):
  """The `layers` rows of one analysis (`kept`: tensor names the repaired file keeps)."""
  labels = op_labels(doc)
  return [{"member_variant": doc["member_variant"], "k": int(doc["k"]),
           "format": doc.get("format", names.REPAIRED_FORMAT), "basis": doc["basis"],
           "rank": r["rank"], "op_name": r["op_name"], "op": labels.get(r["tensor_name"]),
           "tensor_name": r["tensor_name"],
           "match": r.get("match", PER_LAYER), "nmse_forgotten": r["nmse_forgotten"],
           "nmse_stable": r["nmse_stable"], "excess": r["excess"],
           "growth_forgotten": r.get("growth_forgotten"),
           "snr_db_forgotten": r["snr_db_forgotten"], "snr_db_stable": r["snr_db_stable"],
           "kept": r["tensor_name"] in kept}
          for r in doc["ranking"][:TOP_LAYERS]]


def _recall_change(labels, ref, cand, cls):
  mask = labels == cls
  if cls is None or not mask.any():
    return np.nan
  return float(np.mean(cand[mask] == cls) - np.mean(ref[mask] == cls))


def member_effect(run, member_variant, k, variant, doc):
  """What the repair `variant` changed for member k, against its float32 file (a dict)."""
  labels = run.eval[names.DENSE].labels
  int8 = names.Variant(member_variant, names.REPAIRED_FORMAT).name
  ref, before, after = (_top1(run, v, k) for v in (member_variant, int8, variant))
  sizes = {v: _export(run.run_dir, v, k)["size_bytes"]["raw"]
           for v in (member_variant, int8, variant)}
  cls = doc.get("worst_class")
  return {"size_vs_int8": sizes[variant] / sizes[int8],
          "size_vs_float32": sizes[variant] / sizes[member_variant],
          "top1_int8": float(np.mean(before == labels)),
          "top1_repaired": float(np.mean(after == labels)),
          "flip_rate_int8": float(np.mean(before != ref)),
          "flip_rate_repaired": float(np.mean(after != ref)),
          "broken_int8": int(np.sum((ref == labels) & (before != labels))),
          "broken_repaired": int(np.sum((ref == labels) & (after != labels))),
          "worst_class": cls,
          "worst_class_change_int8": _recall_change(labels, ref, before, cls),
          "worst_class_change_repaired": _recall_change(labels, ref, after, cls)}


def _repaired_variants(run, member_variant):
  base = names.Variant(member_variant, names.REPAIRED_FORMAT).name
  out = []
  for v in run.eval:
    try:
      parsed = names.parse_variant(v)
    except errors.Error:
      continue
    if parsed.member_variant == member_variant and names.repair_layers(parsed.format):
      out.append((v, base, names.repair_layers(parsed.format)))
  return out


def compute(run, repair_asked=False):
  """(tables, notes) of the run's analyses and repairs (empty without an analysis); with
  `repair_asked` (`--repair_layers`) the files left unrepaired under `NOT_REPAIRED_KEY`."""
  analyses = _analyses(run.run_dir)
  if not analyses:
    return {}, {}
  skipped = not_repaired(run) if repair_asked else []
  layers, effects, notes = [], {}, []
  for (mv, k, fmt), doc in sorted(analyses.items()):
    repaired = _repaired_variants(run, mv) if fmt == names.REPAIRED_FORMAT else []
    kept = set()
    for variant, base, n in repaired:
      try:
        repair = _export(run.run_dir, variant, k).get("repair", {})
        kept |= set(repair.get("float_nodes", []))
        labels = op_labels(doc)
        effect = dict(member_effect(run, mv, k, variant, doc),
                      ops=[labels.get(t, t) for t in repair.get("float_nodes", [])])
        effects.setdefault((base, n, variant), []).append(effect)
      except (errors.Error, KeyError) as e:
        notes.append(f"{variant}/{k}: repair effect not computed ({errors.one_line(e, 160)})")
    layers += layer_rows(doc, kept)
    if doc["basis"] == "all":
      notes.append(f"{names.Variant(mv, fmt).name}/{k} forgot nothing: its "
                   "layers are ranked by their error on every example")
    if doc.get("error"):
      notes.append(f"{names.Variant(mv, fmt).name}/{k}: not compared tensor by tensor "
                   f"({doc['error']})")
    if doc.get("unmatched"):
      notes.append(f"{names.Variant(mv, fmt).name}/{k}: {doc['unmatched']} of its tensors "
                   "match no tensor of the float32 file (by name or position) and are not "
                   "compared")
  rows = [dict({"variant": v, "base": base, "layers": n, "members": len(effs),
                "kept_ops": ", ".join(dict.fromkeys(op for e in effs for op in e["ops"]))},
               **{c: _mean([e[c] for e in effs]) for c in REPAIR_COLUMNS[5:]
                  if c not in ("worst_class", "gain")},
               worst_class=effs[0]["worst_class"] if len(effs) == 1 else None)
          for (base, n, v), effs in sorted(effects.items())]
  for row in rows:
    row["gain"] = gained(row)
  tables = {"layers": pd.DataFrame(layers, columns=LAYER_COLUMNS)}
  if rows:
    tables["repair"] = pd.DataFrame(rows, columns=REPAIR_COLUMNS)
  out = {NOTES_KEY: notes} if notes else {}
  if skipped:
    out[NOT_REPAIRED_KEY] = skipped
  return tables, out


def gained(row):
  """Whether a `repair` row bought something: fewer broken examples, or less recall lost on
  the worst class, than the int8 file (issue #36)."""
  fewer = row["broken_repaired"] < row["broken_int8"] - EPS
  before, after = row["worst_class_change_int8"], row["worst_class_change_repaired"]
  less_loss = (before is not None and after is not None and np.isfinite(before)
               and np.isfinite(after) and after > before + EPS)
  return bool(fewer or less_loss)


def no_gain(tables):
  """{repaired variant: why} of the repairs that bought nothing (`gained`): the verdict marks
  them "no gain" and never recommends them."""
  t = tables.get("repair")
  if t is None or "gain" not in t:
    return {}
  return {row["variant"]: (f"{NO_GAIN}: broken examples {row['broken_int8']:g} → "
                           f"{row['broken_repaired']:g}, at {row['size_vs_int8']:.2f}x the "
                           "int8 file's size")
          for row in t.to_dict("records") if not row["gain"]}


def not_repaired(run):
  """One line per analysed full int8 file not repaired because it forgot nothing significant
  (`paired.forgot_significantly`, as the audit's repair stage decides; issue #36)."""
  out = []
  for (mv, k, fmt), doc in sorted(_analyses(run.run_dir).items()):
    made = [v for v, _, _ in _repaired_variants(run, mv) if _top1(run, v, k) is not None]
    if fmt != names.REPAIRED_FORMAT or made:  # repaired all the same (`--repair_always`)
      continue
    flips = doc.get("flips") or {}
    needed, p = paired.forgot_significantly(flips.get("broken", 0), flips.get("fixed", 0))
    if not needed:
      variant = names.Variant(mv, fmt).name
      several = len(run.eval.get(variant, run.eval[names.DENSE]).members) > 1
      who = variant + (f" (member {k})" if several else "")
      out.append(f"No repair of {who}: it forgot nothing significant against its float32 "
                 f"file ({flips.get('broken', 0)} broken, "
                 f"{flips.get('fixed', 0)} fixed of {_examples(run)} test examples; exact "
                 f"McNemar p = {p:.2g}), so no layer is kept in float.")
  return out


def _examples(run):
  return f"{int(run.eval[names.DENSE].ids.size):,}"


def sentences(tables, skipped=()):
  """One sentence per repaired variant for the verdict: what it cost and what it bought (a
  repair that bought nothing says "no gain"), then the `skipped` lines (`not_repaired`)."""
  t = tables.get("repair")
  if t is None:
    return list(skipped)
  out = []
  for row in t.to_dict("records"):
    ops = [op for op in str(row["kept_ops"] or "").split(", ") if op]
    cls = row["worst_class"]
    worst = ("" if cls is None or not np.isfinite(row["worst_class_change_int8"]) else
             f"; recall of class {int(cls)}, the one {row['base']} hurt most, "
             f"{100 * row['worst_class_change_int8']:+.1f} → "
             f"{100 * row['worst_class_change_repaired']:+.1f} pt")
    verb = "buys" if row.get("gain", True) else "changes"
    out.append(
        f"Repair {row['variant']}: {row['layers']} layer{'' if row['layers'] == 1 else 's'} of "
        f"{row['base']} kept in float{' (' + ', '.join(ops) + ')' if ops else ''} costs "
        f"{row['size_vs_int8']:.2f}x the int8 file's size ({row['size_vs_float32']:.2f}x "
        f"float32) and {verb} top-1 {100 * row['top1_int8']:.2f}% → "
        f"{100 * row['top1_repaired']:.2f}%, flips vs float32 "
        f"{wording.rate(row['flip_rate_int8'])} → {wording.rate(row['flip_rate_repaired'])}, "
        f"broken examples {row['broken_int8']:g} → {row['broken_repaired']:g}{worst}"
        f"{' (means over ' + str(row['members']) + ' members)' if row['members'] > 1 else ''}"
        + ("" if row.get("gain", True) else
           f" — {NO_GAIN}: it breaks no fewer examples and loses no less on the worst class; "
           "not recommended") + ".")
  return out + list(skipped)


def _mean(values):
  values = [v for v in values if v is not None and np.isfinite(v)]
  return float(np.mean(values)) if values else np.nan
