"""The sample and the key of a human study (`human_study`; 000 §3.3, appendix C; 004 §3.2).

* `group_mask`: the group of a compressed variant — "pie" (modal labels of the dense and
  compressed populations differ, 000 §2.3, docs/spec.md §3.4) or "cie" (Taxicab CIEs at a percentile
  with d_T > 0, 004 §3.1, docs/spec.md §4.1, as `gallery.annotation_table`); the rest of the
  evaluation split is the other group.
* `draw`: the balanced, seeded, shuffled sample and its key — n = min(per_group, |group|,
  |rest|) examples drawn without replacement from each (`numpy.random.default_rng(seed)`),
  then shuffled together by the same generator; each row gets an opaque item id
  `<study>-<hash>` (the first 6 hex digits of the study's sha256, then 8 of the sha256 of the
  study and the example id).
* `read_key`, `check_key`: a key read back is checked against the run (data set, variant, a
  fingerprint of the group — sha256 of data set, split, variant, group definition, example ids
  and group mask — and the sample the run draws now) and against what the caller asks.

Errors are `HumanStudyError` (one line).
"""

import hashlib
import json

import numpy as np

from tf_forget.artifacts import errors
from tf_forget.artifacts import fileio
from tf_forget.artifacts import names
from tf_forget.stats import cie as cie_lib
from tf_forget.stats import exemplars

GROUPS = ("pie", "cie")
KEY_SCHEMA = "tf_forget.human_study_key/1"
KEY_FILE = "key.json"
SHEET_DIR = "sheet"
ITEM, NOTES = "item", "notes"


class HumanStudyError(errors.Error):
  """A human-study export or annotation file that cannot be used (one line)."""


def label(group):
  """The group's name in messages: "PIE" / "CIE"."""
  return group.upper()


def group_mask(run, measures, variant, group, percentile):
  """bool `[N]`: the examples of the evaluation split in the group ("pie" / "cie")."""
  compressed = [v for v in run.eval if v != names.DENSE]
  if variant not in compressed:
    raise HumanStudyError(
      f"human study: no compressed variant {variant!r} in this run "
      f"(have: {', '.join(compressed) or 'none'})"
    )
  if group == "pie":
    return np.asarray(
      exemplars.pruning_identified_exemplars(
        run.eval[names.DENSE].top1, run.eval[variant].top1, run.num_classes
      )["pie"],
      bool,
    )
  c = measures.cie.get(variant)
  if c is None:
    raise HumanStudyError(
      f"human study: {variant} has no Taxicab CIEs (no member paired with dense)"
    )
  distance = np.asarray(c["distance"])
  return cie_lib.select_percentile(distance, percentile, measures.config["seed"]) & (distance > 0)


def default_variant(run, measures, group, percentile):
  """The compressed variant with the most examples in the group (ties: report order)."""
  best, most = None, 0
  for v in run.eval:
    if v == names.DENSE or (group == "cie" and v not in measures.cie):
      continue
    count = int(group_mask(run, measures, v, group, percentile).sum())
    if count > most:
      best, most = v, count
  if best is None:
    raise HumanStudyError(
      f"human study: no compressed variant has a {label(group)}: nothing to annotate"
    )
  return best


def _sha(text):
  return hashlib.sha256(text.encode("utf-8")).hexdigest()


def fingerprint(run, variant, group, percentile, mask):
  """sha256 of the data set, split, variant, group definition, example ids and group mask."""
  h = hashlib.sha256(
    json.dumps([run.dataset_name, run.eval_split, variant, group, percentile]).encode("utf-8")
  )
  h.update(np.asarray(run.eval[names.DENSE].ids, "<i8").tobytes())
  h.update(np.asarray(mask, np.uint8).tobytes())
  return h.hexdigest()


