"""One network against its own compressed files: flips and paired per-example tests (K = 1).

Statistics when K = 1. When the dense population has exactly one member, the
population measures (Welch tests and t intervals over members, the core units) have no spread over
training seeds to work with: the uncertainty left is the finite test set's. This module then
compares, for every compressed variant v, the reference network (the dense member) with its
compressed file (v's member paired with it, `run.pairing_of(v)`) on the same test examples,
with the paired per-example methods of `tf_forget.stats.paired` and `paired_bootstrap`:

* `k1_topline`: top-1 accuracy change with Newcombe's hybrid score 95% interval
  (`paired.paired_accuracy_difference`), the flip counts and the exact McNemar p
  (`paired.mcnemar_exact`);
* `k1_classes`: per-class recall change, exact McNemar per class, Benjamini-Hochberg over the
  classes (`paired.per_class_recall_change`);
* `k1_subgroups` (protected attributes only): error / FNR / FPR change of each subgroup of
  `subgroups.subgroup_masks` (docs/spec.md §4.2: aggregate, each value of each protected attribute
  and their intersections; a rate without a denominator is NaN, never 0) with a seeded paired
  bootstrap interval (`paired_bootstrap.paired_bootstrap_change`); FNR / FPR need a binary
  task, as the `subgroups` table. The resamples of a subgroup and measure depend only
  on its denominator set and the seed, not on the candidate, so `subgroup_rows` draws them once
  for every variant and counts per candidate (`bootstrap_intervals`): the same numbers as one
  `paired_bootstrap_change` call per variant, a few times faster (benchmarks/k1_stats_bench.py
  `--check` compares the two);
* `flips`: every example whose prediction changed, `broken` (right -> wrong), `fixed`
  (wrong -> right) or `changed` (wrong -> another wrong) (`paired.flips`).

With K >= 2 the population measures apply as the papers define them (docs/spec.md §1.3 pairs member
k with member k; §3.1's Welch test over members), so `compute` returns nothing (no table, note or
setting) unless the dense population has exactly one member, so a K > 1 report is unchanged. The
conclusions are about this trained network on data like this test set, not about its training
recipe.
"""

import numpy as np
import pandas as pd
from scipy import stats

from tf_forget.artifacts import names
from tf_forget.report import collect
from tf_forget.stats import paired
from tf_forget.stats import paired_bootstrap
from tf_forget.stats import subgroups
from tf_forget.stats import validate

SETTINGS_KEY = "single_network"
NOTES_KEY = "single_network"
DESIGN = (
  "single network (K = 1): one reference network against its own compressed files; "
  "examples are the unit of uncertainty"
)
METHODS = {
  "top1_test": "exact McNemar (two-sided binomial test of the discordant pairs)",
  "top1_interval": f"{paired.INTERVAL_METHOD} (Newcombe 1998, method 10)",
  "class_test": "exact McNemar per class, Benjamini-Hochberg adjusted over the classes",
  "class_interval": f"{paired.INTERVAL_METHOD} (Newcombe 1998, method 10)",
  "subgroup_interval": f"{paired_bootstrap.BOOTSTRAP_METHOD} (the same examples resampled for both)",
  "confidence": paired.CONFIDENCE,
}
TOPLINE_METHOD = f"mcnemar_exact + {paired.INTERVAL_METHOD}"
FLIP_KINDS = ("broken", "fixed", "changed")
TOPLINE_COLUMNS = [
  "variant",
  "n",
  "accuracy_reference",
  "accuracy_candidate",
  "difference",
  "low",
  "high",
  "broken",
  "fixed",
  "changed",
  "mcnemar_p",
  "method",
]
CLASS_COLUMNS = [
  "variant",
  "class",
  "class_name",
  "n",
  "recall_reference",
  "recall_candidate",
  "change",
  "low",
  "high",
  "broken",
  "fixed",
  "p_value",
  "p_adjusted",
  "significant",
]
SUBGROUP_COLUMNS = [
  "variant",
  "subgroup",
  "measure",
  "n",
  "rate_reference",
  "rate_candidate",
  "change",
  "low",
  "high",
  "n_resamples",
]
FLIP_COLUMNS = ["variant", "id", "label", "reference_prediction", "candidate_prediction", "kind"]


