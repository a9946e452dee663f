"""Test fixture: a run directory of synthetic predictions with a planted effect.

Written with `tf_forget.artifacts.predictions.write` in the schema of docs/artifacts/predictions.md,
over the real `digits` / `digits_biased` test splits (ids and labels from the data registry).

Every population shares one noise pattern: member k is wrong (label + 1) on the examples whose
position i has i % 50 == k, so no example has more than one wrong member and the modal label
of every unplanted example is its true label. On top of that:

* `digits`: `prune_0.9` members are all wrong (label 8) on PLANTED_LOST (20 examples of class
  3) and all right on PLANTED_GAINED (4 examples in each of classes 5-9) where every dense member
  is wrong (label 0). Overall accuracy is unchanged, class 3 loses 0.4 recall, classes 5-9 gain
  0.08; #PIE = 40 = the Taxicab CIEs at distance 2K; everything else has distance 0.
  `full_int8` equals dense (no PIE, no significant class). Corrupted splits
  `gaussian_noise@1..5` drop dense to 1 - 0.1 s and prune_0.9 further.
* `digits_biased`: `prune_0.9` members miss every positive of the `Inverted` subgroup
  (false negatives), the rare subgroup of the data set.
* `make_oneshot_run` (`digits`, 50 test examples per class): one-shot variants with a planted
  recall-distortion slope α (002 §5) per member and `members/*/metadata.json` parent links
  (below).
"""

import json
import os

import numpy as np

from tf_forget.artifacts import names
from tf_forget.artifacts import predictions
from tf_forget.data import registry

NOISE_PERIOD = 50


def planted_digits(labels):
  """(lost, gained) example positions: 20 of class 3; 4 of each class 5-9, outside the noise."""
  clean = (np.arange(labels.size) % NOISE_PERIOD) >= 10
  lost = np.flatnonzero(clean & (labels == 3))[:20]
  gained = np.concatenate([np.flatnonzero(clean & (labels == c))[:4] for c in range(5, 10)])
  return lost, gained


def noisy(labels, k, num_classes):
  """Top-1 of member k: right except on positions i with i % 50 == k (label + 1)."""
  pred = labels.copy()
  wrong = (np.arange(labels.size) % NOISE_PERIOD) == k
  pred[wrong] = (labels[wrong] + 1) % num_classes
  return pred


def scores_for(top1, num_classes):
  """Float scores whose argmax is `top1` (others by a fixed descending ramp)."""
  n = top1.size
  scores = np.tile(np.linspace(0.5, 0.0, num_classes, dtype=np.float32), (n, 1))
  scores[np.arange(n), top1] = 1.0
  return scores


def write_member(run_dir, variant, k, split, ids, labels, top1, num_classes, dataset, shuffle=None):
  """Writes one predictions file (rows optionally permuted by `shuffle`)."""
  ids, labels, top1 = np.asarray(ids), np.asarray(labels), np.asarray(top1)
  if shuffle is not None:
    ids, labels, top1 = ids[shuffle], labels[shuffle], top1[shuffle]
  predictions.write(
    predictions.path(run_dir, variant, k, split),
    ids,
    labels,
    scores_for(top1, num_classes),
    {
      "variant": variant,
      "member_variant": variant.split("+")[0],
      "k": k,
      "dataset": dataset,
      "split": split,
    },
    save_logits=False,
  )


def make_digits_run(run_dir, members=5, corrupted=True, variants=("prune_0.9", "full_int8")):
  """The `digits` run described in the module docstring. Returns (ids, labels, lost, gained)."""
  test = registry.get("digits").load("test")
  ids, labels = test.ids, test.labels
  lost, gained = planted_digits(labels)
  for k in range(members):
    base = noisy(labels, k, 10)
    dense = base.copy()
    dense[gained] = 0
    write_member(run_dir, "dense", k, "test", ids, labels, dense, 10, "digits")
    for variant in variants:
      pred = dense.copy()
      if variant.startswith("prune"):
        pred = base.copy()
        pred[lost] = 8
      write_member(run_dir, variant, k, "test", ids, labels, pred, 10, "digits")
    if corrupted:
      for s in range(1, 6):
        for variant, rate in (("dense", 0.1 * s), ("prune_0.9", 0.12 * s)):
          if variant not in ("dense",) + tuple(variants):
            continue
          pred = labels.copy()
          wrong = np.arange(labels.size) < int(rate * labels.size) + k
          pred[wrong] = (labels[wrong] + 1) % 10
          write_member(run_dir, variant, k, f"gaussian_noise@{s}", ids, labels, pred, 10, "digits")
  return ids, labels, lost, gained


