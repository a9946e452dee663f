"""Which quantized op made the int8 file forget, measured end to end.

An error statistic per layer (`tf_forget.export.layer_error`, `tf_forget.evaluate.tensor_match`)
says where the numbers differ; it does not say which op's quantization broke the examples the file
forgot: a per-tensor statistic favours the last layers, where error has piled up, and cannot see a
range fault at all. Here each candidate op's effect is measured on the examples themselves, with two
files the quantization debugger builds from the same calibration (`denylisted_nodes`,
`layer_error.SelectiveQuantizer`):

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
by noise); every candidate costs two conversions and two runs over the subsets, so
the caller picks at most a few candidates by a cheap score (`cheap_candidates`).
"""

import numpy as np

from tf_forget.evaluate import batched
from tf_forget.stats import divergence
from tf_forget.stats import paired

DEFAULT_CANDIDATES = 6


def cheap_candidates(rows, count=DEFAULT_CANDIDATES, subset="forgotten"):
  """The `tensor_name`s of the `count` ops of `layer_error.layer_errors` rows with the largest
  error on `subset` (nmse; ops without one last), in that order; rows without a name (an op
  the debugger could not name cannot be kept in float) are left out."""
  def score(row):
    value = (row.get("subsets") or {}).get(subset, {}).get("nmse")
    return -1.0 if value is None else float(value)
  ranked = sorted((r for r in rows if r.get("tensor_name")),
                  key=lambda r: (-score(r), r.get("op_index") or 0))
  return [r["tensor_name"] for r in ranked[:count]]


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
    quantizer: a `layer_error.SelectiveQuantizer` of the float model.
    candidates: `tensor_name`s of the ops to ablate (`cheap_candidates`).
    subsets: {"forgotten": (images, labels, reference scores), "stable": (...)}: uint8 images
      `[n, H, W, C]`, int labels, the reference's float scores (logits) `[n, classes]`.
    num_threads: interpreter threads.

  Returns:
    {"plain": {"broken_forgotten", "broken_stable", "kl_forgotten"}, "ops": [{"tensor_name",
    "rank", "recovered", "broken", "kl_float_op", "caused", "caused_stable", "kl_only_op"}]}
    ranked (see the module docstring).
  """
  refs = {name: (images, np.asarray(labels), np.asarray(scores, np.float64),
                 np.argmax(scores, axis=1))
          for name, (images, labels, scores) in subsets.items()}

  def measure(data):
    out = {}
    for name, (images, labels, scores, top1) in refs.items():
      out[name] = _effect(_scores(data, images, num_threads), scores, labels, top1) \
          if len(images) else (np.zeros(0, bool), None)
    return out

  plain = measure(quantizer([]))
  base_broken = plain["forgotten"][0]
  others = sorted(quantizer.nodes)
  rows = []
  for name in candidates:
    with_float = measure(quantizer([name]))
    alone = measure(quantizer([n for n in others if n != name]))
    rows.append({
        "tensor_name": name,
        "recovered": int(np.sum(base_broken & ~with_float["forgotten"][0])),
        "broken": int(np.sum(with_float["forgotten"][0])),
        "kl_float_op": with_float["forgotten"][1],
        "caused": int(np.sum(alone["forgotten"][0])),
        "caused_stable": int(np.sum(alone["stable"][0])),
        "kl_only_op": alone["forgotten"][1]})
  base_kl = plain["forgotten"][1] or 0.0
  rows.sort(key=lambda r: (-(r["recovered"] + r["caused"]), -r["caused"],
                           -(base_kl - (r["kl_float_op"] or base_kl))))
  for rank, row in enumerate(rows, start=1):
    row["rank"] = rank
  return {"plain": {"broken_forgotten": int(np.sum(base_broken)),
                    "broken_stable": int(np.sum(plain["stable"][0])),
                    "kl_forgotten": plain["forgotten"][1]},
          "ops": rows}


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
  """"range", "weights" or "inherited" (`FAULTS`) of an ablated op.

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


def rank(ranking, ablation, touching):
  """The ranking by causal effect: the ablated ops first in `ablate`'s order, then the others
  in their error-statistic order, each with its effect and fault kind.

  Args:
    ranking: rows of `layer_error.rank_layers` (their "rank" is kept as "nmse_rank").
    ablation: `ablate`'s result.
    touching: `range_diagnosis.ops_touching` of the plain file ({op index: dominant row}).

  Returns:
    The rows with "rank", "nmse_rank", "evidence" ("ablation" or "error statistic"),
    "recovered", "broken_float_op", "kl_float_op", "caused", "caused_stable", "kl_only_op",
    "fault" and "range" (the dominant channel row or None), best first.
  """
  effects = {row["tensor_name"]: row for row in ablation["ops"]}
  plain_broken = ablation["plain"]["broken_forgotten"]
  ablated = sorted((r for r in ranking if r["tensor_name"] in effects),
                   key=lambda r: effects[r["tensor_name"]]["rank"])
  rest = [r for r in ranking if r["tensor_name"] not in effects]
  out = []
  for position, row in enumerate(ablated + rest, start=1):
    effect = effects.get(row["tensor_name"])
    hit = touching.get(row.get("op_index"))
    out.append(dict(
        row, rank=position, nmse_rank=row["rank"],
        evidence="ablation" if effect else "error statistic",
        recovered=effect and effect["recovered"], broken_float_op=effect and effect["broken"],
        kl_float_op=effect and effect["kl_float_op"], caused=effect and effect["caused"],
        caused_stable=effect and effect["caused_stable"],
        kl_only_op=effect and effect["kl_only_op"],
        fault=fault_kind(effect, hit, plain_broken) if effect else None, range=hit))
  return out
