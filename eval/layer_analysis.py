"""Why a full int8 file (or a user's file) forgot, and a repaired file (issue #29).

For a member with a Keras model and a `full_int8` file (dense members, pruned members, the
user's Keras references), and for every `.tflite` file the user brings (`user_<NAME>`, dense
members), after the evaluation:

    <run>/layers/<member variant>/<k>/<format>.json                 `analyze` (SCHEMA)
    <run>/layers/<member variant>/<k>/<format>.model_explorer.json  node data, NMSE forgotten
    <run>/tflite/<member variant>/<k>/full_int8~float<N>.{tflite,json}  `repair`

A user's file has no float model to quantize again: it is compared tensor by tensor with the
float32 file (`eval.tensor_match`: the accumulated error of the tensors the two graphs share,
ranked by where it grows); it gets no repair (that needs the float model).

`analyze` splits the evaluation split by the member's two `.tflite` files' stored predictions
(the float32 file is the reference, SPEC §1.1's deployed float model):
  * forgotten: the examples whose top-1 differs between the two files (broken, fixed and
    changed flips, `tf_forget.stats.paired.flips`);
  * worst_class: the examples of the class whose recall fell most from float32 to full int8
    (empty when no class lost recall);
  * stable: the examples whose top-1 is the same, at most `STABLE_MAX` of them (evenly spaced
    in the split's order: deterministic).
and measures every layer's error on each subset with LiteRT's QuantizationDebugger
(`tflite_export.layer_error`: per layer, NumericVerify compares each int8 op with the float op
run on the same dequantized inputs, calibrated on the same representative data as the audited
file), ranked by their NMSE on the forgotten examples, with its excess over the stable ones
(`layer_error.rank_layers`). When nothing was forgotten the ranking is by NMSE on the stable
examples and says so (`basis` "all").

`repair` converts `full_int8~float<N>` (`names.repair_format`): the full int8 quantization with
the N top-ranked layers kept in float (`layer_error.selective_quantize`), written as an export
(docs/artifacts/tflite.md) that the evaluation, report and bundle treat like any file.

Lineage: the analysis records the sha256 of both `.tflite` files, the split's identity and
`STABLE_MAX`, and for full int8 the sha256 of model.keras and the representative data's key
(for a user's file, the comparison method); the repaired file the model, the
representative data and the layers it kept in float (`repair_inputs`). Anything changed is
redone.
"""

import os
import time

import numpy as np

from eval import tensor_match
from tf_forget.artifacts import errors
from tf_forget.artifacts import fileio
from tf_forget.artifacts import hashing
from tf_forget.artifacts import layout
from tf_forget.artifacts import lineage
from tf_forget.artifacts import names
from tf_forget.artifacts import predictions
from tf_forget.data import base as data_base
from tf_forget.data import registry as data_registry
from tf_forget.report import collect as report_collect
from tf_forget.stats import paired
from tflite_export import export
from tflite_export import export_state
from tflite_export import flatbuffer
from tflite_export import layer_error
from tflite_export import model_explorer

SCHEMA = "tf_forget.layers/1"
STABLE_MAX = 1000
REFERENCE_FORMAT = names.DEFAULT_FORMAT
FORMAT = names.REPAIRED_FORMAT
TOOL = ("tf.lite.experimental.QuantizationDebugger: NumericVerify per layer (the int8 op vs the "
        "float op on the same dequantized inputs), one calibration for every subset")


class LayerAnalysisError(errors.Error):
  """A member whose layers cannot be analysed or repaired (one line)."""


def _export_meta(run_dir, member_variant, k, fmt):
  _, meta_path = export_state.export_paths(run_dir, names.Variant(member_variant, fmt), k)
  return export_state.read_json(meta_path)


def analysed_by_debugger(file_format):
  """Whether `file_format`'s analysis is per layer (QuantizationDebugger: tf_forget's full int8
  file, made from the member's model) rather than tensor by tensor (a user's file)."""
  if file_format == FORMAT:
    return True
  if names.is_user_format(file_format):
    return False
  raise LayerAnalysisError(f"no layer analysis of format {file_format!r} "
                           f"({FORMAT} or a user's user_<NAME> file)")


def applies(run_dir, member_variant, k, file_format=FORMAT):
  """Whether member k has what an analysis of its `file_format` file needs: the file and the
  float32 file (`REFERENCE_FORMAT`) exported, and for `full_int8` the member's model.keras."""
  paths = [export_state.export_paths(run_dir, names.Variant(member_variant, f), k)[1]
           for f in (file_format, REFERENCE_FORMAT)]
  if analysed_by_debugger(file_format):
    paths[1] = layout.member_model(run_dir, member_variant, k)
  return all(fileio.exists(p) for p in paths)


