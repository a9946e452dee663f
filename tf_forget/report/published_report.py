"""The published test sets' tables: 000 Table 8 (ImageNet-A) and CIFAR-10.1 (docs/spec.md §3.6).

With `--robustness=published` (`tf_forget.corruptions.published_suites`) the audit evaluates the
robustness members on the data set's published test sets as extra splits besides the
corrupted ones (`tf_forget.data.protocols`, `Published.extra`): `imagenet_a` for ImageNet,
`cifar10_1` for CIFAR-10. Their predictions keep the logits.

* `imagenet_a` (000 Table 8): per variant, top-1 / top-5 averaged over members, and normalized
  100·(A_t / A_0 − 1) against dense (docs/spec.md §3.6; `tf_forget.stats.robustness`, one
  "severity"). 1000-way argmax by default (000's dense top-1 of 0.89% suggests no masking); with
  `imagenet_a_mask=True` also Hendrycks' protocol, `classes` = 200: the argmax over the logits
  of ImageNet-A's 200 classes only (`masked_topk`), computed here from the stored logits — the
  stored predictions are not changed.
* `published_splits` (the other published test sets, e.g. CIFAR-10.1, 003 Table 11): per
  variant and split, top-1 (top-5 with more than 5 classes), its change against dense in points
  and normalized as above, and the same members' top-1 on the clean eval split beside it.

ImageNet-A's 200 classes in the 1000-way label space: `imagenet_a_classes`. The section is
the unit's (`tf_forget.report.units.published`).
"""

import numpy as np
import pandas as pd

from tf_forget.artifacts import names
from tf_forget.artifacts import predictions as predictions_lib
from tf_forget.data.protocols import protocol_registry as protocols
from tf_forget.report import collect
from tf_forget.report import imagenet_a_classes
from tf_forget.stats import accuracy
from tf_forget.stats import robustness

IMAGENET_A = "imagenet_a"
TOPK = 5


def masked_topk(scores, indices=imagenet_a_classes.INDICES_IN_1K, k=TOPK):
  """Top-k labels over a subset of classes, in the full label space (Hendrycks' 200-class mask).

  Args:
    scores: float `[N, C]` dequantized logits (1000-way).
    indices: ascending class indices kept (default ImageNet-A's 200).
    k: labels per example.

  Returns:
    int `[N, k]` class indices of `scores`' space by decreasing score among `indices`; ties go
    to the lowest index (docs/spec.md §1.2: `indices` ascending keeps the order).
  """
  indices = np.asarray(indices, np.int64)
  order = predictions_lib.topk(np.asarray(scores)[:, indices], min(k, indices.size))
  return indices[order]


def _masked_accuracies(run, variant, pop):
  """(top-1 `[members]`, top-5 `[members]`, labels outside the mask) from the stored logits.

  Raises:
    collect.CollectError: a member's file without logits.
  """
  top1, top5, outside = [], [], 0
  for k in pop.members:
    path = predictions_lib.path(run.run_dir, variant, int(k), IMAGENET_A)
    data = predictions_lib.read(path)
    if "logits" not in data:
      raise collect.CollectError(f"{variant}/{int(k)}/{IMAGENET_A}: no logits stored ({path})")
    labels = data["labels"]
    masked = masked_topk(data["logits"])
    top1.append(accuracy.top1_accuracy(masked[None, :, 0], labels)[0])
    top5.append(accuracy.topk_accuracy(masked[None], labels, k=TOPK)[0])
    outside = max(outside, int(np.sum(~np.isin(labels, imagenet_a_classes.INDICES_IN_1K))))
  return np.asarray(top1), np.asarray(top5), outside


def _table8(accs, classes):
  """Table 8 rows of one label space from {variant: (top-1 [members], top-5 [members])}."""
  t = robustness.robustness_table(
    {(v, IMAGENET_A): a for v, (a, _) in accs.items()},
    {(v, IMAGENET_A): b for v, (_, b) in accs.items()},
    dense=names.DENSE,
  )
  t.insert(1, "classes", classes)
  t["members"] = [accs[v][0].size for v in t.variant]
  return t.drop(columns=["corruption"])


