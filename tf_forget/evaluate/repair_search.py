"""`full_int8~auto`: the repair a search chose, on one half of the test examples.

The search tries, in order, the repairs of a forgetting full int8 file that cost least:
  1. `cle` — cross-layer equalization before conversion (`tf_forget.evaluate.no_byte_repairs`: no
     bytes);
  2. `float1`, `float2`, ... — the full int8 file with the 1, 2, ... ops of the layer analysis's
     ranking kept in float (`tf_forget.evaluate.layer_analysis`: the causal order, ops whose
     quantization broke most of the forgotten examples first), until a file would exceed `max_size`
     times the plain full int8 file's bytes (`--max_repair_size`) or `MAX_FLOAT_OPS` ops are in
     float;
and stops at the first whose forgetting "holds" on the choose half: it forgot nothing
significantly (`paired.forgot_significantly`: broken vs fixed against float32) and every gate
the user set that a half can measure holds (`--max_accuracy_drop`, `--max_significant_classes`
(McNemar + BH per class), `--max_flip_rate`, `--max_kl`; the subgroup gate is left to the
verdict). When none holds, the one that broke fewest examples is chosen; when none could be
made within the budget (or `cle` for a model that is not tf_keras), the plain int8 file itself
("plain": the report then shows no gain, and it is never recommended).

Held out (docs/spec.md §1.1's "no choice on the data it is judged on"): the choice is made on the
"choose" half of the evaluation split (`tf_forget.stats.halves.held_out_halves_by_id`:
seeded, stratified by class); the report (`tf_forget.report.repair_report`) shows the chosen file's
numbers on the "report" half only and says so, and a choice that buys nothing there is never
recommended. Every candidate's numbers on the choose half are recorded in the export JSON
(`repair.search`), with the halves' seed and sizes.
"""

import os
import time

import numpy as np

from tf_forget.artifacts import errors
from tf_forget.artifacts import fileio
from tf_forget.artifacts import layout
from tf_forget.artifacts import names
from tf_forget.artifacts import predictions
from tf_forget.evaluate import batched
from tf_forget.evaluate import layer_analysis
from tf_forget.evaluate import no_byte_repairs
from tf_forget.export import export
from tf_forget.export import export_state
from tf_forget.export import flatbuffer
from tf_forget.export import selective_quantizer
from tf_forget.stats import divergence
from tf_forget.stats import halves
from tf_forget.stats import paired

MAX_FLOAT_OPS = 6  # at most this many ops in float (the causal ranking ablates about as many)
GATES = ("max_accuracy_drop", "max_significant_classes", "max_flip_rate", "max_kl")
REPORT_HALF = "report"


def settings(gates, max_size, seed=halves.DEFAULT_SEED):
  """The search's settings as recorded in the repaired file's lineage: the gates it stops at
  (`GATES` of a `gates.Gates`, unset ones left out), the size budget and the halves' seed."""
  bounds = {
    g: getattr(gates, g) for g in GATES if gates is not None and getattr(gates, g, None) is not None
  }
  return {"gates": bounds, "max_size": float(max_size), "seed": int(seed)}


def measures(labels, ref_top1, ref_logits, logits, num_classes):
  """A candidate's forgetting on a set of examples against float32 (JSON-able): "n",
  "broken", "fixed", "changed" (`paired.flips`), "flip_rate" (their sum / n), "kl" (mean
  KL(float32 || file), nats), "accuracy_drop" (float32's top-1 minus the file's),
  "significant_classes" (`paired.per_class_recall_change`, BH at 0.05) and "p" (exact McNemar
  of broken vs fixed)."""
  top1 = np.argmax(logits, axis=1)
  flips = paired.flips(labels, ref_top1, top1)
  counts = {name: int(np.sum(getattr(flips, name))) for name in ("broken", "fixed", "changed")}
  n = int(len(labels))
  classes = paired.per_class_recall_change(labels, ref_top1, top1, num_classes)
  return {
    "n": n,
    **counts,
    "flip_rate": sum(counts.values()) / n,
    "kl": float(np.mean(divergence.kl_divergence(ref_logits, logits))),
    "accuracy_drop": float(np.mean(ref_top1 == labels) - np.mean(top1 == labels)),
    "significant_classes": int(np.sum(classes["significant"])),
    "p": paired.mcnemar_p(counts["broken"], counts["fixed"]),
  }


def failures(m, bounds):
  """What keeps candidate measures `m` from holding (empty: it holds)."""
  out = []
  forgot, p = paired.forgot_significantly(m["broken"], m["fixed"])
  if forgot:
    out.append(
      f"forgot significantly ({m['broken']} broken, {m['fixed']} fixed; McNemar p = {p:.2g})"
    )
  measured = {
    "max_accuracy_drop": m["accuracy_drop"],
    "max_significant_classes": m["significant_classes"],
    "max_flip_rate": m["flip_rate"],
    "max_kl": m["kl"],
  }
  out += [
    f"{gate.removeprefix('max_')} {measured[gate]:.4g} > {bound:g}"
    for gate, bound in bounds.items()
    if measured[gate] > bound
  ]
  return out