def expected_inputs(run_dir, member_variant, k, dataset, file_format=FORMAT):
  """The lineage `inputs` an analysis of member k's `file_format` file would record now."""
  split = dataset.spec.eval_split
  inputs = {file_format: _export_meta(run_dir, member_variant, k, file_format)["sha256"],
            REFERENCE_FORMAT: _export_meta(run_dir, member_variant, k, REFERENCE_FORMAT)["sha256"],
            "split": predictions.split_identity(dataset.spec.name, dataset.spec.options, split),
            "stable_max": STABLE_MAX}
  if analysed_by_debugger(file_format):
    inputs["model"] = hashing.path_sha256_or_none(layout.member_model(run_dir, member_variant,
                                                                      k))
    inputs["representative"] = export_state.representative_images(dataset).key
  else:
    inputs["method"] = tensor_match.METHOD
  return inputs


def status(run_dir, member_variant, k, dataset, file_format=FORMAT):
  """`lineage.Status` of member k's analysis of its `file_format` file."""
  path = layout.layers(run_dir, member_variant, k, file_format)
  if not fileio.exists(path):
    return lineage.MISSING
  return lineage.status(lambda: _read(path),
                        expected_inputs(run_dir, member_variant, k, dataset, file_format),
                        "analysed")


def _read(path):
  doc = fileio.read_json(path, "layer analysis")
  if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
    raise errors.ReadError(f"{path} is not a {SCHEMA} file")
  return doc


def _top1(run_dir, member_variant, k, fmt, split):
  variant = names.Variant(member_variant, fmt).name
  data = predictions.read(layout.predictions(run_dir, variant, k, split))
  return data["ids"].astype(np.int64), data["labels"].astype(np.int64), data["topk"][:, 0]


def subsets(labels, ref, cand, num_classes):
  """{name: bool mask [N]} and their definitions (see the module docstring)."""
  flips = paired.flips(labels, ref, cand)
  forgotten = flips.broken | flips.fixed | flips.changed
  stable_all = np.flatnonzero(~forgotten)
  step = max(1, int(np.ceil(len(stable_all) / STABLE_MAX)))
  stable = np.zeros_like(forgotten)
  stable[stable_all[::step][:STABLE_MAX]] = True
  worst, worst_class = np.zeros_like(forgotten), None
  change = paired.per_class_recall_change(labels, ref, cand, num_classes)["change"]
  drops = np.where(np.isfinite(change), change, 0.0)
  if drops.size and drops.min() < 0:
    worst_class = int(np.argmin(drops))
    worst = labels == worst_class
    keep = np.flatnonzero(worst)[STABLE_MAX:]
    worst[keep] = False
  return ({"forgotten": forgotten, "worst_class": worst, "stable": stable},
          {"forgotten": {k: int(v.sum()) for k, v in
                         (("broken", flips.broken), ("fixed", flips.fixed),
                          ("changed", flips.changed))},
           "worst_class": worst_class})


def _images(dataset, split, ids, masks):
  """{subset: the model inputs of its examples, in the order of `ids[mask]`}; the subsets
  overlap, and each example is decoded once (`Dataset.examples`)."""
  wanted = np.unique(np.concatenate([ids[mask] for mask in masks.values()] +
                                    [np.zeros(0, np.int64)]).astype(np.int64))
  try:
    fed = dataset.model_inputs(dataset.examples(split, wanted))
  except data_base.DataError as e:
    raise LayerAnalysisError(f"split {split!r} lacks some analysed example ids: {e}") from e
  empty = np.zeros((0,) + tuple(dataset.spec.image_shape), np.uint8)
  return {name: fed.images[np.searchsorted(wanted, ids[mask])] if mask.any() else empty
          for name, mask in masks.items()}


def _debugger_rows(run_dir, member_variant, k, dataset, images):
  """(rows, extra doc fields) of the per-layer analysis of the full int8 file."""
  model, _ = export_state.load_member(run_dir, member_variant, k)
  rep = export_state.representative_images(dataset)
  return layer_error.layer_errors(model, rep.images, images), {"tool": TOOL}


def _tensor_rows(run_dir, member_variant, k, file_format, images, num_threads):
  """(rows, extra doc fields) of the tensor-by-tensor comparison of a user's file; files that
  cannot be compared (`tensor_match.TensorMatchError`) give no rows and the reason ("error"),
  so that the audit of the file goes on."""
  data = [fileio.read_bytes(export_state.export_paths(
      run_dir, names.Variant(member_variant, f), k)[0]) for f in (REFERENCE_FORMAT, file_format)]
  try:
    rows, facts = tensor_match.tensor_errors(data[0], data[1], images, num_threads=num_threads)
  except tensor_match.TensorMatchError as e:  # the audit goes on; the report says why
    return [], {"tool": tensor_match.METHOD, "error": errors.one_line(e, 300),
                "matched": {"name": 0, "position": 0}, "unmatched": None}
  return rows, {"tool": tensor_match.METHOD, "matched": facts["matched"],
                "unmatched": facts["unmatched"]}