def imagenet_a_table(run, mask=False):
  """000 Table 8: ImageNet-A top-1 / top-5 per variant, absolute and normalized (docs/spec.md §3.6).

  Args:
    run: a `collect.Run` with an `imagenet_a` split.
    mask: also the 200-class masked rows (Hendrycks' protocol; needs stored logits).

  Returns:
    (DataFrame columns `variant`, `classes` (1000, and 200 with `mask`), `top1`, `top5`,
    `top1_norm`, `top5_norm` (%), `members`, `examples`, or None without the split or its
    dense population; list of notes).
  """
  pops = {
    v: run.predictions[v][IMAGENET_A] for v in run.variants if IMAGENET_A in run.predictions[v]
  }
  if names.DENSE not in pops:
    return None, [] if not pops else [f"no dense predictions on {IMAGENET_A}"]
  full = {
    v: (accuracy.top1_accuracy(p.top1, p.labels), accuracy.topk_accuracy(p.topk, p.labels, k=TOPK))
    for v, p in pops.items()
  }
  frames, notes = [_table8(full, 1000)], []
  if mask:
    try:
      masked = {v: _masked_accuracies(run, v, p) for v, p in pops.items()}
    except (collect.CollectError, predictions_lib.PredictionsError) as e:
      notes.append(f"200-class mask not computed: {e}")
    else:
      frames.append(_table8({v: m[:2] for v, m in masked.items()}, 200))
      outside = masked[names.DENSE][2]
      if outside:
        notes.append(
          f"{outside} {IMAGENET_A} labels are outside its 200 classes: never right under the mask"
        )
  table = pd.concat(frames, ignore_index=True)
  table["examples"] = int(pops[names.DENSE].ids.size)
  return table, notes


def published_splits_table(run):
  """The published test sets other than ImageNet-A (CIFAR-10.1): accuracy per variant and split.

  Returns:
    (DataFrame columns `variant`, `split`, `top1`, `top5` (NaN with <= 5 classes),
    `top1_change` (points vs dense), `top1_norm` (%, docs/spec.md §3.6), `clean_top1` (the same
    members on the eval split), `members`, `examples`, or None without such a split; list of notes).
  """
  splits = sorted(
    s for s in protocols.published_splits() if s != IMAGENET_A and s in run.predictions[names.DENSE]
  )
  rows = []
  for split in splits:
    dense = float(
      accuracy.top1_accuracy(
        run.predictions[names.DENSE][split].top1, run.predictions[names.DENSE][split].labels
      ).mean()
    )
    for variant in run.variants:
      pop = run.predictions[variant].get(split)
      if pop is None:
        continue
      top1 = float(accuracy.top1_accuracy(pop.top1, pop.labels).mean())
      top5 = (
        float(accuracy.topk_accuracy(pop.topk, pop.labels, k=TOPK).mean())
        if run.num_classes > TOPK
        else np.nan
      )
      clean = run.predictions[variant].get(run.eval_split)
      common = np.intersect1d(pop.members, clean.members) if clean is not None else []
      clean_top1 = (
        float(accuracy.top1_accuracy(clean.select(common).top1, clean.labels).mean())
        if len(common)
        else np.nan
      )
      rows.append(
        {
          "variant": variant,
          "split": split,
          "top1": top1,
          "top5": top5,
          "top1_change": top1 - dense,
          "top1_norm": float(robustness.normalized_robustness(top1, dense)),
          "clean_top1": clean_top1,
          "members": int(pop.members.size),
          "examples": int(pop.ids.size),
        }
      )
  return (pd.DataFrame(rows) if rows else None), []


def compute(run, imagenet_a_mask=False):
  """The published test sets' tables of a run (none without such splits).

  Returns:
    (tables: name -> DataFrame (`imagenet_a`, `published_splits`), notes, settings dict for
    report.json's `settings["published"]` or None when no table applies).
  """
  tables, notes = {}, []
  table8, n = imagenet_a_table(run, imagenet_a_mask)
  notes += n
  if table8 is not None:
    tables[IMAGENET_A] = table8
  other, n = published_splits_table(run)
  notes += n
  if other is not None:
    tables["published_splits"] = other
  if not tables:
    return {}, notes, None
  protocol = protocols.PROTOCOLS.get(run.dataset_name)
  note = protocol.published.note if protocol and protocol.published else ""
  splits = ([IMAGENET_A] if table8 is not None else []) + (
    sorted(set(other.split)) if other is not None else []
  )
  return (
    tables,
    notes,
    {"splits": splits, "imagenet_a_mask": bool(imagenet_a_mask), "note": note or None},
  )
