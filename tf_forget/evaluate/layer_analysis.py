"""Why a full int8 file (or a user's file) forgot.

For a member with a Keras model and a `full_int8` file (dense members, pruned members, the
user's Keras references), and for every `.tflite` file the user brings (`user_<NAME>`, dense
members), after the evaluation:

    <run>/layers/<member variant>/<k>/<format>.json                 `analyze` (`layers_json`)
    <run>/layers/<member variant>/<k>/<format>.model_explorer.json  node data, NMSE forgotten

A user's file has no float model to quantize again: it is compared tensor by tensor with the float32
file (`tf_forget.evaluate.tensor_match`: the accumulated error of the tensors the two graphs share,
ranked by where it grows); it gets no repair (that needs the float model).

`analyze` splits the evaluation split by the member's two `.tflite` files' stored predictions
(the float32 file is the reference, docs/spec.md §1.1's deployed float model):
  * forgotten: the examples whose top-1 differs between the two files (broken, fixed and
    changed flips, `tf_forget.stats.paired.flips`);
  * worst_class: the examples of the class whose recall fell most from float32 to full int8
    (empty when no class lost recall);
  * stable: the examples whose top-1 is the same, at most `STABLE_MAX` of them (evenly spaced
    in the split's order: deterministic).
and measures every layer's error on each subset with LiteRT's QuantizationDebugger
(`tf_forget.export.layer_error`: per layer, NumericVerify compares each int8 op with the float op
run on the same dequantized inputs, calibrated on the same representative data as the audited
file), ranked by their NMSE on the forgotten examples, with its excess over the stable ones
(`layer_error.rank_layers`). When nothing was forgotten the ranking is by NMSE on the stable
examples and says so (`basis` "all").

Then, for a full int8 file that forgot something significant (`paired.forgot_significantly`, the
rule that decides a repair: a handful of flips is noise an ablation cannot attribute, and costs two
conversions per op), the ranking is causal (`ranked_by` "ablation"). The per-channel activation
ranges of the plain file over the calibration images name the tensors where one channel dominates
(`tf_forget.evaluate.range_diagnosis`: `ranges`); the `NMSE_PICKS` ops of largest NMSE on the
forgotten examples and at most `RANGE_PICKS` ops that write or read such a tensor (a range fault,
which the NMSE cannot see; `tf_forget.evaluate.ablation_candidates`) are each quantized alone and
kept alone in float (`tf_forget.evaluate.causal_attribution`: broken examples recovered / caused,
KL) and ranked by that effect first, the others after them by NMSE (the NMSE rank kept as
`nmse_rank`); each ablated op gets the scores that picked it (`picked_by`) and a fault kind (its
own weights, its activation range, inherited). The repaired files are made from this ranking by
`tf_forget.evaluate.repairs`.

Lineage: the analysis records the sha256 of both `.tflite` files, the split's identity and
`STABLE_MAX`, and for full int8 the sha256 of model.keras and the representative data's key
(for a user's file, the comparison method). Anything changed is redone.
"""

import time

import numpy as np

from tf_forget.artifacts import errors
from tf_forget.artifacts import fileio
from tf_forget.artifacts import filesystem
from tf_forget.artifacts import hashing
from tf_forget.artifacts import layers_json
from tf_forget.artifacts import layout
from tf_forget.artifacts import lineage
from tf_forget.artifacts import names
from tf_forget.artifacts import predictions
from tf_forget.artifacts import tflite_json
from tf_forget.data import dataset_api
from tf_forget.data import registry as data_registry
from tf_forget.evaluate import ablation_candidates
from tf_forget.evaluate import batched
from tf_forget.evaluate import causal_attribution
from tf_forget.evaluate import tensor_match
from tf_forget.export import export_state
from tf_forget.export import layer_error
from tf_forget.export import model_explorer
from tf_forget.export import selective_quantizer
from tf_forget.stats import paired