def _choose_half(run_dir, member_variant, k, dataset, seed):
  """(images, labels, float32 top-1, float32 logits) of the choose half."""
  split = dataset.spec.eval_split
  ref = predictions.read(
    layout.predictions(
      run_dir, names.Variant(member_variant, layer_analysis.REFERENCE_FORMAT).name, k, split
    )
  )
  if "logits" not in ref:
    raise layer_analysis.LayerAnalysisError(
      f"{member_variant}/{k}: the float32 predictions have no logits; evaluate again"
    )
  labels = ref["labels"].astype(np.int64)
  choose, _ = halves.held_out_halves_by_id(ref["ids"], labels, seed)
  ids = ref["ids"].astype(np.int64)[choose]
  order = np.argsort(ids, kind="stable")
  fed = dataset.model_inputs(dataset.examples(split, ids[order]))
  images = np.empty_like(fed.images)
  images[order] = fed.images
  return images, labels[choose], ref["topk"][choose, 0], ref["logits"][choose]


def _candidates(model, rep_images, nodes):
  """Yields (name, bytes or the one-line reason there are none, ops kept in float) in the
  search's order (module docstring): `cle` cannot be made for a model that is not tf_keras
  (a Keras 3 reference), and the search goes on without it."""
  try:
    yield "cle", no_byte_repairs.convert(model, "cle", rep_images)[0], []
  except no_byte_repairs.RepairError as e:
    yield "cle", errors.one_line(e, 300), []
  quantizer = selective_quantizer.SelectiveQuantizer(model, rep_images)
  for n in range(1, min(len(nodes), MAX_FLOAT_OPS) + 1):
    yield f"float{n}", quantizer(nodes[:n]), list(nodes[:n])


def search(run_dir, variant, k, dataset, inputs, num_threads=1):
  """Searches, writes and returns the export JSON of `full_int8~auto` of member k.

  Args:
    inputs: its lineage inputs (`tf_forget.evaluate.repairs.repair_inputs`): "float_nodes" (the
    ranking's
      repairable ops, causal order first) and "search" (`settings`).

  Raises:
    layer_analysis.LayerAnalysisError, no_byte_repairs.RepairError, errors.Error.
  """
  mv, setting = variant.member_variant, inputs["search"]
  images, labels, ref_top1, ref_logits = _choose_half(run_dir, mv, k, dataset, setting["seed"])
  model, metadata = export_state.load_member(run_dir, mv, k)
  rep = export_state.representative_images(dataset)
  plain_path, _ = export_state.export_paths(run_dir, names.Variant(mv, names.REPAIRED_FORMAT), k)
  plain = fileio.read_bytes(plain_path)
  start, trials, chosen = time.time(), [], None

  def measure(name, data, nodes):
    runner = batched.BatchedRunner(data, num_threads=num_threads, runtime="builtin")
    m = measures(labels, ref_top1, ref_logits, runner.run(images), dataset.spec.num_classes)
    trials.append(
      {
        "candidate": name,
        "bytes": len(data),
        "size_vs_int8": len(data) / len(plain),
        "float_nodes": nodes,
        **m,
        "failed": failures(m, setting["gates"]),
      }
    )
    return trials[-1]

  measure("plain", plain, [])
  kept = {}
  for name, data, nodes in _candidates(model, rep.images, inputs["float_nodes"] or []):
    if isinstance(data, str):  # not made: why
      trials.append({"candidate": name, "float_nodes": nodes, "failed": [data]})
      continue
    if len(data) > setting["max_size"] * len(plain):
      trials.append(
        {
          "candidate": name,
          "bytes": len(data),
          "size_vs_int8": len(data) / len(plain),
          "float_nodes": nodes,
          "failed": [f"over the size budget ({setting['max_size']:g}x)"],
        }
      )
      break
    kept[name] = data
    if not measure(name, data, nodes)["failed"]:
      chosen = name
      break
  if chosen is None and kept:
    chosen = min(
      (t for t in trials if t["candidate"] in kept), key=lambda t: (t["broken"], t["bytes"])
    )["candidate"]
  if chosen is None:  # nothing within the budget: the int8 file itself, "no gain" in the report
    chosen, kept["plain"] = "plain", plain
  pick = next(t for t in trials if t["candidate"] == chosen)
  data = kept[chosen]
  meta = export.export_json(
    variant,
    k,
    data,
    flatbuffer.weight_stats(data),
    metadata,
    inputs["model"],
    {"repair": "auto", "chosen": chosen},
    time.time() - start,
    rep,
  )
  meta["repair"] = {
    "kind": "auto",
    "chosen": chosen,
    "float_nodes": pick["float_nodes"],
    "holds": not pick["failed"],
    "search": trials,
    "halves": {"seed": setting["seed"], "choose": int(len(labels)), "reported_on": REPORT_HALF},
    "analysis": os.path.relpath(layout.layers(run_dir, mv, k), run_dir),
  }
  meta["inputs"] = inputs
  return export.write_variant(run_dir, variant, k, data, meta)