def draw(run, measures, variant, group, per_group, seed, percentile, attributes):
  """The study's key: a balanced, shuffled, seeded sample (see the module docstring).

  Args:
    run, measures: `collect.Run`, `unit.Measures` (its `cie` and `config["seed"]`).
    variant, group, per_group, seed: the study.
    percentile: Taxicab percentile (group "cie"; ignored for "pie").
    attributes: the sheet's attribute columns.

  Returns:
    The key dict: `schema`, `study` {`dataset`, `eval_split`, `variant`, `group`,
    `percentile`, `per_group` (n drawn per group), `requested_per_group`, `seed`,
    `fingerprint`, `flagged_total`, `other_total`, `examples`, `study` (the id prefix)},
    `attributes`, `items` [{`item`, `id`, `position`, `group` ("pie" / "non_pie" or "cie" /
    "non_cie")}] in sheet order.

  Raises:
    HumanStudyError: no such variant, or an empty group.
  """
  percentile = float(percentile) if group == "cie" else None
  mask = group_mask(run, measures, variant, group, percentile)
  flagged, other = np.flatnonzero(mask), np.flatnonzero(~mask)
  n = min(int(per_group), flagged.size, other.size)
  if n == 0:
    raise HumanStudyError(
      f"human study: {variant} has {flagged.size} {label(group)} and "
      f"{other.size} other examples: no balanced sample"
    )
  rng = np.random.default_rng(int(seed))
  positions = np.concatenate(
    [rng.choice(flagged, n, replace=False), rng.choice(other, n, replace=False)]
  )
  in_group = np.arange(2 * n) < n
  order = rng.permutation(2 * n)
  study = {
    "dataset": run.dataset_name,
    "eval_split": run.eval_split,
    "variant": variant,
    "group": group,
    "percentile": percentile,
    "per_group": n,
    "seed": int(seed),
    "fingerprint": fingerprint(run, variant, group, percentile, mask),
  }
  token = _sha(json.dumps(study, sort_keys=True))
  study.update(
    {
      "requested_per_group": int(per_group),
      "flagged_total": int(flagged.size),
      "other_total": int(other.size),
      "examples": int(mask.size),
      "study": token[:6],
    }
  )
  ids = run.eval[names.DENSE].ids
  items = []
  for i in order:
    pos = int(positions[i])
    example = int(ids[pos])
    items.append(
      {
        "item": f"{token[:6]}-{_sha(f'{token}:{example}')[:8]}",
        "id": example,
        "position": pos,
        "group": group if in_group[i] else f"non_{group}",
      }
    )
  if len({it["item"] for it in items}) != len(items):  # 32-bit hash collision: never seen
    raise HumanStudyError("human study: two items got the same id; use another seed")
  return {"schema": KEY_SCHEMA, "study": study, "attributes": list(attributes), "items": items}


def read_key(path):
  """A key.json (`draw`'s dict); a missing, unreadable or foreign file is one line."""
  try:
    key = fileio.read_json(path, "human-study key")
  except errors.ReadError as e:
    raise HumanStudyError(errors.one_line(e)) from e
  ok = (
    isinstance(key, dict)
    and key.get("schema") == KEY_SCHEMA
    and isinstance(key.get("study"), dict)
    and isinstance(key.get("items"), list)
    and isinstance(key.get("attributes"), list)
    and all(
      isinstance(it, dict) and {"item", "id", "position", "group"} <= set(it) for it in key["items"]
    )
  )
  if not ok:
    raise HumanStudyError(f"{path} is not a human-study key ({KEY_SCHEMA})")
  return key


_ASKED = (
  ("variant", "variant"),
  ("group", "group"),
  ("seed", "seed"),
  ("per_group", "requested_per_group"),
  ("percentile", "percentile"),
)


def check_key(key, path, run, measures, options):
  """Checks that the key was made for this run and for what `options` ask.

  Raises:
    HumanStudyError: another data set, variant, seed, group or sample size than asked; a
      variant the run lacks; a group whose examples differ (another run); items that differ
      from the sample this run draws (an edited key).
  """
  s = key["study"]
  asked = [
    (f, getattr(options, o), s.get(f))
    for o, f in _ASKED
    if getattr(options, o) is not None and (f != "percentile" or s.get("group") == "cie")
  ]
  wrong = [
    f"{f} {mine} (key: {theirs})"
    for f, mine, theirs in asked
    if (theirs is None or float(mine) != float(theirs) if f == "percentile" else mine != theirs)
  ]
  if wrong:
    raise HumanStudyError(f"key {path} was made for another study: asked for {', '.join(wrong)}")
  if (s.get("dataset"), s.get("eval_split")) != (run.dataset_name, run.eval_split):
    raise HumanStudyError(
      f"key {path} was made for data set {s.get('dataset')} "
      f"({s.get('eval_split')}), this run is {run.dataset_name} "
      f"({run.eval_split})"
    )
  variant, group, percentile = s.get("variant"), s.get("group"), s.get("percentile")
  if group not in GROUPS:
    raise HumanStudyError(f"key {path}: unknown group {group!r}")
  mask = group_mask(run, measures, variant, group, percentile)
  if fingerprint(run, variant, group, percentile, mask) != s.get("fingerprint"):
    raise HumanStudyError(
      f"key {path} was made for another run: the {label(group)}s of {variant} differ "
      f"(key: {s.get('flagged_total')} of {s.get('examples')} examples; this run: "
      f"{int(mask.sum())} of {mask.size})"
    )
  again = draw(
    run,
    measures,
    variant,
    group,
    s.get("requested_per_group", 0),
    s.get("seed", 0),
    percentile,
    key["attributes"],
  )
  if again["items"] != key["items"] or again["study"] != s:
    raise HumanStudyError(
      f"key {path} does not match the sample this run draws for its study (an edited key?)"
    )
