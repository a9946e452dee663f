"""Test fixture: a run directory of synthetic predictions with a planted effect.

Written with `eval.predictions.write` in the schema of docs/artifacts/predictions.md, over the
real `digits` / `digits_biased` test splits (ids and labels from the data registry).

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
"""

import os

import numpy as np

from eval import predictions
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


def write_member(run_dir, variant, k, split, ids, labels, top1, num_classes, dataset,
                 shuffle=None):
  """Writes one predictions file (rows optionally permuted by `shuffle`)."""
  ids, labels, top1 = np.asarray(ids), np.asarray(labels), np.asarray(top1)
  if shuffle is not None:
    ids, labels, top1 = ids[shuffle], labels[shuffle], top1[shuffle]
  predictions.write(predictions.path(run_dir, variant, k, split), ids, labels,
                    scores_for(top1, num_classes),
                    {"variant": variant, "member_variant": variant.split("+")[0], "k": k,
                     "dataset": dataset, "split": split}, save_logits=False)


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
          write_member(run_dir, variant, k, f"gaussian_noise@{s}", ids, labels, pred, 10,
                       "digits")
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