def make_biased_run(run_dir, members=5):
  """The `digits_biased` run. Returns (ids, labels, attributes, planted positions)."""
  test = registry.get("digits_biased").load("test")
  ids, labels = test.ids, test.labels
  planted = np.flatnonzero((labels == 1) & test.attributes["Inverted"])
  for k in range(members):
    dense = noisy(labels, k, 2)
    write_member(run_dir, "dense", k, "test", ids, labels, dense, 2, "digits_biased")
    pruned = dense.copy()
    pruned[planted] = 0
    write_member(run_dir, "prune_0.9", k, "test", ids, labels, pruned, 2, "digits_biased")
    write_member(run_dir, "full_int8", k, "test", ids, labels, dense, 2, "digits_biased")
  return ids, labels, test.attributes, planted


def listing(root):
  """Sorted relative paths of every file under `root` (to check that nothing was written)."""
  out = []
  for d, _, files in os.walk(root):
    out.extend(os.path.relpath(os.path.join(d, f), root) for f in files)
  return sorted(out)


# --- one-shot runs with a planted α ----------------------------------------------------------

BASE_WRONG = 20  # W: wrong examples per class of every member (accuracy 1 - 20/50 = 0.6)
PATTERN = np.array([8, -8, 4, -4, 0, 0, 0, 0, 0, 0])  # P: per-class offsets, sum 0, mult. of 4
ONESHOT = {"oneshot_mp_r2": 0.5, "oneshot_mp_r10": 2.0, "oneshot_up_r2": 1.0, "oneshot_up_r10": 1.5}


def dense_sha(k):
  """The fake `model_sha256` of dense member k's model.keras."""
  return f"{k:064x}"


def planted_alpha(factor, index, k):
  """α of member k of the index-th one-shot variant: factor + 0.25 · ((k + index) % 3 − 1).

  Over k = 0..5 the offsets average 0 (each value twice) and differ between variants, so the
  paired differences are not constant (a t statistic exists).
  """
  return factor + 0.25 * ((k + index) % 3 - 1)


def _wrong_per_class(labels, counts, k):
  """Top-1 that is wrong on counts[c] examples of each class c (label + 1), offset by k."""
  pred = labels.copy()
  for c, n in enumerate(counts):
    pos = np.flatnonzero(labels == c)
    wrong = pos[(np.arange(int(n)) + 3 * k) % pos.size]
    pred[wrong] = (c + 1) % 10
  return pred


def _write_json(path, obj):
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, "w") as f:
    json.dump(obj, f)


def make_oneshot_run(
  run_dir, members=6, variants=ONESHOT, parent_shift=0, children=(), gradual=False, metadata=True
):
  """A `digits` run whose one-shot variants have a known α per member.

  Dense member k is wrong on W + P[(c + k) % 10] examples of class c, so its normalized recall
  balance is B̄^c = −P[(c + k) % 10] / (50 A) with A = 0.6. Member k of the i-th one-shot
  variant (factor f) is the pruning of dense parent k' = (k + parent_shift) % members: wrong on
  W + α P[(c + k') % 10] examples of class c with α = `planted_alpha(f, i, k)`. Its accuracy
  is A too, so its slope against its parent is exactly α (002 §5; docs/spec.md §5.2); against dense
  member k (index pairing) it is α · (P · roll(P, shift)) / (P · P) instead.

  Args:
    run_dir: the run directory.
    members: K.
    variants: one-shot variant -> planted factor f.
    parent_shift: k' = (k + shift) % K; 0 pairs parent and index alike.
    children: quantized children (`oneshot_up_r10+full_int8`): predictions equal their member
      variant's.
    gradual: also write `prune_0.9` with α = 1 against dense member k (index pairing).
    metadata: write `members/<variant>/<k>/metadata.json` with `model_sha256` and parent links.

  Returns:
    (planted {variant: {k: α}}, parents {variant: {k: k'}}).
  """
  test = registry.get("digits").load("test")
  ids, labels = test.ids, test.labels
  planted, parents = {}, {}
  for k in range(members):
    counts = BASE_WRONG + np.roll(PATTERN, -k)
    write_member(
      run_dir, "dense", k, "test", ids, labels, _wrong_per_class(labels, counts, k), 10, "digits"
    )
    if metadata:
      _write_json(
        os.path.join(run_dir, "members", "dense", str(k), "metadata.json"),
        {"model_sha256": dense_sha(k)},
      )
    if gradual:
      write_member(
        run_dir,
        "prune_0.9",
        k,
        "test",
        ids,
        labels,
        _wrong_per_class(labels, counts, k + 1),
        10,
        "digits",
      )
  for i, (variant, factor) in enumerate(variants.items()):
    trained = names.parse_trained(variant)
    for k in range(members):
      parent = (k + parent_shift) % members
      alpha = planted_alpha(factor, i, k)
      counts = BASE_WRONG + alpha * np.roll(PATTERN, -parent)
      assert np.allclose(counts, np.round(counts)), "α · P must be whole examples"
      pred = _wrong_per_class(labels, np.round(counts), k)
      for name in (variant,) + tuple(c for c in children if c.split("+")[0] == variant):
        write_member(run_dir, name, k, "test", ids, labels, pred, 10, "digits")
      planted.setdefault(variant, {})[k] = alpha
      parents.setdefault(variant, {})[k] = parent
      if metadata:
        _write_json(
          os.path.join(run_dir, "members", variant, str(k), "metadata.json"),
          {
            "model_sha256": f"{i + 1:032x}{k:032x}",
            "parent": {
              "variant": "dense",
              "k": parent,
              "model_sha256": dense_sha(parent),
              "weights_sha256": dense_sha(parent)[::-1],
            },
            "pruning": {
              "algorithm": trained.algorithm,
              "ratio": trained.ratio,
              "fraction": trained.fraction,
              "ratio_over": "prunable",
              "exclude_classifier": False,
            },
          },
        )
  return planted, parents


