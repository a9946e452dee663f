"""Why a full int8 file (or a user's file) forgot, and what a repair bought and cost.

Reads what the audit's "why and repair" stages wrote (docs/artifacts/layers.md): each
analysed member's `layers/<member variant>/<k>/<format>.json`, and the predictions and export
JSONs of its files. Two tables:

* `layers`: per analysed member and file, its best-ranked ops (`why_forgot.layer_rows`: the
  causal ranking's ablation counts and fault kinds, the error statistics as columns), and the
  "why" in words under `WHY_KEY` (`why_forgot.sentences`);
* `repair`: per repaired variant `<base>~<repair>` (`float<N>`, `cle`, `int16x8`, `auto`),
  averaged over its members (each against its own float32 file): size over the plain int8
  file and over float32, top-1 of the int8 and the repaired file, their flip rates against
  float32 (top-1 changed), the broken examples (right in float32, wrong in the file), and the
  recall change of the member's worst class (the class whose recall fell most from float32 to
  int8, from its analysis) before and after; the ops kept in float (`kept_ops`, named so that
  two of one type differ: `CONV_2D #2 (sequential/conv2d_1)`), and `gain`: whether it broke
  fewer examples or lost less on the worst class than the int8 file (a repair without gain is
  "no gain" in the verdict and never recommended, `no_gain`). An `auto` repair
  is measured on the held-out half only (`examples`: the half its search did not
  choose on, `halves.held_out_halves_by_id` with the seed its export JSON records), the int8
  file on the same half, so that its gain is not the choice's own. Rows in order of the
  repair (`float<N>` by N).

A full int8 file that forgot nothing significant is not repaired (`not_repaired` says so, by
the audit's rule `paired.forgot_significantly`). Without an analysis both tables are empty and
the section is left out. Numpy / pandas, `tf_forget.artifacts`, `tf_forget.stats` and
`words` only.
"""

import os

import numpy as np
import pandas as pd

from tf_forget.artifacts import errors
from tf_forget.artifacts import filesystem
from tf_forget.artifacts import layers_json
from tf_forget.artifacts import layout
from tf_forget.artifacts import names
from tf_forget.artifacts import tflite_json
from tf_forget.report.words import quantities
from tf_forget.report.words import why_forgot
from tf_forget.stats import halves
from tf_forget.stats import paired

NOTES_KEY = "repair"
NOT_REPAIRED_KEY = "not_repaired"  # the notes' lines of the files left unrepaired
WHY_KEY = "why"  # the notes' "why" sentences (`why_forgot.sentences`)
MEAN_COLUMNS = [
  "size_vs_int8",
  "size_vs_float32",
  "top1_int8",
  "top1_repaired",
  "flip_rate_int8",
  "flip_rate_repaired",
  "broken_int8",
  "broken_repaired",
  "worst_class_change_int8",
  "worst_class_change_repaired",
]
REPAIR_COLUMNS = (
  ["variant", "base", "repair", "chosen", "layers", "members", "examples", "kept_ops"]
  + MEAN_COLUMNS[:8]
  + ["worst_class"]
  + MEAN_COLUMNS[8:]
  + ["gain"]
)
ALL_EXAMPLES = "all"
HELD_OUT = "held-out half"  # `auto`: numbers on the half its search did not choose on
NO_GAIN = "no gain"
# A repair gains when it breaks fewer examples or loses less recall on the worst class (by more
# than float rounding).
EPS = 1e-9


def _analyses(run_dir):
  """{(member variant, k, format): analysis dict} of the run's readable analyses."""
  root = os.path.join(run_dir, "layers")
  out = {}
  if not filesystem.isdir(root):
    return out
  for member_variant, k, directory in layout.walk(root):
    for name in sorted(filesystem.listdir(directory)):
      fmt = name[: -len(".json")]
      if not name.endswith(".json") or fmt.endswith(".model_explorer"):
        continue
      try:
        out[(member_variant, int(k), fmt)] = layers_json.read(
          layers_json.path(run_dir, member_variant, k, fmt)
        )
      except errors.Error:
        continue
  return out


