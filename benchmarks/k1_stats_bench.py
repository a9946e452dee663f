"""Benchmark of the K = 1 statistics on 50,000 examples x 1,000 classes.

Synthetic evaluation split: 50,000 labels over 1,000 classes, one reference network (80 % top-1)
and `--candidates` compressed files (each the reference with a few % of its predictions replaced
by a random class: broken, fixed and changed flips), two binary protected attributes ("Male",
"Young") so that the 004 subgroups exist (aggregate, M, F, Y, O, MY, MO, FY, FO). What a K = 1
report computes for it is timed twice:

  * compute: `tf_forget.report.single_network.compute` end to end, on a `collect.Run` built in
    memory (one dense member, the candidates paired with it), `seed=0`, 2,000 resamples, with
    the seconds spent in each of its functions (subgroup_rows, class_rows, topline_row, ...);
  * one by one: the same tables from the `tf_forget.stats.paired` / `paired_bootstrap` calls
    made one at a time, timed per call (flips, mcnemar_exact, paired_accuracy_difference,
    per_class_recall_change over the classes, paired_bootstrap_change per variant x subgroup x
    measure; FNR / FPR exist only for a binary task, so 1,000 classes give 9 subgroups x
    error).

Target: compute < 10 s; the report gives compute / 10 s and compute / one by one.
`--check` compares every table of `compute` with the one-by-one tables (exact equality, NaN in
the same cells): a faster `compute` must give the same numbers. The target is for an audit of
three candidates (`--candidates 3`); the default is one reference against one candidate.

Run: PYTHONPATH=. .venv/bin/python benchmarks/k1_stats_bench.py [--candidates 3] [--check]
"""

import argparse
import collections
import contextlib
import time

import numpy as np
import pandas as pd

from tf_forget.artifacts import names
from tf_forget.report import collect
from tf_forget.report import single_network
from tf_forget.stats import paired
from tf_forget.stats import paired_bootstrap
from tf_forget.stats import subgroups

TARGET_SECONDS = 10.0
# The functions `single_network.compute` spends its time in, with the `paired` work they do.
COMPUTE_PARTS = {
  "subgroup_rows": "bootstrap intervals, every variant at once",
  "class_rows": "per_class_recall_change",
  "topline_row": "flips, mcnemar_exact, paired_accuracy_difference",
  "flip_rows": "flips table",
  "check_subgroup_inputs": "argument checks",
}


@contextlib.contextmanager
def timed_functions(module, functions, seconds):
  """Adds the time spent in `module.<name>` for each name of `functions` to `seconds[name]`
  while the context is open (the module's globals are swapped for timed wrappers)."""
  saved = {name: getattr(module, name) for name in functions if hasattr(module, name)}

  def wrap(name, fn):
    def timed(*args, **kwargs):
      start = time.perf_counter()
      try:
        return fn(*args, **kwargs)
      finally:
        seconds[name] += time.perf_counter() - start

    return timed

  for name, fn in saved.items():
    setattr(module, name, wrap(name, fn))
  try:
    yield
  finally:
    for name, fn in saved.items():
      setattr(module, name, fn)


def make_run(examples, classes, candidates, flip_rate, seed):
  """A `collect.Run` with one dense member and `candidates` compressed variants paired with it."""
  rng = np.random.default_rng(seed)
  labels = rng.integers(0, classes, examples).astype(np.int64)
  ids = np.arange(examples, dtype=np.int64)
  wrong = (labels + rng.integers(1, classes, examples)) % classes
  reference = np.where(rng.random(examples) < 0.8, labels, wrong).astype(np.int32)

  def split(top1):
    return collect.SplitPredictions(
      members=np.array([0], np.int64),
      ids=ids,
      labels=labels,
      topk=top1[None, :, None],
      metadata=({},),
    )

  predictions = {names.DENSE: {"test": split(reference)}}
  for i in range(candidates):
    moved = rng.random(examples) < flip_rate * (1 + i)
    candidate = np.where(moved, rng.integers(0, classes, examples), reference)
    predictions[f"candidate_{i}"] = {"test": split(candidate.astype(np.int32))}
  attributes = {"Male": rng.random(examples) < 0.42, "Young": rng.random(examples) < 0.77}
  return collect.Run(
    run_dir="",
    dataset_name="synthetic",
    dataset_options={},
    num_classes=classes,
    class_names=tuple(f"class_{c}" for c in range(classes)),
    eval_split="test",
    protected_attributes=("Male", "Young"),
    predictions=predictions,
    attributes=attributes,
    train_attribute_shares={},
    pairing={v: {"pairs": [(0, 0)]} for v in predictions if v != names.DENSE},
  )