def applies(run):
  """True when the dense population on the evaluation split has exactly one member."""
  dense = run.eval.get(names.DENSE)
  return dense is not None and dense.members.size == 1


def candidate_pairs(run):
  """{variant: (reference top-1 `[N]`, candidate top-1 `[N]`)} for the compressed variants
  with a member paired with the one dense member (the first such member), and notes for the
  others."""
  dense = run.eval[names.DENSE]
  k_ref = int(dense.members[0])
  out, notes = {}, []
  for variant, pop in run.eval.items():
    if variant == names.DENSE:
      continue
    ks = [int(kt) for k0, kt in run.pairing_of(variant)["pairs"] if int(k0) == k_ref]
    if not ks:
      notes.append(f"{variant}: no member paired with dense member {k_ref}; not compared")
      continue
    if len(ks) > 1:
      notes.append(
        f"{variant}: {len(ks)} members pair with dense member {k_ref}; member {ks[0]} compared"
      )
    row = list(pop.members).index(ks[0])
    out[variant] = (dense.top1[0], pop.top1[row])
  return out, notes


def topline_row(variant, y, a, b):
  """One `k1_topline` row: accuracy change, Newcombe interval, flips, McNemar p."""
  diff = paired.paired_accuracy_difference(y, a, b)
  counts = paired.flips(y, a, b).counts
  return {
    "variant": variant,
    "n": diff["n"],
    "accuracy_reference": diff["accuracy_a"],
    "accuracy_candidate": diff["accuracy_b"],
    "difference": diff["difference"],
    "low": diff["low"],
    "high": diff["high"],
    "broken": counts["broken"],
    "fixed": counts["fixed"],
    "changed": counts["changed"],
    "mcnemar_p": paired.mcnemar_exact(y, a, b)["p_value"],
    "method": TOPLINE_METHOD,
  }


def class_names_of(run):
  """One name per class (the data set's, else the class index as text)."""
  if len(run.class_names) == run.num_classes:
    return [str(c) for c in run.class_names]
  return [str(c) for c in range(run.num_classes)]