STABLE_MAX = 1000
NMSE_PICKS = ablation_candidates.NMSE_PICKS  # ops ablated for their NMSE (two files each)
RANGE_PICKS = ablation_candidates.RANGE_PICKS  # ops ablated for the range diagnosis
ABLATION_FORGOTTEN = 1000  # forgotten examples the ablation runs on at most (evenly spaced)
ABLATION_STABLE = 250  # stable examples the ablation runs on (evenly spaced)
REFERENCE_FORMAT = names.DEFAULT_FORMAT
FORMAT = names.REPAIRED_FORMAT
TOOL = (
  "tf.lite.experimental.QuantizationDebugger: NumericVerify per layer (the int8 op vs the "
  "float op on the same dequantized inputs), one calibration for every subset"
)


class LayerAnalysisError(errors.Error):
  """A member whose layers cannot be analysed or repaired (one line)."""


def _export_meta(run_dir, member_variant, k, fmt):
  _, meta_path = export_state.export_paths(run_dir, names.Variant(member_variant, fmt), k)
  return tflite_json.read(meta_path)


def analysed_by_debugger(file_format):
  """Whether `file_format`'s analysis is per layer (QuantizationDebugger: tf_forget's full int8
  file, made from the member's model) rather than tensor by tensor (a user's file)."""
  if file_format == FORMAT:
    return True
  if names.is_user_format(file_format):
    return False
  raise LayerAnalysisError(
    f"no layer analysis of format {file_format!r} ({FORMAT} or a user's user_<NAME> file)"
  )


def applies(run_dir, member_variant, k, file_format=FORMAT):
  """Whether member k has what an analysis of its `file_format` file needs: the file and the
  float32 file (`REFERENCE_FORMAT`) exported, and for `full_int8` the member's model.keras."""
  paths = [
    export_state.export_paths(run_dir, names.Variant(member_variant, f), k)[1]
    for f in (file_format, REFERENCE_FORMAT)
  ]
  if analysed_by_debugger(file_format):
    paths[1] = layout.member_model(run_dir, member_variant, k)
  return all(filesystem.exists(p) for p in paths)


def expected_inputs(run_dir, member_variant, k, dataset, file_format=FORMAT):
  """The lineage `inputs` an analysis of member k's `file_format` file would record now."""
  split = dataset.spec.eval_split
  inputs = {
    file_format: _export_meta(run_dir, member_variant, k, file_format)["sha256"],
    REFERENCE_FORMAT: _export_meta(run_dir, member_variant, k, REFERENCE_FORMAT)["sha256"],
    "split": predictions.split_identity(dataset.spec.name, dataset.spec.options, split),
    "stable_max": STABLE_MAX,
  }
  if analysed_by_debugger(file_format):
    inputs["model"] = hashing.path_sha256_or_none(layout.member_model(run_dir, member_variant, k))
    inputs["representative"] = export_state.representative_images(dataset).key
    inputs["ablation"] = ablation_candidates.RULE
  else:
    inputs["method"] = tensor_match.METHOD
  return inputs


def status(run_dir, member_variant, k, dataset, file_format=FORMAT):
  """`lineage.Status` of member k's analysis of its `file_format` file."""
  path = layout.layers(run_dir, member_variant, k, file_format)
  if not filesystem.exists(path):
    return lineage.MISSING
  return lineage.status(
    lambda: layers_json.read(path),
    expected_inputs(run_dir, member_variant, k, dataset, file_format),
    "analysed",
  )


def read_analysis(run_dir, member_variant, k, file_format=FORMAT):
  """Member k's analysis of its `file_format` file (`layers_json`).

  Raises:
    errors.Error: missing or not an analysis.
  """
  return layers_json.read(layers_json.path(run_dir, member_variant, k, file_format))


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
  return (
    {"forgotten": forgotten, "worst_class": worst, "stable": stable},
    {
      "forgotten": {
        k: int(v.sum())
        for k, v in (("broken", flips.broken), ("fixed", flips.fixed), ("changed", flips.changed))
      },
      "worst_class": worst_class,
    },
  )


def _images(dataset, split, ids, masks):
  """{subset: the model inputs of its examples, in the order of `ids[mask]`}; the subsets
  overlap, and each example is decoded once (`Dataset.examples`)."""
  wanted = np.unique(
    np.concatenate([ids[mask] for mask in masks.values()] + [np.zeros(0, np.int64)]).astype(
      np.int64
    )
  )
  try:
    fed = dataset.model_inputs(dataset.examples(split, wanted))
  except dataset_api.DataError as e:
    raise LayerAnalysisError(f"split {split!r} lacks some analysed example ids: {e}") from e
  empty = np.zeros((0,) + tuple(dataset.spec.image_shape), np.uint8)
  return {
    name: fed.images[np.searchsorted(wanted, ids[mask])] if mask.any() else empty
    for name, mask in masks.items()
  }


