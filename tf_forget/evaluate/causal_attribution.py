"""Which quantized op made the int8 file forget, measured end to end.

An error statistic per layer (`tf_forget.export.layer_error`, `tf_forget.evaluate.tensor_match`)
says where the numbers differ; it does not say which op's quantization broke the examples the file
forgot: a per-tensor statistic favours the last layers, where error has piled up, and cannot see a
range fault at all. Here each candidate op's effect is measured on the examples themselves, with two
files the quantization debugger builds from the same calibration (`denylisted_nodes`,
`selective_quantizer.SelectiveQuantizer`):

  * "float op": the plain full-int8 file with only that op kept in float. Its `recovered`
    count is how many of the examples the plain file broke (reference right, file wrong) it
    gets right again; `broken` what it still breaks;
  * "only op": every other op in float, that op alone int8. Its `caused` count is how many of
    the forgotten examples it breaks by itself (`caused_stable`: of the stable sample).

Both are compared with the reference's top-1 and labels (`paired.flips`: broken = reference
right, file wrong) and by the mean KL(reference || file) over the forgotten examples
(`divergence.kl_divergence`, nats). Ops are ranked by `recovered + caused` — the forgotten
examples the op's quantization is necessary for plus those it suffices for — then `caused`,
then the KL the float op removes (a range fault lives between two ops and is re-quantized by
the next: keeping one op in float recovers almost nothing, so `recovered` alone would rank it
by noise). The ops around one range fault — the op writing the wide tensor and the ops reading
it (or the tensor pooling passes it on to) — each reproduce the same per-tensor rounding when
quantized alone, so their effects differ by noise: they are ranked together, at the best of
their places, the op where the fault starts first (its weights make the wide channel;
`range_diagnosis.origins`).

Every candidate costs two conversions and two runs over the subsets, so only a few are ablated
(`tf_forget.evaluate.ablation_candidates`): the ops of largest NMSE on the forgotten examples
and the ops the range diagnosis names (`tf_forget.evaluate.range_diagnosis`: they write or read a
tensor where one channel dominates the per-tensor range, which an NMSE cannot see).
`attribute` does it all for a full int8 file: the range diagnosis of its plain file, the
candidates, their ablation and the ranking (`rank`), each ranked op with the score that picked
it (`picked_by`).
"""

import numpy as np

from tf_forget.evaluate import ablation_candidates
from tf_forget.evaluate import batched
from tf_forget.evaluate import range_diagnosis
from tf_forget.export import flatbuffer_graph
from tf_forget.stats import divergence
from tf_forget.stats import paired


def _scores(data, images, num_threads):
  runner = batched.BatchedRunner(data, num_threads=num_threads, runtime="builtin")
  return runner.run(images)


def _effect(scores, ref_scores, labels, ref_top1):
  top1 = np.argmax(scores, axis=1)
  broken = paired.flips(labels, ref_top1, top1).broken
  kl = divergence.kl_divergence(ref_scores, scores) if len(scores) else np.zeros(0)
  return broken, float(np.mean(kl)) if kl.size else None


