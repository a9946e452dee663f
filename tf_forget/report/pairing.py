"""Which dense member each member of a compressed variant is compared with.

Paired measures (000 eq. 3, 004 Taxicab, 002 α) compare dense member k_0 with member k_t of a
variant:

* one-shot variants (`oneshot_<alg>_r<r>`, `oneshot_<alg>_t<t>`; docs/spec.md §6.1-6.4) and their
  quantized / encoded children (`oneshot_up_r10+full_int8`): member k_t is the pruning of the
  dense member its `<run>/members/<member variant>/<k_t>/metadata.json` `parent` link names
  (002 §6.2: "a pair of models, corresponding to before and after pruning"; α compares the
  same network). The link is current only while `parent.model_sha256` equals the dense
  member's own `model_sha256` (docs/artifacts/members.md); a stale or missing link leaves the
  member out of paired measures, with a one-line note;
* prune-retrain cycles (`iter_<alg>_c<n>`, 003 Algorithm 1) pair with the dense
  member at the root of their chain of parent links (cycle n → cycle n − 1 → … → dense), every
  link checked current the same way;
* every other variant pairs by index, k_0 = k_t (docs/spec.md §1.3): a quantized dense member is the
  same network, a gradual-pruning member (`prune_<t>`) an independently trained one;
* a run without `members/` (predictions copied alone, test fixtures) pairs one-shot members by
  index too — as they were made — and says so in its label.

`pair_members` makes a variant's pairing (`collect.Run.pairing`); `paired`, `paired_with_dense`
and `comparison` apply it: the dense and the variant's populations, row i against row i
(`comparison`: or every member of both when the members are independent networks).

Numpy plus `tf_forget.artifacts`; no TensorFlow, no import of `collect` (which imports this).
"""

import numpy as np

from tf_forget.artifacts import errors
from tf_forget.artifacts import fileio
from tf_forget.artifacts import filesystem
from tf_forget.artifacts import layout
from tf_forget.artifacts import names

PARENT = "parent"
INDEX = "index"
# The `label` of a pairing, shown beside every paired measure.
LABELS = {
  "parent": "parent",
  "same": "index (same network)",
  "independent": "index (independent members)",
  "no_metadata": "index (no member metadata)",
}


def _trained(variant):
  """The `names.TrainedVariant` of an audited variant's member variant, or None if unparsable."""
  try:
    return names.parse_trained(names.parse_variant(variant).member_variant)
  except errors.Error:
    return None


def index_pairing(variant, members, dense_members):
  """Pairs member k with dense member k (docs/spec.md §1.3), labelled by what k and k share."""
  trained = _trained(variant)
  if trained is not None and trained.name == names.DENSE:
    label = LABELS["same"]
  elif trained is not None and (trained.oneshot or trained.iterative):
    label = LABELS["no_metadata"]
  else:
    label = LABELS["independent"]
  dense = set(dense_members)
  return {
    "kind": INDEX,
    "label": label,
    "pairs": [(int(k), int(k)) for k in members if k in dense],
    "notes": [],
    "pruning": {},
  }


def _read_metadata(run_dir, variant, k):
  """A member's metadata.json dict, or None if it is missing or unreadable."""
  try:
    meta = fileio.read_json(layout.member_metadata(run_dir, variant, k), "member metadata")
  except errors.Error:
    return None
  return meta if isinstance(meta, dict) else None


def _parent_of(run_dir, member_variant, k, dense_members):
  """(k_dense, reason, pruning) of a one-shot or prune-retrain member's parent link.

  `reason` is None when the link (and, for a later prune-retrain cycle, every link up to the
  dense member) is current; else a one-line reason, with `k_dense` the parent it names (None if
  it names none). `pruning` is the metadata's `pruning` dict or {}.
  """
  meta = _read_metadata(run_dir, member_variant, k)
  if meta is None:
    return None, "no readable members/<variant>/<k>/metadata.json", {}
  pruning = meta.get("pruning") if isinstance(meta.get("pruning"), dict) else {}
  parent = meta.get(PARENT)
  if not isinstance(parent, dict) or "k" not in parent:
    return None, "metadata.json has no parent link", pruning
  expected = names.parse_trained(member_variant).parent or names.DENSE
  if parent.get("variant", names.DENSE) != expected:
    return None, f"parent link names {parent.get('variant')!r}, not {expected!r}", pruning
  try:
    k_parent = int(parent["k"])
  except (TypeError, ValueError):
    return None, f"parent link has a bad member index {parent['k']!r}", pruning
  if expected == names.DENSE and k_parent not in dense_members:
    return k_parent, "the parent has no predictions", pruning
  parent_meta = _read_metadata(run_dir, expected, k_parent)
  current = None if parent_meta is None else parent_meta.get("model_sha256")
  if not current:
    return k_parent, "the parent's metadata.json records no model_sha256", pruning
  if parent.get("model_sha256") != current:
    return (
      k_parent,
      (
        "stale parent link: the parent's model.keras sha256 differs from the one "
        "pruned (retrained since?)"
      ),
      pruning,
    )
  if expected == names.DENSE:
    return k_parent, None, pruning
  k_dense, reason, _ = _parent_of(run_dir, expected, k_parent, dense_members)
  return k_dense, (None if reason is None else f"{expected}/{k_parent}: {reason}"), pruning


