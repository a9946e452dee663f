"""Benchmark of tf_forget.stats on CelebA- and ImageNet-sized populations.

CelebA-sized: 30 members x 9 variants x 20,000 examples, 2 classes, 40 attributes.
ImageNet-sized: 30 members x 5 variants x 50,000 examples, 1000 classes, top-5 labels.
Every compressed variant is compared with the dense one by every measure of the library
(000, 002, 004 per-variant measures; robustness and 003 on their small inputs). Targets:
< 5 s and < 30 s. The baseline, measured in the same run, is one plain numpy pass that
computes top-1 accuracy of every member of every variant; the report gives both ratios.

Run: .venv/bin/python benchmarks/stats_bench.py [--only celeba|imagenet]
"""

import argparse
import time

import numpy as np
import pandas as pd

from tf_forget.stats import accuracy
from tf_forget.stats import cie
from tf_forget.stats import class_level
from tf_forget.stats import exemplars
from tf_forget.stats import lost_in_pruning as lip
from tf_forget.stats import recall_distortion as rd
from tf_forget.stats import recall_tests
from tf_forget.stats import robustness
from tf_forget.stats import subgroups


def make_population(rng, labels, classes, members, p_correct, k=0):
  n = labels.size
  right = rng.random((members, n)) < p_correct
  wrong = (labels[None, :] + rng.integers(1, classes, (members, n))) % classes
  top1 = np.where(right, labels[None, :], wrong).astype(np.int32)
  if not k:
    return top1, None
  rest = (top1[:, :, None] + 1 + np.arange(k - 1, dtype=np.int32)) % classes
  return top1, np.concatenate([top1[:, :, None], rest], axis=2)


def run_library(labels, pops, classes, attributes=None, train_attributes=None):
  """Every per-variant measure of the library, each compressed variant vs dense."""
  dense, dense_k = pops["dense"]
  rec = {v: accuracy.per_class_recall(p, labels, classes) for v, (p, _) in pops.items()}
  acc = {v: accuracy.top1_accuracy(p, labels) for v, (p, _) in pops.items()}
  for v, (_, pk) in pops.items():
    accuracy.population_summary(acc[v])
    if pk is not None:
      accuracy.topk_accuracy(pk, labels, 5)
  alphas = {}
  for v, (p, pk) in pops.items():
    if v == "dense":
      continue
    table = class_level.class_level_report(rec["dense"], acc["dense"], rec[v], acc[v])
    class_level.gained_lost_summary(table["normalized_recall_difference"], table["significant"])
    pie = exemplars.pruning_identified_exemplars(dense, p, classes)
    exemplars.accuracy_on_subsets(dense, p, labels, pie["pie"], dense_k, pk)
    d = cie.taxicab_distance(dense, p, classes)
    cie.weighted_jaccard_distance(dense, p, classes)
    cie.taxicab_cie_accuracy(
      dense, p, labels, num_classes=classes, topk_predictions_0=dense_k, topk_predictions_t=pk
    )
    summary = rd.recall_distortion_summary(rec["dense"], acc["dense"], rec[v], acc[v])
    alphas[v] = summary["alphas"]
    if attributes is not None:
      subgroups.subgroup_table(dense, p, labels, attributes)
      subgroups.over_indexing(train_attributes, attributes, cie.select_percentile(d, 80))
  recall_tests.ratio_trend_tests(dict(enumerate(alphas.values())))
  recall_tests.algorithm_tests(alphas)
  members = dense.shape[0]
  top1 = {(v, c): np.full((members, 5), acc[v].mean()) for v in pops for c in ("fog", "snow")}
  robustness.robustness_table(top1, top1)
  ratios = np.linspace(0.1, 0.98, 20)
  errs = 0.08 + 0.05 * ratios**4 + np.zeros((3, 16, 1))
  lip.prune_potential_summary(lip.prune_potential(ratios, errs, np.full((3, 16), 0.08)))
  # 003 §4.1 grid: 15 noise levels x 100 draws x 100 examples (of 1000) per call.
  soft = np.full((15, 100, 100, min(classes, 10)), 0.1, dtype=np.float32)
  lip.noise_similarity(soft, soft)


def baseline(labels, pops):
  for p, _ in pops.values():
    (p == labels[None, :]).mean(axis=1)


def bench(name, members, variants, examples, classes, k, n_attributes, target, seed=0):
  rng = np.random.default_rng(seed)
  labels = rng.integers(0, classes, examples).astype(np.int32)
  names = ["dense"] + [f"variant_{i}" for i in range(1, variants)]
  pops = {
    v: make_population(rng, labels, classes, members, 0.9 - 0.02 * i, k)
    for i, v in enumerate(names)
  }
  attributes = train = None
  if n_attributes:
    cols = {"Male": rng.random(examples) < 0.42, "Young": rng.random(examples) < 0.77}
    for i in range(n_attributes - 2):
      cols[f"attr_{i}"] = rng.random(examples) < rng.uniform(0.02, 0.5)
    attributes = pd.DataFrame(cols)
    train = subgroups.attribute_shares(attributes)
  t0 = time.perf_counter()
  baseline(labels, pops)
  t_base = time.perf_counter() - t0
  t0 = time.perf_counter()
  run_library(labels, pops, classes, attributes, train)
  t_lib = time.perf_counter() - t0
  status = "OK" if t_lib < target else "SLOW"
  print(
    f"{name}: {members} members x {variants} variants x {examples} examples, "
    f"{classes} classes: library {t_lib:.2f} s (target < {target} s, {status}); "
    f"baseline top-1 pass {t_base * 1e3:.1f} ms; ratio {t_lib / t_base:.0f}x"
  )
  return t_lib


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--only", choices=("celeba", "imagenet"))
  args = parser.parse_args()
  if args.only in (None, "celeba"):
    bench("celeba", 30, 9, 20_000, 2, 0, 40, 5.0)
  if args.only in (None, "imagenet"):
    bench("imagenet", 30, 5, 50_000, 1000, 5, 0, 30.0)


if __name__ == "__main__":
  main()
