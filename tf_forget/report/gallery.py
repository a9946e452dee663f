"""Galleries of the top Taxicab CIEs for human review, and their export (004 Figure 3, §3.2).

An example's Taxicab distance d_T between the dense and a compressed population's label counts
(004 §3.1; docs/spec.md §4.1: ties broken by the seeded permutation of
`tf_forget.stats.cie.rank_by_distance`) ranks it; only examples with d_T > 0 are shown (an
example both populations label alike is no CIE). Modal labels: ties -> largest label (docs/spec.md
§3.4).

* `build` — one gallery per compressed variant (the original view, kept for its callers).
* `build_families` — one gallery per variant FAMILY: the trained variant a compressed variant
  is made from (`names.family`; `full_int8` and `float16` belong to
  `dense`, `prune_0.9+full_int8` to `prune_0.9`). Each example once, with every variant of the
  family that flags it (d_T > 0: its rank and d_T there), ordered by its best rank.
* `kind_of` — what the compression did to the modal label: "broken" (dense right, compressed
  wrong), "fixed" (dense wrong, compressed right), "changed" (both wrong, different labels),
  "same modal" (d_T > 0 but the same modal label).
* `annotation_table` — every Taxicab CIE at a percentile as one row for a human annotator
  (004 §3.2 "Human-in-the-Loop Auditing with CIE").

Thumbnails: nearest-neighbour upscaling of small images (8x8 digits) so pixels stay visible.
"""

import io

import numpy as np
import pandas as pd
from PIL import Image

from tf_forget.artifacts import names
from tf_forget.report import collect
from tf_forget.stats import cie as cie_lib

MIN_SIDE = 64
MAX_SIDE = 128
BROKEN, CHANGED, FIXED, SAME = "broken", "changed", "fixed", "same modal"
KINDS = (BROKEN, CHANGED, FIXED, SAME)  # a card's kind: the first of these any variant has
ANNOTATION_COLUMNS = (
  "variant",
  "family",
  "rank",
  "id",
  "position",
  "distance",
  "max_distance",
  "label",
  "label_name",
  "dense_modal",
  "compressed_modal",
  "kind",
)