def _note(variant, reason, found):
  """One line: which members of `variant` are left out and why (parents named if known)."""
  ks = [k for k, _ in found]
  parents = [f"{names.DENSE}/{p}" for _, p in found if p is not None]
  return (
    f"{variant}: member{'s' if len(ks) > 1 else ''} {', '.join(map(str, ks))} left out "
    f"of paired measures: {reason}" + (f" ({', '.join(parents)})" if parents else "")
  )


def pair_members(run_dir, variant, members, dense_members, cache=None):
  """How member k of `variant` pairs with a dense member (module docstring).

  Args:
    run_dir: the run directory (its `members/` holds the parent links).
    variant: an audited variant name (not dense).
    members: the variant's member indices.
    dense_members: the dense population's member indices.
    cache: optional dict (member variant, k) -> (k_dense, reason, pruning), shared by the
      variants of one run (a quantized child reads its member variant's link once).

  Returns:
    dict `kind` ("parent" | "index"), `label` (a `LABELS` value), `pairs` [(k_dense, k)]
    sorted by k, `notes` (one line per reason a member was left out), `pruning` (the
    `pruning` record of the first paired member's metadata — algorithm, ratio, fraction,
    settings such as `ratio_over` / `exclude_classifier`, docs/spec.md §6.3 — or {}).
  """
  trained = _trained(variant)
  if (
    trained is None
    or not (trained.oneshot or trained.iterative)
    or not filesystem.isdir(layout.members_root(run_dir))
  ):
    return index_pairing(variant, members, dense_members)
  cache = {} if cache is None else cache
  dense = set(int(k) for k in dense_members)
  pairs, left_out, pruning = [], {}, {}
  for k in sorted(int(k) for k in members):
    key = (trained.name, k)
    if key not in cache:
      cache[key] = _parent_of(run_dir, trained.name, k, dense)
    k_dense, reason, record = cache[key]
    if reason is None:
      pairs.append((k_dense, k))
      pruning = pruning or record
    else:
      left_out.setdefault(reason, []).append((k, k_dense))
  notes = [_note(variant, reason, found) for reason, found in left_out.items()]
  return {
    "kind": PARENT,
    "label": LABELS["parent"],
    "pairs": pairs,
    "notes": notes,
    "pruning": pruning,
  }


def paired(pop_0, pop_t, pairs=None):
  """Two populations restricted to their paired members, row i of one against row i of the other.

  Args:
    pop_0: the dense `collect.SplitPredictions`.
    pop_t: a compressed variant's `collect.SplitPredictions`.
    pairs: [(k_dense, k_variant), ...] (`collect.Run.pairing_of(variant)["pairs"]`); pairs whose
      members either population lacks are skipped. None: the member indices both have
      (docs/spec.md §1.3), in order.

  Returns:
    (pop_0 rows, pop_t rows), both with the same number of members.
  """
  if pairs is None:
    common = np.intersect1d(pop_0.members, pop_t.members)
    return pop_0.select(common), pop_t.select(common)
  have_0, have_t = set(pop_0.members.tolist()), set(pop_t.members.tolist())
  use = [(int(a), int(b)) for a, b in pairs if a in have_0 and b in have_t]
  return pop_0.select([a for a, _ in use]), pop_t.select([b for _, b in use])


def paired_with_dense(run, variant):
  """(dense rows, variant rows) of a `collect.Run`'s evaluation split, paired as
  `run.pairing_of(variant)` says (`paired`)."""
  return paired(run.eval[names.DENSE], run.eval[variant], run.pairing_of(variant)["pairs"])


def is_paired(run, variant):
  """True if the variant's member k is the same network as its dense partner (`comparison`)."""
  return run.pairing_of(variant)["label"] != LABELS["independent"]


def comparison(run, variant):
  """(dense rows, variant rows, paired) on the evaluation split, as the variant's pairing says.

  `run` is a `collect.Run`.

  Paired (the same network before and after compression: a quantized dense member, a one-shot
  or prune-retrain member and its dense parent; module docstring): row i against row i of the
  pairs. Independent (gradual pruning, docs/spec.md §1.3): every member of both populations. The
  intervals of the report (`stats.intervals`) are paired or Welch accordingly.
  """
  if is_paired(run, variant):
    q0, qt = paired_with_dense(run, variant)
    return q0, qt, True
  return run.eval[names.DENSE], run.eval[variant], False
