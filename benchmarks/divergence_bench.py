"""Benchmark of the output divergence on 50,000 examples x 1,000 classes.

Synthetic saved logits: the reference's float32 `[N, C]` drawn standard normal times 3, the
candidate's the reference plus normal noise (`--noise`; at 0.1 about 6 % of the top-1 labels
change), labels uniform over the classes, two binary protected attributes ("Male",
"Young") so that the 9 subgroups of the report exist (aggregate, M, F, Y, O, MY, MO, FY, FO).

Timed (best of `--repeats`, all in this process):

  * divergence: `tf_forget.stats.divergence.divergence` end to end: per-example KL, Δp, top-1
    agreement and flips, the KL and Δp summaries overall + per class (C classes) + the 9
    subgroups, and the gallery indices; with the seconds of the summaries alone;
  * baseline: plain scipy on the same arrays, `scipy.special.softmax` of both and
    `scipy.special.rel_entr(p, q).sum(1)` (KL only; float32 in, whole arrays at once).

Target: divergence < 5 s on one core; the report gives divergence / 5 s and
divergence / baseline, the peak memory numpy allocates inside `divergence` beyond its inputs
(tracemalloc, a separate untimed call) and the largest KL difference between the two.

Run: PYTHONPATH=. .venv/bin/python benchmarks/divergence_bench.py [--examples 50000]
     [--classes 1000] (pin to one core with `taskset -c 0` to measure as the target is set)
"""

import argparse
import time
import tracemalloc

import numpy as np
from scipy import special

from tf_forget.stats import divergence
from tf_forget.stats import subgroups

TARGET_SECONDS = 5.0


def make_logits(examples, classes, noise, seed):
  """(reference, candidate) float32 `[examples, classes]`, labels, subgroup masks."""
  rng = np.random.default_rng(seed)
  reference = rng.standard_normal((examples, classes), dtype=np.float32) * 3
  candidate = reference + rng.standard_normal((examples, classes), dtype=np.float32) * noise
  labels = rng.integers(0, classes, examples)
  attributes = {"Male": rng.random(examples) < 0.42, "Young": rng.random(examples) < 0.77}
  masks = subgroups.subgroup_masks(attributes, examples, ("Male", "Young"))
  return reference, candidate, labels, masks


def best_of(repeats, fn):
  """(smallest seconds, result of the last call) over `repeats` calls of fn()."""
  best, out = float("inf"), None
  for _ in range(repeats):
    start = time.perf_counter()
    out = fn()
    best = min(best, time.perf_counter() - start)
  return best, out


def baseline(reference, candidate):
  p = special.softmax(reference, axis=1)
  q = special.softmax(candidate, axis=1)
  return special.rel_entr(p, q).sum(axis=1)


def summaries_only(kl, delta, labels, classes, masks):
  for values in (kl, delta):
    divergence.summarize(values)
    divergence.summarize_by_class(values, labels, classes)
    for mask in masks.values():
      divergence.summarize(values, mask)


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--examples", type=int, default=50_000)
  parser.add_argument("--classes", type=int, default=1000)
  parser.add_argument(
    "--noise", type=float, default=0.1, help="standard deviation of the candidate's logit noise"
  )
  parser.add_argument("--repeats", type=int, default=3)
  parser.add_argument("--seed", type=int, default=0)
  args = parser.parse_args()

  reference, candidate, labels, masks = make_logits(
    args.examples, args.classes, args.noise, args.seed
  )
  seconds, out = best_of(
    args.repeats, lambda: divergence.divergence(reference, candidate, labels, subgroups=masks)
  )
  summary_seconds, _ = best_of(
    args.repeats, lambda: summaries_only(out.kl, out.delta_p, labels, args.classes, masks)
  )
  base_seconds, base_kl = best_of(args.repeats, lambda: baseline(reference, candidate))
  tracemalloc.start()
  divergence.divergence(reference, candidate, labels, subgroups=masks)
  peak = tracemalloc.get_traced_memory()[1]
  tracemalloc.stop()

  kl = out.kl_summary.overall
  print(
    f"output divergence: {args.examples} examples x {args.classes} classes (float32 "
    f"logits, {reference.nbytes / 2**20:.0f} MiB each), {len(masks)} subgroups, "
    f"best of {args.repeats}"
  )
  print(
    f"  KL mean {kl.mean:.3g} [{kl.low:.3g}, {kl.high:.3g}], p99 {kl.p99:.3g}; "
    f"flip rate {out.flip_rate:.2%} {out.flips.counts}"
  )
  print(f"{'':2s}{'part':40s} {'seconds':>8s}")
  status = "OK" if seconds < TARGET_SECONDS else "SLOW"
  print(
    f"  {'divergence (end to end)':40s} {seconds:8.2f}   = {seconds / TARGET_SECONDS:.2f} x "
    f"the {TARGET_SECONDS:.0f} s target ({status})"
  )
  print(
    f"  {'  of which: summaries (2 quantities)':40s} {summary_seconds:8.2f}   overall + "
    f"{args.classes} classes + {len(masks)} subgroups each"
  )
  print(
    f"  {'baseline: softmax + rel_entr (KL only)':40s} {base_seconds:8.2f}   divergence / "
    f"baseline = {seconds / base_seconds:.2f}"
  )
  print(
    f"  peak memory allocated by divergence: {peak / 2**20:.0f} MiB (the logits: "
    f"{2 * reference.nbytes / 2**20:.0f} MiB); max |KL - baseline KL| = "
    f"{np.abs(out.kl - base_kl).max():.2g} (baseline in float32)"
  )


if __name__ == "__main__":
  main()
