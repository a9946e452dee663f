"""Repaired files of a forgetting full int8 file: which to make, their
lineage, and the one entry point that makes any of them.

`repair` makes `full_int8~<repair>` of member k (`names.repair_format`):
  * `float<N>`: the full int8 quantization with the N top-ranked ops of the current layer
    analysis (`tf_forget.evaluate.layer_analysis`: causal order first) kept in float
    (`selective_quantizer.SelectiveQuantizer`);
  * `cle`, `int16x8`: `tf_forget.evaluate.no_byte_repairs` (no analysis needed);
  * `auto`: `tf_forget.evaluate.repair_search` (equalization, then ops in float in causal order,
    chosen on one half of the test examples).
Each is written as an export (docs/artifacts/tflite.md) that the evaluation, report and bundle
treat like any file. Only a full int8 file that forgot something significant is repaired
(`repair_needed`).

Lineage (`repair_inputs`): the member's model, the representative data, the ops kept in float
(from the current analysis) and, for `auto`, the search's settings
(`repair_search.settings`). Anything changed is redone.
"""

import os
import time

from tf_forget.artifacts import errors
from tf_forget.artifacts import filesystem
from tf_forget.artifacts import hashing
from tf_forget.artifacts import layout
from tf_forget.artifacts import lineage
from tf_forget.artifacts import names
from tf_forget.artifacts import tflite_json
from tf_forget.data import registry as data_registry
from tf_forget.evaluate import layer_analysis
from tf_forget.evaluate import no_byte_repairs
from tf_forget.evaluate import repair_search
from tf_forget.export import export
from tf_forget.export import export_state
from tf_forget.export import flatbuffer
from tf_forget.export import selective_quantizer
from tf_forget.stats import paired


def repair_needed(run_dir, member_variant, k):
  """(whether member k's full int8 file is worth repairing, the line that says why not).

  Only a file that forgot something significant is repaired (`paired.forgot_significantly`: more
  than a few broken examples, exact McNemar of broken vs fixed significant): repairing a file that
  forgot nothing costs size and buys nothing. An analysis that cannot be read counts as needed
  (`repair` then says why).
  """
  try:
    doc = layer_analysis.read_analysis(run_dir, member_variant, k)
  except errors.Error:
    return True, ""
  flips = doc.get("flips") or {}
  needed, p = paired.forgot_significantly(flips.get("broken", 0), flips.get("fixed", 0))
  return needed, (
    ""
    if needed
    else f"no repair of {member_variant}/{k} "
    f"{layer_analysis.FORMAT}: it forgot nothing significant "
    f"({no_repair_facts(flips, p)})"
  )


def no_repair_facts(flips, p):
  """'7 broken, 5 fixed; McNemar p = 0.77' (the numbers behind `repair_needed`)."""
  return (
    f"{flips.get('broken', 0)} broken, {flips.get('fixed', 0)} fixed; exact McNemar p = {p:.2g}"
  )


def repair_inputs(run_dir, variant, k, dataset, search=None):
  """The lineage `inputs` of the repaired file `variant` of member k now: the model, the
  representative data, the ops it may keep in float (from the current analysis, None without
  one: an analysis made again with the same ranking leaves the file current) and, for
  `auto`, `search` (`repair_search.settings`) and the float32 predictions it chooses on."""
  mv, kind = variant.member_variant, names.repair_kind(variant.format)
  nodes = None
  if kind in ("float", "auto"):
    try:
      nodes = layer_analysis.float_nodes(
        layer_analysis.read_analysis(run_dir, mv, k),
        names.repair_layers(variant.format) or repair_search.MAX_FLOAT_OPS,
      )
    except errors.Error:
      nodes = None
  out = {
    "model": hashing.path_sha256_or_none(layout.member_model(run_dir, mv, k)),
    "representative": export_state.representative_images(dataset).key,
    "float_nodes": nodes,
  }
  if kind == "auto":
    out["search"] = search
    out["analysis"] = hashing.path_sha256_or_none(layout.layers(run_dir, mv, k))
  return out


def repair_status(run_dir, variant, k, dataset, search=None):
  """`lineage.Status` of the repaired export `variant` of member k (`search`: as for
  `repair_inputs`)."""
  path, meta_path = export_state.export_paths(run_dir, variant, k)
  if not filesystem.exists(meta_path):
    return lineage.MISSING
  return lineage.status(
    lambda: tflite_json.read(meta_path),
    repair_inputs(run_dir, variant, k, dataset, search),
    "repaired",
    extra=lambda meta: lineage.file_reason(path, meta.get("sha256"), ".tflite", "repaired"),
  )


def repair(run_dir, variant, k, dataset, search=None, num_threads=1):
  """Makes the repaired file `variant` (format `full_int8~<repair>`) of member k.

  Args:
    search: for `auto`, `repair_search.settings`.
    num_threads: interpreter threads of the search.

  Returns:
    Its export JSON dict.

  Raises:
    layer_analysis.LayerAnalysisError: no current analysis, or not a repaired format.
  """
  kind = names.repair_kind(variant.format)
  if kind is None:
    raise layer_analysis.LayerAnalysisError(
      f"{variant.name} is not a repaired format (full_int8~<repair>, <repair>: "
      f"{names.REPAIR_NAMES})"
    )
  inputs = repair_inputs(run_dir, variant, k, dataset, search)
  if kind in names.NO_BYTE_REPAIRS:
    return no_byte_repairs.make(run_dir, variant, k, dataset, inputs)
  layers = names.repair_layers(variant.format)
  mv = variant.member_variant
  if not layer_analysis.status(run_dir, mv, k, dataset):
    raise layer_analysis.LayerAnalysisError(
      f"{mv}/{k}: its layer analysis is not current; run it first"
    )
  if kind == "auto":
    if search is None:
      raise layer_analysis.LayerAnalysisError(f"{variant.name}: no search settings")
    return repair_search.search(run_dir, variant, k, dataset, inputs, num_threads)
  doc = layer_analysis.read_analysis(run_dir, mv, k)
  nodes = layer_analysis.float_nodes(doc, layers)
  model, metadata = export_state.load_member(run_dir, mv, k)
  rep = export_state.representative_images(dataset)
  start = time.time()
  data = selective_quantizer.SelectiveQuantizer(model, rep.images)(nodes)
  meta = export.export_json(
    variant,
    k,
    data,
    flatbuffer.weight_stats(data),
    metadata,
    inputs["model"],
    {"float_nodes": nodes},
    time.time() - start,
    rep,
  )
  meta["converter"]["api"] = (
    "tf.lite.experimental.QuantizationDebugger(denylisted_nodes).get_nondebug_quantized_model"
  )
  meta["repair"] = {
    "layers": layers,
    "kept": len(nodes),
    "float_nodes": nodes,
    "ops": [r["op_name"] for r in doc["ranking"] if r["tensor_name"] in nodes],
    "basis": doc["basis"],
    "analysis": os.path.relpath(layout.layers(run_dir, mv, k), run_dir),
  }
  meta["inputs"] = inputs
  return export.write_variant(run_dir, variant, k, data, meta)


def repair_task(
  run_dir, member_variant, k, file_format, dataset, dataset_options, search=None, num_threads=1
):
  """`repair` as an executor task (JSON arguments)."""
  data = data_registry.get(dataset, **dict(dataset_options or {}))
  variant = names.Variant(member_variant, file_format)
  meta = repair(run_dir, variant, int(k), data, search, num_threads)
  return {"variant": variant.name, "k": int(k), "sha256": meta["sha256"]}