def _rank(rows, counts, by_debugger):
  """(basis, ranking): by the error on the forgotten examples, or, nothing forgotten, on the
  stable ones (every example analysed); per layer by NMSE, tensor by tensor by its growth."""
  rank = layer_error.rank_layers if by_debugger else tensor_match.rank_growth
  if counts["forgotten"]:
    return "forgotten", rank(rows, "forgotten", "stable")
  return "all", rank(rows, "stable", "stable")


def _subset(count, ids, paths):
  """A subset's `count`, its first ids and, when the data set names its examples (a folder's
  image paths, `collect.dataset_paths`), their `paths` (issue #36)."""
  out = {"count": int(count), "ids": [int(i) for i in ids]}
  if paths is not None:
    out["paths"] = [paths.get(int(i), "") for i in ids]
  return out


def analyze(run_dir, member_variant, k, dataset, file_format=FORMAT, log=None, num_threads=1):
  """Writes member k's analysis of its `file_format` file (and its Model Explorer node data)
  unless current.

  Returns:
    The analysis dict (`SCHEMA`), read back when it was current.

  Raises:
    LayerAnalysisError, errors.Error: a missing export or predictions file, unreadable data.
  """
  by_debugger = analysed_by_debugger(file_format)
  path = layout.layers(run_dir, member_variant, k, file_format)
  state = status(run_dir, member_variant, k, dataset, file_format)
  if state:
    return _read(path)
  if log and state.reason != "missing":
    log(f"redo layers {member_variant}/{k} {file_format}: {state.reason}")
  inputs = expected_inputs(run_dir, member_variant, k, dataset, file_format)
  split = dataset.spec.eval_split
  ids, labels, ref = _top1(run_dir, member_variant, k, REFERENCE_FORMAT, split)
  ids_c, _, cand = _top1(run_dir, member_variant, k, file_format, split)
  if not np.array_equal(ids, ids_c):
    raise LayerAnalysisError(f"{member_variant}/{k}: the float32 and {file_format} predictions "
                             "are not on the same examples")
  masks, facts = subsets(labels, ref, cand, dataset.spec.num_classes)
  start = time.time()
  images = _images(dataset, split, ids, masks)
  if by_debugger:
    rows, extra = _debugger_rows(run_dir, member_variant, k, dataset, images)
  else:
    rows, extra = _tensor_rows(run_dir, member_variant, k, file_format, images, num_threads)
  counts = {name: int(mask.sum()) for name, mask in masks.items()}
  basis, ranking = _rank(rows, counts, by_debugger)
  paths = report_collect.dataset_paths(dataset, split)
  doc = {"schema": SCHEMA, "member_variant": member_variant, "k": int(k),
         "format": file_format, "reference": REFERENCE_FORMAT, "split": split, **extra,
         "basis": basis,
         "subsets": {name: _subset(counts[name], ids[masks[name]][:STABLE_MAX], paths)
                     for name in masks},
         "flips": facts["forgotten"], "worst_class": facts["worst_class"],
         "rows": rows, "ranking": ranking, "seconds": round(time.time() - start, 3),
         "inputs": inputs}
  subset = "forgotten" if basis == "forgotten" else "stable"
  model_explorer.write_model_explorer_json(
      layout.model_explorer(run_dir, member_variant, k, file_format),
      model_explorer.model_explorer_node_data(rows, "nmse", subset))
  fileio.write_json(path, doc)
  return doc


def analyze_task(run_dir, member_variant, k, dataset, dataset_options, file_format=FORMAT,
                 num_threads=1):
  """`analyze` as an executor task (JSON arguments)."""
  data = data_registry.get(dataset, **dict(dataset_options or {}))
  doc = analyze(run_dir, member_variant, int(k), data, file_format, num_threads=num_threads)
  return {"member": f"{member_variant}/{int(k)}", "format": file_format,
          "basis": doc["basis"], "forgotten": doc["subsets"]["forgotten"]["count"]}


def repair_needed(run_dir, member_variant, k):
  """(whether member k's full int8 file is worth repairing, the line that says why not).

  Only a file that forgot something significant is repaired (issue #36;
  `paired.forgot_significantly`: more than a few broken examples, exact McNemar of broken vs
  fixed significant): repairing a file that forgot nothing costs size and buys nothing. An
  analysis that cannot be read counts as needed (`repair` then says why).
  """
  try:
    doc = _read(layout.layers(run_dir, member_variant, k))
  except errors.Error:
    return True, ""
  flips = doc.get("flips") or {}
  needed, p = paired.forgot_significantly(flips.get("broken", 0), flips.get("fixed", 0))
  return needed, ("" if needed else f"no repair of {member_variant}/{k} {FORMAT}: it forgot "
                  f"nothing significant ({no_repair_facts(flips, p)})")