def _debugger_rows(run_dir, member_variant, k, dataset, images):
  """(rows, extra doc fields, (its `selective_quantizer.SelectiveQuantizer`, representative images)) of
  the per-layer analysis of the full int8 file (one calibration for it and the ablations)."""
  model, _ = export_state.load_member(run_dir, member_variant, k)
  rep = export_state.representative_images(dataset)
  quantizer = selective_quantizer.SelectiveQuantizer(model, rep.images)
  return (
    layer_error.layer_errors(model, rep.images, images, quantizer=quantizer),
    {"tool": TOOL},
    (quantizer, rep.images),
  )


def _why(run_dir, member_variant, k, made, rows, ranking, images, labels, num_threads):
  """(the ranking by causal effect, extra doc fields): `causal_attribution.attribute` on at
  most `ABLATION_FORGOTTEN` forgotten examples and `ABLATION_STABLE` stable ones (each evenly
  spaced) — the ops of largest error on the forgotten examples and the ops the range
  diagnosis of the plain file names, ablated — and the activation ranges of the plain file
  over the calibration images (`range_diagnosis`)."""
  quantizer, rep_images = made
  reference = fileio.read_bytes(
    export_state.export_paths(run_dir, names.Variant(member_variant, REFERENCE_FORMAT), k)[0]
  )
  runner = batched.BatchedRunner(reference, num_threads=num_threads, runtime="builtin")
  subsets = {}
  for name, count in (("forgotten", ABLATION_FORGOTTEN), ("stable", ABLATION_STABLE)):
    chosen = slice(None, None, max(1, -(-len(images[name]) // count)))
    pick = images[name][chosen]
    subsets[name] = (
      pick,
      labels[name][chosen],
      runner.run(pick) if len(pick) else np.zeros((0, 1), np.float32),
    )
  found = causal_attribution.attribute(
    quantizer, rows, ranking, subsets, rep_images, num_threads, NMSE_PICKS, RANGE_PICKS
  )
  picked = [c["picked_by"] for c in found["candidates"]]
  return found["ranking"], {
    "ranked_by": "ablation",
    "ablation": {
      "plain": found["ablation"]["plain"],
      "ablated": len(found["ablation"]["ops"]),
      "picked_nmse": sum(ablation_candidates.NMSE in p for p in picked),
      "picked_range": sum(ablation_candidates.RANGE in p for p in picked),
      "forgotten": int(len(subsets["forgotten"][0])),
      "stable": int(len(subsets["stable"][0])),
    },
    "ranges": found["ranges"],
  }


def _tensor_rows(run_dir, member_variant, k, file_format, images, num_threads):
  """(rows, extra doc fields) of the tensor-by-tensor comparison of a user's file; files that
  cannot be compared (`tensor_match.TensorMatchError`) give no rows and the reason ("error"),
  so that the audit of the file goes on."""
  data = [
    fileio.read_bytes(export_state.export_paths(run_dir, names.Variant(member_variant, f), k)[0])
    for f in (REFERENCE_FORMAT, file_format)
  ]
  try:
    rows, facts = tensor_match.tensor_errors(data[0], data[1], images, num_threads=num_threads)
  except tensor_match.TensorMatchError as e:  # the audit goes on; the report says why
    return [], {
      "tool": tensor_match.METHOD,
      "error": errors.one_line(e, 300),
      "matched": {"name": 0, "position": 0},
      "unmatched": None,
    }
  return rows, {
    "tool": tensor_match.METHOD,
    "matched": facts["matched"],
    "unmatched": facts["unmatched"],
  }


def _rank(rows, counts, by_debugger):
  """(basis, ranking): by the error on the forgotten examples, or, nothing forgotten, on the
  stable ones (every example analysed); per layer by NMSE, tensor by tensor by its growth."""
  rank = layer_error.rank_layers if by_debugger else tensor_match.rank_growth
  if counts["forgotten"]:
    return "forgotten", rank(rows, "forgotten", "stable")
  return "all", rank(rows, "stable", "stable")


def _subset(count, ids, paths):
  """A subset's `count`, its first ids and, when the data set names its examples (a folder's
  image paths, `dataset_api.example_paths`), their `paths`."""
  out = {"count": int(count), "ids": [int(i) for i in ids]}
  if paths is not None:
    out["paths"] = [paths.get(int(i), "") for i in ids]
  return out


def analyze(run_dir, member_variant, k, dataset, file_format=FORMAT, log=None, num_threads=1):
  """Writes member k's analysis of its `file_format` file (and its Model Explorer node data)
  unless current.

  Returns:
    The analysis dict (`layers_json`), read back when it was current.

  Raises:
    LayerAnalysisError, errors.Error: a missing export or predictions file, unreadable data.
  """
  by_debugger = analysed_by_debugger(file_format)
  path = layout.layers(run_dir, member_variant, k, file_format)
  state = status(run_dir, member_variant, k, dataset, file_format)
  if state:
    return layers_json.read(path)
  if log and state.reason != "missing":
    log(f"redo layers {member_variant}/{k} {file_format}: {state.reason}")
  inputs = expected_inputs(run_dir, member_variant, k, dataset, file_format)
  split = dataset.spec.eval_split
  ids, labels, ref = _top1(run_dir, member_variant, k, REFERENCE_FORMAT, split)
  ids_c, _, cand = _top1(run_dir, member_variant, k, file_format, split)
  if not np.array_equal(ids, ids_c):
    raise LayerAnalysisError(
      f"{member_variant}/{k}: the float32 and {file_format} predictions "
      "are not on the same examples"
    )
  masks, facts = subsets(labels, ref, cand, dataset.spec.num_classes)
  start = time.time()
  images = _images(dataset, split, ids, masks)
  if by_debugger:
    rows, extra, made = _debugger_rows(run_dir, member_variant, k, dataset, images)
  else:
    rows, extra = _tensor_rows(run_dir, member_variant, k, file_format, images, num_threads)
  counts = {name: int(mask.sum()) for name, mask in masks.items()}
  basis, ranking = _rank(rows, counts, by_debugger)
  extra["ranked_by"] = "error statistic"
  if (
    by_debugger
    and paired.forgot_significantly(facts["forgotten"]["broken"], facts["forgotten"]["fixed"])[0]
  ):
    ranking, why = _why(
      run_dir,
      member_variant,
      k,
      made,
      rows,
      ranking,
      images,
      {name: labels[mask] for name, mask in masks.items()},
      num_threads,
    )
    extra.update(why)
  paths = dataset_api.example_paths(dataset, split)
  doc = {
    "member_variant": member_variant,
    "k": int(k),
    "format": file_format,
    "reference": REFERENCE_FORMAT,
    "split": split,
    **extra,
    "basis": basis,
    "subsets": {
      name: _subset(counts[name], ids[masks[name]][:STABLE_MAX], paths) for name in masks
    },
    "flips": facts["forgotten"],
    "worst_class": facts["worst_class"],
    "rows": rows,
    "ranking": ranking,
    "seconds": round(time.time() - start, 3),
    "inputs": inputs,
  }
  subset = "forgotten" if basis == "forgotten" else "stable"
  model_explorer.write_model_explorer_json(
    layout.model_explorer(run_dir, member_variant, k, file_format),
    model_explorer.model_explorer_node_data(rows, "nmse", subset),
  )
  return layers_json.write(path, doc)


def analyze_task(
  run_dir, member_variant, k, dataset, dataset_options, file_format=FORMAT, num_threads=1
):
  """`analyze` as an executor task (JSON arguments)."""
  data = data_registry.get(dataset, **dict(dataset_options or {}))
  doc = analyze(run_dir, member_variant, int(k), data, file_format, num_threads=num_threads)
  return {
    "member": f"{member_variant}/{int(k)}",
    "format": file_format,
    "basis": doc["basis"],
    "forgotten": doc["subsets"]["forgotten"]["count"],
  }


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