def _export(run_dir, variant, k):
  """The export JSON of the audited variant `variant` (a name) of member k."""
  _, meta_path = tflite_json.paths(run_dir, names.parse_variant(variant), k)
  return tflite_json.read(meta_path)


def _top1(run, variant, k):
  """Top-1 `[N]` of member k of `variant` on the evaluation split (None if absent)."""
  pop = run.eval.get(variant)
  if pop is None or int(k) not in set(pop.members.tolist()):
    return None
  return pop.top1[list(pop.members).index(int(k))]


def _recall_change(labels, ref, cand, cls):
  mask = labels == cls
  if cls is None or not mask.any():
    return np.nan
  return float(np.mean(cand[mask] == cls) - np.mean(ref[mask] == cls))


def _report_half(run, repair):
  """The mask of the examples an `auto` repair's search did not choose on (None for every
  other repair: all examples count)."""
  if repair.get("kind") != names.AUTO_REPAIR:
    return None
  dense = run.eval[names.DENSE]
  return halves.held_out_halves_by_id(dense.ids, dense.labels, int(repair["halves"]["seed"]))[1]


def member_effect(run, member_variant, k, variant, doc, mask=None):
  """What the repair `variant` changed for member k, against its float32 file (a dict), on
  the examples of `mask` (None: all)."""
  labels = run.eval[names.DENSE].labels
  int8 = names.Variant(member_variant, names.REPAIRED_FORMAT).name
  ref, before, after = (_top1(run, v, k) for v in (member_variant, int8, variant))
  if mask is not None:
    labels, ref, before, after = (a[mask] for a in (labels, ref, before, after))
  sizes = {
    v: _export(run.run_dir, v, k)["size_bytes"]["raw"] for v in (member_variant, int8, variant)
  }
  cls = doc.get("worst_class")
  return {
    "examples": int(labels.size),
    "size_vs_int8": sizes[variant] / sizes[int8],
    "size_vs_float32": sizes[variant] / sizes[member_variant],
    "top1_int8": float(np.mean(before == labels)),
    "top1_repaired": float(np.mean(after == labels)),
    "flip_rate_int8": float(np.mean(before != ref)),
    "flip_rate_repaired": float(np.mean(after != ref)),
    "broken_int8": int(np.sum((ref == labels) & (before != labels))),
    "broken_repaired": int(np.sum((ref == labels) & (after != labels))),
    "worst_class": cls,
    "worst_class_change_int8": _recall_change(labels, ref, before, cls),
    "worst_class_change_repaired": _recall_change(labels, ref, after, cls),
  }


def _repaired_variants(run, member_variant):
  """[(variant, base, repair name)] of the run's repaired files of `member_variant`."""
  base = names.Variant(member_variant, names.REPAIRED_FORMAT).name
  out = []
  for v in run.eval:
    try:
      parsed = names.parse_variant(v)
    except errors.Error:
      continue
    if parsed.member_variant == member_variant and names.repair_kind(parsed.format):
      out.append((v, base, parsed.format.split("~", 1)[1]))
  return out


def _effect(run, mv, k, variant, doc, labels):
  """(the repair's effect row for member k, the tensor names it keeps in float)."""
  repair = _export(run.run_dir, variant, k).get("repair", {})
  nodes = repair.get("float_nodes") or []
  effect = dict(
    member_effect(run, mv, k, variant, doc, _report_half(run, repair)),
    kind=repair.get("kind", "float"),
    chosen=repair.get("chosen"),
    kept=len(nodes),
    ops=[labels.get(t, t) for t in nodes],
  )
  return effect, set(nodes)