def ablate(quantizer, candidates, subsets, num_threads=1):
  """The end-to-end effect of each candidate op's quantization.

  Args:
    quantizer: a `selective_quantizer.SelectiveQuantizer` of the float model.
    candidates: `tensor_name`s of the ops to ablate (`ablation_candidates.choose`).
    subsets: {"forgotten": (images, labels, reference scores), "stable": (...)}: uint8 images
      `[n, H, W, C]`, int labels, the reference's float scores (logits) `[n, classes]`.
    num_threads: interpreter threads.

  Returns:
    {"plain": {"broken_forgotten", "broken_stable", "kl_forgotten"}, "ops": [{"tensor_name",
    "rank", "recovered", "broken", "kl_float_op", "caused", "caused_stable", "kl_only_op"}]}
    ranked (see the module docstring).
  """
  refs = {
    name: (images, np.asarray(labels), np.asarray(scores, np.float64), np.argmax(scores, axis=1))
    for name, (images, labels, scores) in subsets.items()
  }

  def measure(data):
    out = {}
    for name, (images, labels, scores, top1) in refs.items():
      out[name] = (
        _effect(_scores(data, images, num_threads), scores, labels, top1)
        if len(images)
        else (np.zeros(0, bool), None)
      )
    return out

  plain = measure(quantizer([]))
  base_broken = plain["forgotten"][0]
  others = sorted(quantizer.nodes)
  rows = []
  for name in candidates:
    with_float = measure(quantizer([name]))
    alone = measure(quantizer([n for n in others if n != name]))
    rows.append(
      {
        "tensor_name": name,
        "recovered": int(np.sum(base_broken & ~with_float["forgotten"][0])),
        "broken": int(np.sum(with_float["forgotten"][0])),
        "kl_float_op": with_float["forgotten"][1],
        "caused": int(np.sum(alone["forgotten"][0])),
        "caused_stable": int(np.sum(alone["stable"][0])),
        "kl_only_op": alone["forgotten"][1],
      }
    )
  base_kl = plain["forgotten"][1] or 0.0
  rows.sort(
    key=lambda r: (
      -(r["recovered"] + r["caused"]),
      -r["caused"],
      -(base_kl - (r["kl_float_op"] or base_kl)),
    )
  )
  for rank, row in enumerate(rows, start=1):
    row["rank"] = rank
  return {
    "plain": {
      "broken_forgotten": int(np.sum(base_broken)),
      "broken_stable": int(np.sum(plain["stable"][0])),
      "kl_forgotten": plain["forgotten"][1],
    },
    "ops": rows,
  }


# The kinds of fault an ablated op is given (`fault_kind`), and what each means in words.
FAULTS = {
  "range": "its activation range: one channel of a tensor it writes or reads spans far more "
  "than the others, and a per-tensor int8 scale leaves the others a few levels",
  "weights": "its own int8 weights and output: quantized alone, or kept alone in float, it "
  "breaks or recovers a large share of the forgotten examples",
  "inherited": "error inherited from earlier ops: quantized alone it breaks few of the "
  "forgotten examples, and keeping it in float recovers few",
}
# An op "owns" the fault when quantizing it alone breaks, or keeping it alone in float
# recovers, at least this share of the examples the plain file broke.
OWN_SHARE = 0.25


def fault_kind(effect, range_row, plain_broken):
  """The fault "range", "weights" or "inherited" (`FAULTS`) of an ablated op.

  Args:
    effect: its `ablate` row ("recovered", "caused").
    range_row: the `range_diagnosis.dominant` row of a tensor it writes or reads
      (`range_diagnosis.ops_touching`), or None.
    plain_broken: the forgotten examples the plain file broke.
  """
  if range_row is not None:
    return "range"
  own = max(effect["recovered"], effect["caused"])
  return "weights" if plain_broken and own >= OWN_SHARE * plain_broken else "inherited"


def _order(ablated, effects, touching, origins):
  """The ablated `ranking` rows in `ablate`'s order, the ops around one range fault (the ops
  touching its tensors: `range_diagnosis.origins`) together at the best of their places, the
  op where the fault starts first: quantized alone, each of them reproduces the same
  per-tensor rounding, so their effects differ by noise, and the fault is made by the first
  op's weights (the op an equalization rescales)."""

  def fault(row):
    hit = touching.get(row.get("op_index"))
    return None if hit is None else origins.get(hit["tensor"], hit["op_index"])

  place = {r["tensor_name"]: effects[r["tensor_name"]]["rank"] for r in ablated}
  best = {}
  for row in ablated:
    start = fault(row)
    if start is not None:
      best[start] = min(best.get(start, place[row["tensor_name"]]), place[row["tensor_name"]])

  def key(row):
    start = fault(row)
    if start is None:
      return (place[row["tensor_name"]], False, 0)
    return (best[start], row.get("op_index") != start, place[row["tensor_name"]])

  return sorted(ablated, key=key)