def no_repair_facts(flips, p):
  """'7 broken, 5 fixed; McNemar p = 0.77' (the numbers behind `repair_needed`)."""
  return (f"{flips.get('broken', 0)} broken, {flips.get('fixed', 0)} fixed; exact McNemar "
          f"p = {p:.2g}")


# A layer whose int8 twin errs less than this (NMSE) is lossless (RESHAPE, pooling: float
# rounding only); keeping it in float cannot repair anything.
LOSSLESS_NMSE = 1e-9


def repairable(row):
  """Whether keeping a ranked layer in float can change anything: it has a name the quantizer
  accepts and its int8 twin is not lossless."""
  nmse = max(v for v in (row["nmse_forgotten"], row["nmse_stable"], 0.0) if v is not None)
  return row["tensor_name"] is not None and nmse > LOSSLESS_NMSE


def float_nodes(doc, layers):
  """The `denylisted_nodes` names of the `layers` top-ranked repairable layers (`repairable`)."""
  return [r["tensor_name"] for r in doc["ranking"] if repairable(r)][:layers]


def repair_inputs(run_dir, variant, k, dataset):
  """The lineage `inputs` of the repaired file `variant` of member k now: the model, the
  representative data and the layers kept in float (from the current analysis, None without
  one), so that an analysis made again with the same ranking leaves the file current."""
  mv = variant.member_variant
  try:
    nodes = float_nodes(_read(layout.layers(run_dir, mv, k)), names.repair_layers(variant.format))
  except errors.Error:
    nodes = None
  return {"model": hashing.path_sha256_or_none(layout.member_model(run_dir, mv, k)),
          "representative": export_state.representative_images(dataset).key,
          "float_nodes": nodes}


def repair_status(run_dir, variant, k, dataset):
  """`lineage.Status` of the repaired export `variant` of member k."""
  path, meta_path = export_state.export_paths(run_dir, variant, k)
  if not fileio.exists(meta_path):
    return lineage.MISSING
  return lineage.status(
      lambda: export_state.read_json(meta_path),
      repair_inputs(run_dir, variant, k, dataset), "repaired",
      extra=lambda meta: lineage.file_reason(path, meta.get("sha256"), ".tflite", "repaired"))


def repair(run_dir, variant, k, dataset):
  """Converts the repaired file `variant` (format `full_int8~float<N>`) of member k.

  Returns:
    Its export JSON dict.

  Raises:
    LayerAnalysisError: no current analysis, or not a repaired format.
  """
  layers = names.repair_layers(variant.format)
  if layers is None:
    raise LayerAnalysisError(f"{variant.name} is not a repaired format (full_int8~float<N>)")
  mv = variant.member_variant
  if not status(run_dir, mv, k, dataset):
    raise LayerAnalysisError(f"{mv}/{k}: its layer analysis is not current; run it first")
  doc = _read(layout.layers(run_dir, mv, k))
  nodes = float_nodes(doc, layers)
  inputs = repair_inputs(run_dir, variant, k, dataset)
  model, metadata = export_state.load_member(run_dir, mv, k)
  rep = export_state.representative_images(dataset)
  start = time.time()
  data = layer_error.selective_quantize(model, rep.images, nodes)
  meta = export.export_json(variant, k, data, flatbuffer.weight_stats(data), metadata,
                            inputs["model"], {"float_nodes": nodes}, time.time() - start, rep)
  meta["converter"]["api"] = ("tf.lite.experimental.QuantizationDebugger("
                              "denylisted_nodes).get_nondebug_quantized_model")
  meta["repair"] = {"layers": layers, "kept": len(nodes), "float_nodes": nodes,
                    "ops": [r["op_name"] for r in doc["ranking"]
                            if r["tensor_name"] in nodes],
                    "basis": doc["basis"],
                    "analysis": os.path.relpath(layout.layers(run_dir, mv, k), run_dir)}
  meta["inputs"] = inputs
  path, meta_path = export_state.export_paths(run_dir, variant, k)
  fileio.makedirs(os.path.dirname(path))
  export.write_export(path, meta_path, data, meta)
  return meta


def repair_task(run_dir, member_variant, k, file_format, dataset, dataset_options):
  """`repair` as an executor task (JSON arguments)."""
  data = data_registry.get(dataset, **dict(dataset_options or {}))
  variant = names.Variant(member_variant, file_format)
  meta = repair(run_dir, variant, int(k), data)
  return {"variant": variant.name, "k": int(k), "sha256": meta["sha256"]}