def _notes_of(doc, fmt):
  """The notes of one analysis: the basis, an error, unmatched tensors."""
  who = f"{names.Variant(doc['member_variant'], fmt).name}/{doc['k']}"
  notes = []
  if doc["basis"] == "all":
    notes.append(f"{who} forgot nothing: its layers are ranked by their error on every example")
  if doc.get("error"):
    notes.append(f"{who}: not compared tensor by tensor ({doc['error']})")
  if doc.get("unmatched"):
    notes.append(
      f"{who}: {doc['unmatched']} of its tensors match no tensor of the float32 "
      "file (by name or position) and are not compared"
    )
  return notes


def _repair_row(key, effs):
  base, repair, v = key
  return dict(
    {
      "variant": v,
      "base": base,
      "repair": effs[0]["kind"],
      "chosen": effs[0]["chosen"],
      "layers": max(e["kept"] for e in effs),
      "members": len(effs),
      "examples": HELD_OUT if effs[0]["kind"] == names.AUTO_REPAIR else ALL_EXAMPLES,
      "kept_ops": ", ".join(dict.fromkeys(op for e in effs for op in e["ops"])),
    },
    **{c: _mean([e[c] for e in effs]) for c in MEAN_COLUMNS},
    worst_class=effs[0]["worst_class"] if len(effs) == 1 else None,
    n=effs[0]["examples"],
  )


def compute(run, repair_asked=False):
  """(tables, notes) of the run's analyses and repairs (empty without an analysis); with
  `repair_asked` (`--repair`) the files left unrepaired under `NOT_REPAIRED_KEY`; the "why"
  in words under `WHY_KEY`."""
  analyses = _analyses(run.run_dir)
  if not analyses:
    return {}, {}
  skipped = not_repaired(run) if repair_asked else []
  layers, effects, notes, why = [], {}, [], []
  for (mv, k, fmt), doc in sorted(analyses.items()):
    repaired = _repaired_variants(run, mv) if fmt == names.REPAIRED_FORMAT else []
    kept, labels = set(), why_forgot.op_labels(doc)
    for variant, base, repair in repaired:
      try:
        effect, nodes = _effect(run, mv, k, variant, doc, labels)
        kept |= nodes
        effects.setdefault((base, repair, variant), []).append(effect)
      except (errors.Error, KeyError) as e:
        notes.append(f"{variant}/{k}: repair effect not computed ({errors.one_line(e, 160)})")
    layers += why_forgot.layer_rows(doc, kept)
    notes += _notes_of(doc, fmt)
    flips = doc.get("flips") or {}
    if paired.forgot_significantly(flips.get("broken", 0), flips.get("fixed", 0))[0]:
      why += why_forgot.sentences(doc)  # only what the audit would repair
  order = names.sorted_repairs({repair for _, repair, _ in effects})
  rows = [
    _repair_row(key, effs)
    for key, effs in sorted(effects.items(), key=lambda item: (item[0][0], order.index(item[0][1])))
  ]
  for row in rows:
    row["gain"] = gained(row)
  tables = {"layers": pd.DataFrame(layers, columns=why_forgot.LAYER_COLUMNS)}
  if rows:
    tables["repair"] = pd.DataFrame(rows, columns=REPAIR_COLUMNS + ["n"])
  out = {NOTES_KEY: notes} if notes else {}
  if skipped:
    out[NOT_REPAIRED_KEY] = skipped
  if why:
    out[WHY_KEY] = why
  return tables, out


def gained(row):
  """Whether a `repair` row bought something: fewer broken examples, or less recall lost on
  the worst class, than the int8 file."""
  fewer = row["broken_repaired"] < row["broken_int8"] - EPS
  before, after = row["worst_class_change_int8"], row["worst_class_change_repaired"]
  less_loss = (
    before is not None
    and after is not None
    and np.isfinite(before)
    and np.isfinite(after)
    and after > before + EPS
  )
  return bool(fewer or less_loss)


