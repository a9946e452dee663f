"""A gallery of the top Taxicab CIEs per compressed variant for human review (004 Figure 3).

For each compressed variant, the examples with the largest Taxicab distance d_T between the
dense and the compressed population's label counts (004 §3.1; SPEC §4.1: ties broken by the
seeded permutation of `tf_forget.stats.cie.rank_by_distance`), only those with d_T > 0 (an
example both populations label alike is no CIE). Each entry: a thumbnail (nearest-neighbour
upscaling of small images such as the 8x8 digits, so pixels stay visible), the true label,
the dense and compressed modal labels (ties -> largest label, SPEC §3.4) and the example's
attributes.
"""

import io

import numpy as np
from PIL import Image

from tf_forget.report import collect

MIN_SIDE = 64
MAX_SIDE = 128


def thumbnail(image):
  """PNG bytes of a uint8 `[H, W, C]` image: small images upscaled (nearest) to >= 64 px,
  large ones downscaled to <= 128 px; no metadata (deterministic)."""
  image = np.asarray(image, np.uint8)
  if image.ndim == 3 and image.shape[2] == 1:
    image = image[:, :, 0]
  pil = Image.fromarray(image)
  h, w = image.shape[:2]
  if max(h, w) < MIN_SIDE:
    scale = -(-MIN_SIDE // max(h, w))
    pil = pil.resize((w * scale, h * scale), Image.NEAREST)
  elif max(h, w) > MAX_SIDE:
    scale = MAX_SIDE / max(h, w)
    pil = pil.resize((max(1, round(w * scale)), max(1, round(h * scale))), Image.BILINEAR)
  buf = io.BytesIO()
  pil.save(buf, format="PNG")
  return buf.getvalue()


def _name(run, label):
  label = int(label)
  if len(run.class_names) == run.num_classes:
    return f"{run.class_names[label]} ({label})"
  return str(label)


def entries(run, cie, size=12):
  """The top `size` Taxicab CIEs of one variant (without images).

  Args:
    run: `collect.Run`.
    cie: the variant's dict from `measures.taxicab_measures` (`order`, `distance`,
      `modal_0`, `modal_t`, `members`).
    size: at most this many entries.

  Returns:
    list of dicts: `rank` (1-based), `position` (row in the evaluation split), `id`,
    `distance`, `max_distance` (2N), `label`, `label_name`, `dense_modal`, `dense_modal_name`,
    `compressed_modal`, `compressed_modal_name`, `attributes` {name: bool}.
  """
  pop = run.eval[collect.DENSE]
  out = []
  for rank, pos in enumerate(cie["order"][:size]):
    pos = int(pos)
    if cie["distance"][pos] <= 0:
      break
    out.append({
        "rank": rank + 1, "position": pos, "id": int(pop.ids[pos]),
        "distance": int(cie["distance"][pos]), "max_distance": 2 * int(cie["members"]),
        "label": int(pop.labels[pos]), "label_name": _name(run, pop.labels[pos]),
        "dense_modal": int(cie["modal_0"][pos]),
        "dense_modal_name": _name(run, cie["modal_0"][pos]),
        "compressed_modal": int(cie["modal_t"][pos]),
        "compressed_modal_name": _name(run, cie["modal_t"][pos]),
        "attributes": {n: bool(v[pos]) for n, v in sorted(run.attributes.items())}})
  return out


def build(run, cies, size=12, with_images=True):
  """Gallery entries per compressed variant, with thumbnails.

  Args:
    run: `collect.Run`.
    cies: variant -> Taxicab dict (`measures.Measures.cie`).
    size: entries per variant.
    with_images: attach `png` thumbnail bytes (read from the data registry by id).

  Returns:
    dict variant -> list of `entries` dicts (plus `png` bytes when `with_images`).

  Raises:
    collect.CollectError: an id the data set lacks.
  """
  gallery = {v: entries(run, c, size) for v, c in cies.items()}
  if with_images:
    ids = sorted({e["id"] for es in gallery.values() for e in es})
    if ids:
      images = collect.images_for(run, ids)
      png = {i: thumbnail(img) for i, img in zip(ids, images)}
      for es in gallery.values():
        for e in es:
          e["png"] = png[e["id"]]
  return gallery