def rank(ranking, ablation, touching, picked_by=None, origins=None):
  """The ranking by causal effect: the ablated ops first in `ablate`'s order (the ops around one
  range fault together, the op where it starts first: `_order`), then the others in their
  error-statistic order, each with its effect and fault kind.

  Args:
    ranking: rows of `layer_error.rank_layers` (their "rank" is kept as "nmse_rank").
    ablation: `ablate`'s result.
    touching: `range_diagnosis.ops_touching` of the plain file ({op index: dominant row}).
    picked_by: {tensor name: the scores that picked it (`ablation_candidates.choose`)}.
    origins: `range_diagnosis.origins` of the plain file ({tensor: the op where its fault
      starts}); without it, each dominated tensor is a fault of its own.

  Returns:
    The rows with "rank", "nmse_rank", "evidence" ("ablation" or "error statistic"),
    "picked_by" (an ablated op's list of `ablation_candidates` sources, else None),
    "recovered", "broken_float_op", "kl_float_op", "caused", "caused_stable", "kl_only_op",
    "fault" and "range" (the dominant channel row or None), best first.
  """
  picked_by = picked_by or {}
  effects = {row["tensor_name"]: row for row in ablation["ops"]}
  plain_broken = ablation["plain"]["broken_forgotten"]
  ablated = _order(
    [r for r in ranking if r["tensor_name"] in effects], effects, touching, origins or {}
  )
  rest = [r for r in ranking if r["tensor_name"] not in effects]
  out = []
  for position, row in enumerate(ablated + rest, start=1):
    effect = effects.get(row["tensor_name"])
    hit = touching.get(row.get("op_index"))
    out.append(
      dict(
        row,
        rank=position,
        nmse_rank=row["rank"],
        evidence="ablation" if effect else "error statistic",
        picked_by=list(picked_by.get(row["tensor_name"], [])) if effect else None,
        recovered=effect and effect["recovered"],
        broken_float_op=effect and effect["broken"],
        kl_float_op=effect and effect["kl_float_op"],
        caused=effect and effect["caused"],
        caused_stable=effect and effect["caused_stable"],
        kl_only_op=effect and effect["kl_only_op"],
        fault=fault_kind(effect, hit, plain_broken) if effect else None,
        range=hit,
      )
    )
  return out


def attribute(
  quantizer,
  rows,
  ranking,
  subsets,
  calibration_images,
  num_threads=1,
  nmse=ablation_candidates.NMSE_PICKS,
  ranged=ablation_candidates.RANGE_PICKS,
):
  """The causal ranking of a full int8 file (module docstring).

  Args:
    quantizer: the `selective_quantizer.SelectiveQuantizer` the rows were measured with.
    rows: its `layer_error.layer_errors` rows (with a "forgotten" subset).
    ranking: `layer_error.rank_layers` of the rows.
    subsets: `ablate`'s subsets.
    calibration_images: the representative images the plain file was calibrated on (the
      range diagnosis runs over them).
    num_threads: interpreter threads.
    nmse, ranged: at most this many NMSE picks and range picks (`ablation_candidates.choose`).

  Returns:
    {"ranking": `rank`'s rows, "ablation": `ablate`'s result, "ranges": the
    `range_diagnosis.dominant` rows of the plain file, "candidates": `ablation_candidates.choose`}.
  """
  plain = quantizer([])
  ranges = range_diagnosis.dominant(
    range_diagnosis.channel_ranges(plain, calibration_images, num_threads=num_threads)
  )
  graph = flatbuffer_graph.graph(plain)
  touching = range_diagnosis.ops_touching(graph, ranges)
  origins = range_diagnosis.origins(graph, ranges)
  candidates = ablation_candidates.choose(rows, touching, origins, nmse, ranged)
  ablation = ablate(quantizer, [c["tensor_name"] for c in candidates], subsets, num_threads)
  picked_by = {c["tensor_name"]: c["picked_by"] for c in candidates}
  return {
    "ranking": rank(ranking, ablation, touching, picked_by, origins),
    "ablation": ablation,
    "ranges": ranges,
    "candidates": candidates,
  }