def no_gain(tables):
  """{repaired variant: why} of the repairs that bought nothing (`gained`): the verdict marks
  them "no gain" and never recommends them."""
  t = tables.get("repair")
  if t is None or "gain" not in t:
    return {}
  return {
    row["variant"]: (
      f"{NO_GAIN}: broken examples {row['broken_int8']:g} → "
      f"{row['broken_repaired']:g}, at {row['size_vs_int8']:.2f}x the "
      "int8 file's size"
    )
    for row in t.to_dict("records")
    if not row["gain"]
  }


def not_repaired(run):
  """One line per analysed full int8 file not repaired because it forgot nothing significant
  (`paired.forgot_significantly`, as the audit's repair stage decides)."""
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
      out.append(
        f"No repair of {who}: it forgot nothing significant against its float32 "
        f"file ({flips.get('broken', 0)} broken, "
        f"{flips.get('fixed', 0)} fixed of {_examples(run)} test examples; exact "
        f"McNemar p = {p:.2g}), so no layer is kept in float."
      )
  return out


def _examples(run):
  return f"{int(run.eval[names.DENSE].ids.size):,}"


def _what(row):
  """'2 ops of full_int8 kept in float (CONV_2D #2 (...), ...)', 'full_int8 equalized across
  layers first', ... (what a repaired file is)."""
  ops = [op for op in str(row["kept_ops"] or "").split(", ") if op]
  floated = (
    f"{row['layers']:g} op{'' if row['layers'] == 1 else 's'} of {row['base']} kept "
    f"in float{' (' + ', '.join(ops) + ')' if ops else ''}"
  )
  kind = row["repair"]
  if kind == "cle":
    return f"{row['base']} equalized across layers first (no bytes)"
  if kind == "int16x8":
    return f"{row['base']} with 16-bit activations"
  if kind == names.AUTO_REPAIR:
    how = {
      "cle": "equalized across layers",
      "plain": "no repair within the size budget: the int8 file itself",
    }.get(row["chosen"], floated)
    return (
      f"the search's choice ({how}; chosen on one half of the test examples, the numbers "
      f"below on the other {int(row['n']):,})"
    )
  return floated


def sentences(tables, skipped=()):
  """One sentence per repaired variant for the verdict: what it is, cost and bought (a repair
  that bought nothing says "no gain"; `auto` on its held-out half), then the `skipped` lines
  (`not_repaired`)."""
  t = tables.get("repair")
  if t is None:
    return list(skipped)
  out = []
  for row in t.to_dict("records"):
    cls = row["worst_class"]
    worst = (
      ""
      if cls is None or not np.isfinite(row["worst_class_change_int8"])
      else f"; recall of class {int(cls)}, the one {row['base']} hurt most, "
      f"{100 * row['worst_class_change_int8']:+.1f} → "
      f"{100 * row['worst_class_change_repaired']:+.1f} pt"
    )
    verb = "buys" if row.get("gain", True) else "changes"
    out.append(
      f"Repair {row['variant']}: {_what(row)} costs "
      f"{row['size_vs_int8']:.2f}x the int8 file's size ({row['size_vs_float32']:.2f}x "
      f"float32) and {verb} top-1 {100 * row['top1_int8']:.2f}% → "
      f"{100 * row['top1_repaired']:.2f}%, flips vs float32 "
      f"{quantities.rate(row['flip_rate_int8'])} → {quantities.rate(row['flip_rate_repaired'])}, "
      f"broken examples {row['broken_int8']:g} → {row['broken_repaired']:g}{worst}"
      f"{' (means over ' + str(row['members']) + ' members)' if row['members'] > 1 else ''}"
      + (
        ""
        if row.get("gain", True)
        else f" — {NO_GAIN}: it breaks no fewer examples and loses no less on the worst class"
        f"{' on the held-out half' if row['repair'] == names.AUTO_REPAIR else ''}; "
        "not recommended"
      )
      + "."
    )
  return out + list(skipped)


def _mean(values):
  values = [v for v in values if v is not None and np.isfinite(v)]
  return float(np.mean(values)) if values else np.nan
