"""Which ops the causal ranking ablates: the NMSE picks and the ops the range diagnosis names.

Ablating an op costs two conversions and two runs over the ablation subsets
(`causal_attribution.ablate`), so only a few ops are ablated, chosen by two cheap scores that
each see a fault the other cannot:

  * NMSE picks (`nmse_picks`): the `NMSE_PICKS` ops of largest NMSE on the forgotten examples
    (`layer_error.layer_errors` rows) — an op whose own int8 weights or output distort;
  * range picks (`range_picks`): at most `RANGE_PICKS` of the ops that write or read an
    activation tensor where one channel dominates the per-tensor int8 range
    (`range_diagnosis.ops_touching`): the ops where such a fault starts first (their weights
    make the wide channel; `range_diagnosis.origins`), then the others, each by the dominant
    channel's ratio, then op order.
    An NMSE cannot see these: the wide channel holds most of the tensor's energy, so the
    levels the other channels lose hardly count in it.

`choose` is their union, each op once, with where it came from (`picked_by`: `NMSE` and / or
`RANGE`): at most `MAX_CANDIDATES` ops. Only ops with a `tensor_name` are picked (an op the
debugger could not name cannot be kept in float). Plain Python over the rows' dicts.
"""

NMSE = "nmse"  # picked by its NMSE on the forgotten examples
RANGE = "range"  # named by the range diagnosis (it writes or reads a dominated tensor)
NMSE_PICKS = 6
RANGE_PICKS = 4
MAX_CANDIDATES = NMSE_PICKS + RANGE_PICKS  # the union's cap: two files and two runs each
# How candidates are chosen, as an analysis records it (`layer_analysis.expected_inputs`): an
# analysis made under another rule is stale.
RULE = f"nmse {NMSE_PICKS} + range diagnosis {RANGE_PICKS}, ranked by ablation"


def nmse_picks(rows, count=NMSE_PICKS, subset="forgotten"):
  """The `tensor_name`s of the `count` ops of `layer_error.layer_errors` rows with the largest
  error on `subset` (nmse; ops without one last, then by op index), in that order."""

  def score(row):
    value = (row.get("subsets") or {}).get(subset, {}).get("nmse")
    return -1.0 if value is None else float(value)

  ranked = sorted(
    (r for r in rows if r.get("tensor_name")), key=lambda r: (-score(r), r.get("op_index") or 0)
  )
  return [r["tensor_name"] for r in ranked[:count]]


def range_picks(rows, touching, origins=None, count=RANGE_PICKS):
  """The `tensor_name`s of at most `count` ops of `rows` that `touching` names
  (`range_diagnosis.ops_touching`: {op index: the `dominant` row of a tensor it writes or
  reads}): the ops where a fault starts (`origins`: `range_diagnosis.origins`, {tensor: op
  index}; without it, the op writing the tensor) first, then the others, each by the dominant
  channel's ratio (largest first), then by op index."""
  origins = origins or {}

  def key(row):
    hit = touching[row["op_index"]]
    start = origins.get(hit["tensor"], hit["op_index"])
    return (start != row["op_index"], -float(hit["ratio"]), row["op_index"])

  named = [
    r
    for r in rows
    if r.get("tensor_name") and r.get("op_index") is not None and r["op_index"] in touching
  ]
  return [r["tensor_name"] for r in sorted(named, key=key)][:count]


def choose(rows, touching, origins=None, nmse=NMSE_PICKS, ranged=RANGE_PICKS, subset="forgotten"):
  """The ops to ablate: the union of `nmse_picks` and `range_picks`.

  Args:
    rows: `layer_error.layer_errors` rows ("tensor_name", "op_index", "subsets").
    touching: `range_diagnosis.ops_touching` of the plain file ({} when no channel dominates).
    origins: `range_diagnosis.origins` of the plain file.
    nmse, ranged: how many ops each score picks at most (the union is at most their sum).
    subset: the subset whose NMSE ranks the ops.

  Returns:
    [{"tensor_name", "picked_by": [NMSE] / [RANGE] / [NMSE, RANGE]}]: the NMSE picks in their
    order, then the range picks that are not among them; each name once.
  """
  picked = {}
  for source, found in (
    (NMSE, nmse_picks(rows, nmse, subset)),
    (RANGE, range_picks(rows, touching, origins, ranged)),
  ):
    for name in found:
      sources = picked.setdefault(name, [])
      if source not in sources:
        sources.append(source)
  return [{"tensor_name": name, "picked_by": sources} for name, sources in picked.items()]