def parts(run, seed, n_resamples, alpha=0.05):
  """The K = 1 tables from the `paired` calls one by one: (tables, seconds per part)."""
  seconds = collections.Counter()

  def timed(part, fn, *args, **kwargs):
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    seconds[part] += time.perf_counter() - start
    return out

  dense = run.eval[names.DENSE]
  y, ref = dense.labels, dense.top1[0]
  masks = subgroups.subgroup_masks(run.attributes, y.size, run.protected_attributes)
  measures = single_network.rate_measures(run.num_classes)
  class_names = [str(c) for c in run.class_names]
  top, classes, groups, flip_frames = [], [], [], []
  for variant, pop in run.eval.items():
    if variant == names.DENSE:
      continue
    b = pop.top1[0]
    f = timed("flips", paired.flips, y, ref, b)
    mc = timed("mcnemar_exact", paired.mcnemar_exact, y, ref, b)
    diff = timed("paired_accuracy_difference", paired.paired_accuracy_difference, y, ref, b)
    top.append(
      {
        "variant": variant,
        "n": diff["n"],
        "accuracy_reference": diff["accuracy_a"],
        "accuracy_candidate": diff["accuracy_b"],
        "difference": diff["difference"],
        "low": diff["low"],
        "high": diff["high"],
        "broken": f.counts["broken"],
        "fixed": f.counts["fixed"],
        "changed": f.counts["changed"],
        "mcnemar_p": mc["p_value"],
        "method": single_network.TOPLINE_METHOD,
      }
    )
    r = timed(
      "per_class_recall_change",
      paired.per_class_recall_change,
      y,
      ref,
      b,
      run.num_classes,
      alpha=alpha,
    )
    classes.append(
      pd.DataFrame(
        {
          "variant": variant,
          "class": np.arange(run.num_classes),
          "class_name": class_names,
          "n": r["n"],
          "recall_reference": r["recall_a"],
          "recall_candidate": r["recall_b"],
          "change": r["change"],
          "low": r["low"],
          "high": r["high"],
          "broken": r["broken"],
          "fixed": r["fixed"],
          "p_value": r["p_value"],
          "p_adjusted": r["p_adjusted"],
          "significant": r["significant"],
        },
        columns=single_network.CLASS_COLUMNS,
      )
    )
    for name, mask in masks.items():
      for measure in measures:
        g = timed(
          "paired_bootstrap_change",
          paired_bootstrap.paired_bootstrap_change,
          y,
          ref,
          b,
          mask,
          measure,
          n_resamples=n_resamples,
          seed=seed,
        )
        groups.append(
          {
            "variant": variant,
            "subgroup": name,
            "measure": measure,
            "n": g["n"],
            "rate_reference": g["rate_a"],
            "rate_candidate": g["rate_b"],
            "change": g["change"],
            "low": g["low"],
            "high": g["high"],
            "n_resamples": g["n_resamples"],
          }
        )
    flip_frames.append(timed("flips", single_network.flip_rows, variant, dense.ids, y, ref, b))
  tables = {
    "k1_topline": pd.DataFrame(top, columns=single_network.TOPLINE_COLUMNS),
    "k1_classes": pd.concat(classes, ignore_index=True),
    "flips": pd.concat(flip_frames, ignore_index=True),
    "k1_subgroups": pd.DataFrame(groups, columns=single_network.SUBGROUP_COLUMNS),
  }
  return tables, seconds


def compare(got, want):
  """Lines naming every table of `want` that `got` lacks or differs from (empty if equal)."""
  problems = [f"{name}: extra table" for name in got if name not in want]
  for name, frame in want.items():
    if name not in got:
      problems.append(f"{name}: missing")
      continue
    try:
      pd.testing.assert_frame_equal(got[name], frame, check_exact=True)
    except AssertionError as e:
      problems.append(f"{name}: {' '.join(str(e).split())[:300]}")
  return problems


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--examples", type=int, default=50_000)
  parser.add_argument("--classes", type=int, default=1000)
  parser.add_argument(
    "--candidates", type=int, default=1, help="compressed files compared with the one reference"
  )
  parser.add_argument(
    "--flip_rate",
    type=float,
    default=0.02,
    help="share of predictions moved in candidate i, times (i + 1)",
  )
  parser.add_argument("--resamples", type=int, default=paired_bootstrap.MIN_RESAMPLES)
  parser.add_argument("--seed", type=int, default=0)
  parser.add_argument(
    "--check", action="store_true", help="compare compute's tables with the part-by-part tables"
  )
  args = parser.parse_args()

  run = make_run(args.examples, args.classes, args.candidates, args.flip_rate, args.seed)
  n_groups = len(subgroups.subgroup_masks(run.attributes, args.examples, run.protected_attributes))
  n_measures = len(single_network.rate_measures(args.classes))
  inside = collections.Counter()
  with timed_functions(single_network, COMPUTE_PARTS, inside):
    start = time.perf_counter()
    tables, _, _ = single_network.compute(run, seed=args.seed, n_resamples=args.resamples)
    total = time.perf_counter() - start
  want, seconds = parts(run, args.seed, args.resamples)

  print(
    f"K = 1 statistics: {args.examples} examples x {args.classes} classes, "
    f"{args.candidates} candidate(s), {n_groups} subgroups x {n_measures} measure(s), "
    f"{args.resamples} resamples"
  )
  print(f"{'single_network.compute, by function':38s} {'seconds':>8s} {'share':>6s}")
  for part, s in sorted(inside.items(), key=lambda kv: -kv[1]):
    print(f"  {part:36s} {s:8.2f} {s / total:6.1%}  {COMPUTE_PARTS[part]}")
  status = "OK" if total < TARGET_SECONDS else "SLOW"
  print(
    f"  {'total':36s} {total:8.2f}   = {total / TARGET_SECONDS:.2f} x the "
    f"{TARGET_SECONDS:.0f} s target ({status})"
  )
  part_sum = sum(seconds.values())
  print(f"{'paired calls one by one (reference)':38s} {'seconds':>8s} {'share':>6s}")
  for part, s in sorted(seconds.items(), key=lambda kv: -kv[1]):
    print(f"  {part:36s} {s:8.2f} {s / part_sum:6.1%}")
  print(f"  {'total':36s} {part_sum:8.2f}   compute / one by one = {total / part_sum:.2f}")
  if args.check:
    problems = compare(tables, want)
    print(
      "check: compute's tables equal the part-by-part tables"
      if not problems
      else "check FAILED:\n  " + "\n  ".join(problems)
    )
    if problems:
      raise SystemExit(1)


if __name__ == "__main__":
  main()