def thumbnail(image, min_side=MIN_SIDE, max_side=MAX_SIDE):
  """PNG bytes of a uint8 `[H, W, C]` image: small images upscaled (nearest) to >= `min_side`
  px, large ones downscaled to <= `max_side` px; no metadata (deterministic)."""
  image = np.asarray(image, np.uint8)
  if image.ndim == 3 and image.shape[2] == 1:
    image = image[:, :, 0]
  pil = Image.fromarray(image)
  h, w = image.shape[:2]
  if max(h, w) < min_side:
    scale = -(-min_side // max(h, w))
    pil = pil.resize((w * scale, h * scale), Image.NEAREST)
  elif max(h, w) > max_side:
    scale = max_side / max(h, w)
    pil = pil.resize((max(1, round(w * scale)), max(1, round(h * scale))), Image.BILINEAR)
  buf = io.BytesIO()
  pil.save(buf, format="PNG")
  return buf.getvalue()


def _name(run, label):
  label = int(label)
  if len(run.class_names) == run.num_classes:
    return f"{run.class_names[label]} ({label})"
  return str(label)


def kind_of(label, dense_modal, compressed_modal):
  """The kind "broken", "fixed", "changed" or "same modal" (see the module docstring).

  Works on ints or on equal-shape int arrays (then returns a str array).
  """
  label, d, c = np.asarray(label), np.asarray(dense_modal), np.asarray(compressed_modal)
  out = np.select([d == c, d == label, c == label], [SAME, BROKEN, FIXED], CHANGED)
  return str(out) if out.ndim == 0 else out.astype(object)


def families(variants):
  """family -> its variants (in the given order); `dense` first, then families by name."""
  out = {}
  for v in variants:
    out.setdefault(names.family(v), []).append(v)
  return {f: out[f] for f in sorted(out, key=lambda f: (f != names.DENSE, f))}


def _attributes(run, pos):
  return {n: bool(v[pos]) for n, v in sorted(run.attributes.items())}


def entries(run, cie, size=12):
  """The top `size` Taxicab CIEs of one variant (without images).

  Args:
    run: `collect.Run`.
    cie: the variant's dict from `units.exemplars.taxicab_measures` (`order`, `distance`,
      `modal_0`, `modal_t`, `members`).
    size: at most this many entries.

  Returns:
    list of dicts: `rank` (1-based), `position` (row in the evaluation split), `id`,
    `distance`, `max_distance` (2N), `label`, `label_name`, `dense_modal`, `dense_modal_name`,
    `compressed_modal`, `compressed_modal_name`, `attributes` {name: bool}.
  """
  pop = run.eval[names.DENSE]
  paths = collect.example_paths(run)
  out = []
  for rank, pos in enumerate(cie["order"][:size]):
    pos = int(pos)
    if cie["distance"][pos] <= 0:
      break
    out.append(
      {
        "rank": rank + 1,
        "position": pos,
        "id": int(pop.ids[pos]),
        **_path(paths, pop.ids[pos]),
        "distance": int(cie["distance"][pos]),
        "max_distance": 2 * int(cie["members"]),
        "label": int(pop.labels[pos]),
        "label_name": _name(run, pop.labels[pos]),
        "dense_modal": int(cie["modal_0"][pos]),
        "dense_modal_name": _name(run, cie["modal_0"][pos]),
        "compressed_modal": int(cie["modal_t"][pos]),
        "compressed_modal_name": _name(run, cie["modal_t"][pos]),
        "attributes": _attributes(run, pos),
      }
    )
  return out


def _path(paths, example_id):
  """{"path": the example's path} when the data set names its examples
  (`collect.example_paths`), else {}."""
  return {} if paths is None else {"path": paths.get(int(example_id), "")}


def _ranks(order):
  """1-based rank `[N]` of every position from a ranking (`order[r]` = position at rank r+1)."""
  ranks = np.empty(len(order), np.int64)
  ranks[np.asarray(order)] = np.arange(1, len(order) + 1)
  return ranks


def family_entries(run, cies, size=12):
  """The `size` examples of one family with the best (smallest) rank in any of its variants.

  Only the top `size` of each variant can be among them (each of those has a better rank in
  that variant than any example below them), so only those are candidates. Ties of best rank:
  the variant first in `cies`, then the position.

  Args:
    run: `collect.Run`.
    cies: the family's variants -> Taxicab dict (`units.exemplars.taxicab_measures`).
    size: at most this many entries.

  Returns:
    list of JSON-ready dicts ordered by `rank`: `rank` (best rank), `position`, `id`, `label`,
    `label_name`, `kind` (the first of `KINDS` among its variants), `attributes` {name: bool},
    and `variants`: one dict per variant of the family with d_T > 0 at the example, by rank —
    `variant`, `rank`, `distance`, `max_distance` (2N), `dense_modal(_name)`,
    `compressed_modal(_name)`, `kind`.
  """
  best = {}
  for vi, c in enumerate(cies.values()):
    for r, pos in enumerate(c["order"][:size]):
      if c["distance"][pos] <= 0:
        break
      best[int(pos)] = min(best.get(int(pos), (r + 1, vi)), (r + 1, vi))
  chosen = sorted(best, key=lambda p: (best[p], p))[:size]
  ranks = {v: _ranks(c["order"]) for v, c in cies.items()}
  pop = run.eval[names.DENSE]
  paths = collect.example_paths(run)
  out = []
  for pos in chosen:
    label = int(pop.labels[pos])
    rows = []
    for v, c in cies.items():
      if c["distance"][pos] <= 0:
        continue
      d, t = int(c["modal_0"][pos]), int(c["modal_t"][pos])
      rows.append(
        {
          "variant": v,
          "rank": int(ranks[v][pos]),
          "distance": int(c["distance"][pos]),
          "max_distance": 2 * int(c["members"]),
          "dense_modal": d,
          "dense_modal_name": _name(run, d),
          "compressed_modal": t,
          "compressed_modal_name": _name(run, t),
          "kind": kind_of(label, d, t),
        }
      )
    rows.sort(key=lambda row: row["rank"])
    out.append(
      {
        "rank": best[pos][0],
        "position": pos,
        "id": int(pop.ids[pos]),
        **_path(paths, pop.ids[pos]),
        "label": label,
        "label_name": _name(run, label),
        "kind": next(k for k in KINDS if any(row["kind"] == k for row in rows)),
        "attributes": _attributes(run, pos),
        "variants": rows,
      }
    )
  return out


def _attach_images(run, lists):
  """Adds `png` thumbnail bytes to every entry of the lists (images read by id)."""
  ids = sorted({e["id"] for es in lists for e in es})
  if ids:
    images = collect.images_for(run, ids)
    png = {i: thumbnail(img) for i, img in zip(ids, images)}
    for es in lists:
      for e in es:
        e["png"] = png[e["id"]]


def build(run, cies, size=12, with_images=True):
  """Gallery entries per compressed variant, with thumbnails (see `build_families`).

  Args:
    run: `collect.Run`.
    cies: variant -> Taxicab dict (`unit.Measures.cie`).
    size: entries per variant.
    with_images: attach `png` thumbnail bytes (read from the data registry by id).

  Returns:
    dict variant -> list of `entries` dicts (plus `png` bytes when `with_images`).

  Raises:
    collect.CollectError: an id the data set lacks.
  """
  gallery = {v: entries(run, c, size) for v, c in cies.items()}
  if with_images:
    _attach_images(run, gallery.values())
  return gallery


def build_families(run, cies, size=12, with_images=True):
  """One gallery per variant family: each example once, `size` cards per family.

  Args:
    run: `collect.Run`.
    cies: compressed variant -> Taxicab dict (`unit.Measures.cie`).
    size: cards per family.
    with_images: attach `png` thumbnail bytes to every card (read from the data set by id).

  Returns:
    dict family -> {"variants": the family's variants in `cies` order, "cards": list of
    `family_entries` dicts (plus `png` when `with_images`)}; every family of `cies` is a key,
    `dense` first (no cards: no CIE in any of its variants).

  Raises:
    collect.CollectError: an id the data set lacks.
  """
  gallery = {
    f: {"variants": list(vs), "cards": family_entries(run, {v: cies[v] for v in vs}, size)}
    for f, vs in families(cies).items()
  }
  if with_images:
    _attach_images(run, [g["cards"] for g in gallery.values()])
  return gallery


def without_images(gallery):
  """A `build_families` gallery without `png` bytes (JSON-ready, for report.json)."""
  return {
    f: {
      "variants": list(g["variants"]),
      "cards": [{k: x for k, x in e.items() if k != "png"} for e in g["cards"]],
    }
    for f, g in gallery.items()
  }


def table(gallery):
  """A `build_families` gallery as one row per (family, card, variant flagging the card).

  Columns: `family`, `card_rank`, `id`, `position`, `label`, `label_name`, `card_kind`, then
  the variant's `variant`, `rank`, `distance`, `max_distance`, `dense_modal(_name)`,
  `compressed_modal(_name)`, `kind`, then `attr_<name>`.
  """
  rows = []
  for fam, g in gallery.items():
    for e in g["cards"]:
      card = {
        "family": fam,
        "card_rank": e["rank"],
        "id": e["id"],
        **({"path": e["path"]} if "path" in e else {}),
        "position": e["position"],
        "label": e["label"],
        "label_name": e["label_name"],
        "card_kind": e["kind"],
      }
      attrs = {f"attr_{a}": v for a, v in e["attributes"].items()}
      rows += [{**card, **row, **attrs} for row in e["variants"]]
  return pd.DataFrame(
    rows,
    columns=None if rows else ["family", "card_rank", "id", "variant", "rank", "distance", "kind"],
  )


def annotation_table(run, cies, percentile=90, seed=0):
  """The Taxicab CIEs at a percentile, one row per (variant, CIE), for human annotation.

  004 §3.2 proposes CIEs as "a tractable subset of the dataset for further inspection or
  annotation by a domain expert": threshold d_T at percentile p (ceil((100 − p)/100 · n)
  examples, ties by the seeded permutation; docs/spec.md §4.1, `cie.select_percentile`), here
  without those at d_T = 0 (nothing changed: nothing to annotate). Ranked by `cie.rank_by_distance`
  with the same seed (the `order` of `units.exemplars.taxicab_measures` when `seed` is its seed).

  Args:
    run: `collect.Run`.
    cies: compressed variant -> Taxicab dict (`distance`, `modal_0`, `modal_t`, `members`).
    percentile: p in [0, 100] (004 Table 2: 90, 95, 99).
    seed: tie-breaking seed.

  Returns:
    DataFrame with `ANNOTATION_COLUMNS`, `attr_<name>` per attribute and an empty `annotation`
    column; variants in `cies` order, then by rank.
  """
  pop = run.eval[names.DENSE]
  attrs = sorted(run.attributes)
  paths = collect.example_paths(run)
  columns = list(ANNOTATION_COLUMNS) + [f"attr_{a}" for a in attrs] + ["annotation"]
  if paths is not None:  # the file an annotator opens
    columns.insert(columns.index("id") + 1, "path")
  frames = []
  for variant, c in cies.items():
    distance = np.asarray(c["distance"])
    mask = cie_lib.select_percentile(distance, percentile, seed) & (distance > 0)
    order = cie_lib.rank_by_distance(distance, seed)
    rank = np.flatnonzero(mask[order])
    pos = order[rank]
    labels = np.asarray(pop.labels)[pos]
    modal_0, modal_t = np.asarray(c["modal_0"])[pos], np.asarray(c["modal_t"])[pos]
    frame = pd.DataFrame(
      {
        "variant": variant,
        "family": names.family(variant),
        "rank": rank + 1,
        "id": np.asarray(pop.ids)[pos].astype(np.int64),
        **({} if paths is None else {"path": collect.paths_of(paths, np.asarray(pop.ids)[pos])}),
        "position": pos,
        "distance": distance[pos].astype(np.int64),
        "max_distance": 2 * int(c["members"]),
        "label": labels.astype(np.int64),
        "label_name": [_name(run, label) for label in labels],
        "dense_modal": modal_0.astype(np.int64),
        "compressed_modal": modal_t.astype(np.int64),
        "kind": kind_of(labels, modal_0, modal_t),
        **{f"attr_{a}": np.asarray(run.attributes[a], bool)[pos] for a in attrs},
        "annotation": "",
      },
      columns=columns,
    )
    if len(frame):
      frames.append(frame)
  if not frames:
    return pd.DataFrame(columns=columns)
  return pd.concat(frames, ignore_index=True)