# --- the user's own files --------------------------------------------------------------------

USER_WORSE_EXTRA = 3  # examples `user_worse` breaks beyond `full_int8`


def make_user_run(run_dir, members=1, save_logits=False):
  """A `digits` run of a user's model with tf_forget's `full_int8` and two files of the user's.

  Every member k shares `noisy`'s pattern. `full_int8` is wrong (label + 2) on 2 clean examples
  dense gets right; `user_int8` predicts exactly what `full_int8` predicts; `user_worse` also
  breaks `USER_WORSE_EXTRA` more clean examples (label + 3). Returns (ids, labels, broken
  positions of full_int8, the extra broken positions of user_worse).
  """
  test = registry.get("digits").load("test")
  ids, labels = test.ids, test.labels
  clean = np.flatnonzero((np.arange(labels.size) % NOISE_PERIOD) >= 10)
  broken, extra = clean[:2], clean[2 : 2 + USER_WORSE_EXTRA]
  for k in range(members):
    dense = noisy(labels, k, 10)
    int8 = dense.copy()
    int8[broken] = (labels[broken] + 2) % 10
    worse = int8.copy()
    worse[extra] = (labels[extra] + 3) % 10
    for variant, pred in (
      ("dense", dense),
      ("full_int8", int8),
      ("user_int8", int8),
      ("user_worse", worse),
    ):
      predictions.write(
        predictions.path(run_dir, variant, k, "test"),
        ids,
        labels,
        scores_for(pred, 10),
        {
          "variant": variant,
          "member_variant": "dense",
          "k": k,
          "dataset": "digits",
          "split": "test",
        },
        save_logits=save_logits,
      )
  return ids, labels, broken, extra


def make_folder_run(run_dir, root, num_images=60):
  """A K = 1 run over a folder of PNGs (`folder` data set: examples named by their path).

  Writes the first `num_images` digits test images as `root/<label>/<iiii>.png`, then dense
  (right everywhere) and `full_int8` (wrong, label + 1, on the folder's positions 0, 7 and 13)
  with logits. Returns (the `folder` data set, the flipped positions).
  """
  from PIL import Image

  test = registry.get("digits").load("test")
  for i in range(num_images):
    folder = os.path.join(root, str(int(test.labels[i])))
    os.makedirs(folder, exist_ok=True)
    Image.fromarray(test.images[i][:, :, 0]).save(os.path.join(folder, f"{i:04d}.png"))
  data = registry.get("folder", path=str(root), image_size=[8, 8], channels=1)
  labels = np.concatenate([b.labels for b in data.batches("test", 256)])
  ids = np.arange(labels.size, dtype=np.int64)
  flipped = np.array([0, 7, 13])
  int8 = labels.copy()
  int8[flipped] = (labels[flipped] + 1) % 10
  for variant, pred in (("dense", labels), ("full_int8", int8)):
    predictions.write(
      predictions.path(run_dir, variant, 0, "test"),
      ids,
      labels,
      scores_for(pred, 10),
      {"variant": variant, "member_variant": "dense", "k": 0, "dataset": "folder", "split": "test"},
      save_logits=True,
    )
  return data, flipped
