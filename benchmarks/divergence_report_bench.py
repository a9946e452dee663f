"""Benchmark of the report's output-divergence tables on 50,000 examples x 1,000 classes.

A synthetic run directory: dense member 0's predictions file with float32 logits `[50,000,
1,000]` (standard normal x 3) and `--candidates` compressed files (each the reference plus
normal noise `--noise`), labels uniform over the classes, two binary protected attributes
("Male", "Young": 9 subgroups). Each file is ~200 MB, written once with
`tf_forget.artifacts.predictions.write` (not timed). Timed, best of `--repeats`:

  * compute: `tf_forget.report.divergence_report.compute` end to end on a `collect.Run` built
    in memory (one dense member, the candidates paired with it): reading every predictions
    file, `divergence.divergence` per pair, the variant / class / subgroup / example tables;
  * stats only: the `divergence.divergence` calls alone on the same logits already in memory
    (what `tf_forget.stats` costs; benchmarks/divergence_bench.py times one such call).

Target: compute < 5 s; the report gives compute / 5 s and compute / stats only
(the report's own overhead: reading the files, pooling, the tables).

Run: PYTHONPATH=. .venv/bin/python benchmarks/divergence_report_bench.py [--candidates 3]
     [--dir /tmp/divergence_bench] (the files are kept in --dir and reused)
"""

import argparse
import os

import numpy as np

from benchmarks.divergence_bench import best_of
from tf_forget.artifacts import names
from tf_forget.artifacts import predictions
from tf_forget.report import collect
from tf_forget.report import divergence_report
from tf_forget.report import pairing
from tf_forget.stats import divergence
from tf_forget.stats import subgroups

TARGET_SECONDS = 5.0
SPLIT = "test"


def write_run(run_dir, examples, classes, candidates, noise, seed):
  """Writes (or reuses) the predictions files; returns (labels, attributes, logits by name)."""
  rng = np.random.default_rng(seed)
  labels = rng.integers(0, classes, examples)
  ids = np.arange(examples, dtype=np.int64)
  reference = rng.standard_normal((examples, classes), dtype=np.float32) * 3
  logits = {names.DENSE: reference}
  for i in range(candidates):
    logits[f"candidate_{i}"] = (
      reference + rng.standard_normal((examples, classes), dtype=np.float32) * noise
    )
  for variant, x in logits.items():
    path = predictions.path(run_dir, variant, 0, SPLIT)
    if not os.path.exists(path):
      predictions.write(path, ids, labels, x, {"variant": variant, "k": 0, "split": SPLIT})
  attributes = {"Male": rng.random(examples) < 0.42, "Young": rng.random(examples) < 0.77}
  return labels, attributes, logits


def make_run(run_dir, labels, attributes, variants, classes):
  """A `collect.Run` over the files (top-1 from their `topk`), every variant paired 0 -> 0."""
  preds = {}
  for variant in variants:
    data = predictions.read(predictions.path(run_dir, variant, 0, SPLIT))
    preds[variant] = {
      SPLIT: collect.SplitPredictions(
        members=np.array([0]),
        ids=data["ids"],
        labels=labels,
        topk=data["topk"][None],
        metadata=(data["metadata"],),
      )
    }
  pairs = {
    v: {"kind": "index", "label": pairing.LABELS["same"], "pairs": [(0, 0)], "notes": []}
    for v in variants
    if v != names.DENSE
  }
  return collect.Run(
    run_dir=run_dir,
    dataset_name="synthetic",
    dataset_options={},
    num_classes=classes,
    class_names=tuple(f"class_{c}" for c in range(classes)),
    eval_split=SPLIT,
    protected_attributes=("Male", "Young"),
    predictions=preds,
    attributes=attributes,
    train_attribute_shares={},
    pairing=pairs,
  )


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--examples", type=int, default=50_000)
  parser.add_argument("--classes", type=int, default=1_000)
  parser.add_argument("--candidates", type=int, default=1)
  parser.add_argument("--noise", type=float, default=0.1)
  parser.add_argument("--repeats", type=int, default=3)
  parser.add_argument("--seed", type=int, default=0)
  parser.add_argument("--dir", default="/tmp/divergence_report_bench")
  args = parser.parse_args()
  run_dir = os.path.join(args.dir, f"{args.examples}x{args.classes}")
  labels, attributes, logits = write_run(
    run_dir, args.examples, args.classes, args.candidates, args.noise, args.seed
  )
  run = make_run(run_dir, labels, attributes, list(logits), args.classes)
  masks = subgroups.subgroup_masks(attributes, args.examples, ("Male", "Young"))
  compute_s, (tables, notes, _) = best_of(args.repeats, lambda: divergence_report.compute(run))
  stats_s, _ = best_of(
    args.repeats,
    lambda: [
      divergence.divergence(logits[names.DENSE], logits[v], labels, masks)
      for v in logits
      if v != names.DENSE
    ],
  )
  print(f"{args.examples} x {args.classes}, {args.candidates} candidate(s), best of {args.repeats}")
  print(
    f"  compute     {compute_s:7.2f} s  ({compute_s / TARGET_SECONDS:.2f} x the "
    f"{TARGET_SECONDS:g} s target)"
  )
  print(f"  stats only  {stats_s:7.2f} s  (compute / stats only = {compute_s / stats_s:.2f})")
  print("  tables: " + ", ".join(f"{k} {len(t)} rows" for k, t in sorted(tables.items())))
  if any(notes.values()):
    print(f"  notes: {notes}")


if __name__ == "__main__":
  main()