def class_rows(variant, y, a, b, num_classes, class_names, alpha):
  """`k1_classes` rows of one variant: recall change per class, McNemar, BH."""
  r = paired.per_class_recall_change(y, a, b, num_classes, alpha=alpha)
  return pd.DataFrame(
    {
      "variant": variant,
      "class": np.arange(num_classes),
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
    columns=CLASS_COLUMNS,
  )


def subgroup_masks(run):
  """(name -> bool `[N]` of the `subgroups` table's subgroups, or None; notes)."""
  protected = tuple(run.protected_attributes)
  if not protected:
    return None, []
  missing = [p for p in protected if p not in run.attributes]
  if missing:
    return None, [f"attributes {missing} missing from the evaluation split; no k1_subgroups"]
  n = run.eval[names.DENSE].labels.size
  return subgroups.subgroup_masks(run.attributes, n, protected), []


def rate_measures(num_classes):
  """The subgroup rates of a task: error, and FNR / FPR for a binary one (positive = 1)."""
  return paired_bootstrap.MEASURES if num_classes == 2 else ("error",)


def check_subgroup_inputs(y, a, b, measures, seed, n_resamples):
  """Raises what `paired_bootstrap.paired_bootstrap_change` would raise for these inputs (the
  library's own checks: an empty subset returns before any resampling)."""
  nothing = np.zeros(np.shape(y)[:1] or (0,), dtype=bool)
  for measure in measures:
    paired_bootstrap.paired_bootstrap_change(
      y, a, b, nothing, measure, n_resamples=n_resamples, seed=seed
    )


def bootstrap_intervals(err_a, errs_b, seed, n_resamples, confidence=paired.CONFIDENCE):
  """[(low, high)] of `paired_bootstrap.paired_bootstrap_change` for several candidates at once.

  The resamples are those of `paired_bootstrap_change` (`scipy.stats.bootstrap`, paired,
  vectorized, percentile method): batches of max(1, `paired_bootstrap.BOOTSTRAP_CELLS` // n)
  rows of n indices drawn by `rng.integers(0, n, (rows, n))` from `np.random.default_rng(seed)`, and
  δ* = mean(err_b[i]) − mean(err_a[i]) per row. They depend only on n and the seed, so they
  are drawn once for every candidate. A mean of 0/1 values is its exact count over n, so
  counts give the same floats as scipy's means of float copies; the indicators are packed as
  bit fields of 64-bit words (a field holds a count up to n), so that one gather and one sum
  count several of them.

  Args:
    err_a: bool `[n]` reference indicators over the denominator set (n >= 2).
    errs_b: list of bool `[n]` candidate indicators over the same set.
    seed: int seed of the resampling.
    n_resamples: B.
    confidence: level in (0, 1).

  Returns:
    one (low, high) per candidate, in order.
  """
  n = int(err_a.size)
  columns = [err_a] + list(errs_b)
  width = n.bit_length()
  per_word = 64 // width
  field = np.uint64((1 << width) - 1)
  words = []
  for first in range(0, len(columns), per_word):
    word = np.zeros(n, dtype=np.uint64)
    for j, column in enumerate(columns[first : first + per_word]):
      word |= np.asarray(column, dtype=np.uint64) << np.uint64(j * width)
    words.append(word)
  counts = [[] for _ in columns]
  rng = np.random.default_rng(seed)
  rows = max(1, paired_bootstrap.BOOTSTRAP_CELLS // n)
  for start in range(0, n_resamples, rows):
    index = rng.integers(0, n, (min(rows, n_resamples - start), n))
    for w, word in enumerate(words):
      total = word[index].sum(axis=-1)
      for j in range(min(per_word, len(columns) - w * per_word)):
        counts[w * per_word + j].append(((total >> np.uint64(j * width)) & field).astype(np.int64))
  mean_a = np.concatenate(counts[0]) / n
  alpha = np.asarray((1 - confidence) / 2, dtype=np.float64)
  interval = np.stack((alpha, 1 - alpha), axis=-1)
  out = []
  for count in counts[1:]:
    ci = stats.quantile(np.concatenate(count) / n - mean_a, interval, axis=-1)
    out.append((float(ci[0]), float(ci[1])))
  return out


def subgroup_rows(candidates, y, a, masks, measures, seed, n_resamples):
  """`k1_subgroups` rows of the variants `candidates` ({variant: candidate top-1 `[N]`}, their
  inputs checked by `check_subgroup_inputs`): each subgroup's rate change with its interval,
  as `paired_bootstrap.paired_bootstrap_change` gives it, in the order variant, subgroup,
  measure."""
  y = validate.check_labels(y, name="y")
  a = validate.check_labels(a, name="a")
  bs = {v: validate.check_labels(b, name="b") for v, b in candidates.items()}
  nan = float("nan")
  rows = {}
  # The rates exactly as `paired_bootstrap` defines them (`rate_examples`, `mean_change`).
  for name, mask in masks.items():
    mask = np.asarray(mask, dtype=bool)
    for measure in measures:
      err_a, _ = paired_bootstrap.rate_examples(y, a, a, mask, measure, 1)
      errs = {
        v: paired_bootstrap.rate_examples(y, a, b, mask, measure, 1)[1] for v, b in bs.items()
      }
      n = int(err_a.size)
      intervals = (
        bootstrap_intervals(err_a, list(errs.values()), seed, int(n_resamples))
        if n >= 2
        else [(nan, nan)] * len(errs)
      )
      for (variant, err_b), (low, high) in zip(errs.items(), intervals):
        row = {
          "variant": variant,
          "subgroup": name,
          "measure": measure,
          "n": n,
          "rate_reference": nan,
          "rate_candidate": nan,
          "change": nan,
          "low": low,
          "high": high,
          "n_resamples": int(n_resamples),
        }
        if n:
          row.update(
            rate_reference=float(err_a.mean()),
            rate_candidate=float(err_b.mean()),
            change=float(paired_bootstrap.mean_change(err_a, err_b)),
          )
        rows[variant, name, measure] = row
  return [rows[v, name, measure] for v in bs for name in masks for measure in measures]


def flip_rows(variant, ids, y, a, b, paths=None):
  """`flips` rows of one variant: every flipped example with its kind, and with `paths`
  ({id: path}, `collect.example_paths`) its file's path after the id."""
  f = paired.flips(y, a, b)
  kind = np.full(y.size, "", dtype=object)
  for name in FLIP_KINDS:
    kind[getattr(f, name)] = name
  where = np.flatnonzero(kind != "")
  columns = dict(variant=variant, id=ids[where])
  if paths is not None:
    columns["path"] = collect.paths_of(paths, ids[where])
  columns.update(
    label=y[where],
    reference_prediction=a[where],
    candidate_prediction=b[where],
    kind=kind[where].astype(str),
  )
  return pd.DataFrame(columns, columns=_with_path(FLIP_COLUMNS, paths))


def _with_path(columns, paths):
  """`columns` with `path` after `id` when the data set names its examples."""
  if paths is None:
    return list(columns)
  i = columns.index("id") + 1
  return list(columns[:i]) + ["path"] + list(columns[i:])


def settings(seed, n_resamples, alpha):
  """The report's `settings.single_network`: the design and the methods, in words."""
  return {
    "design": DESIGN,
    "methods": dict(METHODS, alpha=alpha),
    "n_resamples": int(n_resamples),
    "seed": seed,
  }


def _concat(frames, columns):
  return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)


def variant_tables(run, variant, a, b, masks, seed, alpha, n_resamples, paths=None):
  """One variant's parts but its `k1_subgroups` rows (made for every variant at once by
  `subgroup_rows`): (`k1_topline` row, `k1_classes` frame, `flips` frame). Raises, in the same
  order, what the per-variant measures raise for this variant."""
  dense = run.eval[names.DENSE]
  y = dense.labels
  if masks is not None:
    check_subgroup_inputs(y, a, b, rate_measures(run.num_classes), seed, n_resamples)
  return (
    topline_row(variant, y, a, b),
    class_rows(variant, y, a, b, run.num_classes, class_names_of(run), alpha),
    flip_rows(variant, dense.ids, y, a, b, paths),
  )


def compute(run, seed, alpha=0.05, n_resamples=paired_bootstrap.MIN_RESAMPLES):
  """The K = 1 tables of a run (see the module docstring).

  Args:
    run: `collect.Run`.
    seed: seed of the subgroup bootstrap (the report's `seed`).
    alpha: false discovery rate of the per-class Benjamini-Hochberg adjustment.
    n_resamples: bootstrap resamples (>= `paired_bootstrap.MIN_RESAMPLES`).

  Returns:
    (tables: name -> DataFrame, notes: {NOTES_KEY: [str]}, settings: {SETTINGS_KEY: dict}),
    all three empty unless the dense population has exactly one member.
  """
  if not applies(run):
    return {}, {}, {}
  pairs, notes = candidate_pairs(run)
  masks, mask_notes = subgroup_masks(run)
  paths = collect.example_paths(run)
  notes = [f"{DESIGN}; paired per-example tests (section 1b)"] + notes + mask_notes
  top, classes, flips, compared = [], [], [], {}
  for variant, (a, b) in pairs.items():
    try:
      row, cls, flp = variant_tables(run, variant, a, b, masks, seed, alpha, n_resamples, paths)
    except validate.StatsInputError as e:
      notes.append(f"{variant}: K = 1 measures not computed ({e})")
      continue
    top.append(row)
    classes.append(cls)
    flips.append(flp)
    compared[variant] = b
  groups = []
  if masks is not None and compared:
    dense = run.eval[names.DENSE]
    groups = subgroup_rows(
      compared,
      dense.labels,
      dense.top1[0],
      masks,
      rate_measures(run.num_classes),
      seed,
      n_resamples,
    )
  tables = {
    "k1_topline": pd.DataFrame(top, columns=TOPLINE_COLUMNS),
    "k1_classes": _concat(classes, CLASS_COLUMNS),
    "flips": _concat(flips, _with_path(FLIP_COLUMNS, paths)),
  }
  if masks is not None:
    tables["k1_subgroups"] = pd.DataFrame(groups, columns=SUBGROUP_COLUMNS)
  return tables, {NOTES_KEY: notes}, {SETTINGS_KEY: settings(seed, n_resamples, alpha)}
