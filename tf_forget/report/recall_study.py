"""002's study of one-shot pruning within one run: α per (algorithm, ratio) and the §7 tests.

Applies when the run has one-shot variants (`oneshot_<alg>_r<r>` / `oneshot_<alg>_t<t>`;
docs/spec.md §6.1-6.4) in float32 (the pruned network itself, as in 002; quantized
children keep their row in the `recall_distortion` table only). Member k_t of a one-shot variant is
compared with its dense parent (`tf_forget.report.pairing`), so α_{t,P}(m) is 002's slope of
one dense model m before and after pruning (002 §5, §6.2). Tables:

* `oneshot_alpha`: one row per (algorithm P, ratio t): mean α with its t-based CI
  (t_{0.995, K−1} at 99%) and label "<" / ">" / "?", pooled α̂ with uncentered r², mean
  accuracy and recall variance before / after (002 Figures 1-5, Tables 10-11;
  docs/spec.md §5.2-5.5);
* `oneshot_ratio_tests`: per P, consecutive ratios t_i < t_{i+1}, paired, H_a:
  E[α_{t_i}] < E[α_{t_{i+1}}] (002 §7.1, Table 4);
* `oneshot_algorithm_tests`: per t, every pair of algorithms, paired, two-sided (002 §7.4,
  Table 8);
* `oneshot_mp_vs_up`: MP vs UP, one row per ratio cell, paired, two-sided (002 Table 9).

Bonferroni: each p-value times the number of rows in its column — the ratio pairs of one
algorithm, the algorithm pairs at one ratio, every MP-vs-UP cell — capped at 1 (002 §6.2;
docs/spec.md §5.4). A paired test uses the dense models present on both of its sides (the parent k's
both variants have, with a defined α). 002's model-size (M, Tables 5-6) and data-set (D,
Table 7) tests need several architectures / data sets, which one run does not have.

Numbers come from the `recall_distortion` unit (the per-member α and its table,
`units.recall`) and
`tf_forget.stats.recall_distortion`; figures from `recall_study_plots`. No TensorFlow.
"""

import dataclasses
import itertools
from typing import Dict, List

import numpy as np
import pandas as pd

from tf_forget.artifacts import errors
from tf_forget.artifacts import names
from tf_forget.report import pairing as pairing_lib
from tf_forget.stats import accuracy
from tf_forget.stats import recall_distortion
from tf_forget.stats import recall_tests
from tf_forget.stats import validate

ALPHA_COLUMNS = [
  "pairing",
  "members",
  "n",
  "mean_alpha",
  "ci_low",
  "ci_high",
  "label",
  "alpha_hat",
  "r2",
  "mean_accuracy_0",
  "mean_accuracy_t",
  "recall_variance_0",
  "recall_variance_t",
]
TEST_COLUMNS = [
  "variant_first",
  "variant_second",
  "alternative",
  "n",
  "mean_first",
  "mean_second",
  "statistic",
  "p_value",
  "rows",
  "p_bonferroni",
]
MODELS_NOTE = (
  "002's model-size (M, Tables 5-6) and data-set (D, Table 7) comparisons need "
  "several architectures / data sets; one run has one of each, so they are not "
  "computed"
)


@dataclasses.dataclass
class Study:
  """002's study of a run's one-shot variants.

  Attributes:
    tables: `oneshot_alpha`, `oneshot_ratio_tests`, `oneshot_algorithm_tests`,
      `oneshot_mp_vs_up` (see the module docstring; docs/artifacts/report.md).
    notes: one-line notes.
    cells: one dict per float32 one-shot variant, in table order: `variant`, `algorithm`,
      `ratio`, `sparsity`, `alphas` {k_dense: α}, `nrb_0` / `nrb_t` float `[K, C]` normalized
      recall balance of the paired dense parents / pruned members (None if undefined).
  """

  tables: Dict[str, pd.DataFrame]
  notes: List[str]
  cells: List[dict]


def ratio_of(trained):
  """Compression ratio r of a one-shot `names.TrainedVariant` (r = 1 / (1 − t) for a fraction)."""
  return float(trained.ratio if trained.ratio is not None else 1.0 / (1.0 - trained.fraction))


def oneshot_cells(variants):
  """The float32 plain one-shot variants among `variants`, ordered by algorithm then ratio.

  Returns:
    (list of dicts `variant`, `algorithm`, `ratio`, `sparsity`; list of the other one-shot
    variants — quantized or encoded children).
  """
  cells, children = [], []
  for v in variants:
    try:
      audited = names.parse_variant(v)
      trained = names.parse_trained(audited.member_variant)
    except errors.Error:
      continue
    if not trained.oneshot:
      continue
    if audited.format != names.DEFAULT_FORMAT or audited.encoding != names.DEFAULT_ENCODING:
      children.append(v)
      continue
    cells.append(
      {
        "variant": v,
        "algorithm": trained.algorithm,
        "ratio": ratio_of(trained),
        "sparsity": trained.sparsity,
        "by_fraction": trained.fraction is not None,
      }
    )
  cells.sort(
    key=lambda c: (
      names.ONESHOT_ALGORITHMS.index(c["algorithm"]),
      round(c["ratio"], 9),
      c["by_fraction"],
      c["variant"],
    )
  )
  return cells, children


def _aligned(a, b):
  """Slopes of the dense parents both {k_dense: α} dicts have, α defined on both sides."""
  ks = sorted(k for k in a if k in b and np.isfinite(a[k]) and np.isfinite(b[k]))
  return np.array([a[k] for k in ks], np.float64), np.array([b[k] for k in ks], np.float64)


def _tests(groups, key, alternative):
  """One `paired_tests` column per group: groups = [(key value, [(first, second, cell_a,
  cell_b)])]; returns the concatenated table with `key`, `first`, `second` in front."""
  frames = []
  for value, comparisons in groups:
    if not comparisons:
      continue
    table = recall_tests.paired_tests(
      [(f, s, *_aligned(a["alphas"], b["alphas"])) for f, s, a, b in comparisons], alternative
    )
    table.insert(0, key, value)
    table.insert(3, "variant_first", [a["variant"] for _, _, a, _ in comparisons])
    table.insert(4, "variant_second", [b["variant"] for _, _, _, b in comparisons])
    frames.append(table)
  if not frames:
    return pd.DataFrame(columns=[key, "first", "second"] + TEST_COLUMNS)
  return pd.concat(frames, ignore_index=True)


def _by_ratio(cells):
  """{rounded ratio: {algorithm: cell}}, one cell per (ratio, algorithm): the first in order."""
  out = {}
  for c in cells:
    out.setdefault(round(c["ratio"], 9), {}).setdefault(c["algorithm"], c)
  return dict(sorted(out.items()))


def ratio_tests(cells):
  """002 §7.1 / Table 4 per algorithm: consecutive ratios, paired, alternative "less".

  Args:
    cells: `Study.cells`-like dicts (`variant`, `algorithm`, `ratio`, `alphas` {k_dense: α}).

  Returns:
    DataFrame `algorithm`, `first`, `second` (ratios) + `TEST_COLUMNS`; Bonferroni × the
    number of ratio pairs of that algorithm.
  """
  groups = []
  for alg in names.ONESHOT_ALGORITHMS:
    ordered = [c for r, by_alg in _by_ratio(cells).items() for a, c in by_alg.items() if a == alg]
    groups.append(
      (alg, [(a["ratio"], b["ratio"], a, b) for a, b in zip(ordered[:-1], ordered[1:])])
    )
  return _tests(groups, "algorithm", "less")


def algorithm_tests(cells):
  """002 §7.4 / Table 8 per ratio: every pair of algorithms, paired, two-sided.

  Returns:
    DataFrame `ratio`, `first`, `second` (algorithms, in `names.ONESHOT_ALGORITHMS` order) +
    `TEST_COLUMNS`; Bonferroni × the number of algorithm pairs at that ratio (6 for 4).
  """
  groups = []
  for ratio, by_alg in _by_ratio(cells).items():
    ordered = [by_alg[a] for a in names.ONESHOT_ALGORITHMS if a in by_alg]
    groups.append(
      (
        ratio,
        [(a["algorithm"], b["algorithm"], a, b) for a, b in itertools.combinations(ordered, 2)],
      )
    )
  return _tests(groups, "ratio", "two-sided")


def mp_vs_up_tests(cells):
  """002 Table 9 within one model: MP vs UP at each ratio both have, paired, two-sided.

  Returns:
    DataFrame `ratio`, `first` ("mp"), `second` ("up") + `TEST_COLUMNS`; one column of
    rows: Bonferroni × the number of ratio cells (002: × 25 over 5 models × 5 ratios).
  """
  comparisons = [
    (ratio, by_alg["mp"], by_alg["up"])
    for ratio, by_alg in _by_ratio(cells).items()
    if "mp" in by_alg and "up" in by_alg
  ]
  if not comparisons:
    return _tests([], "ratio", "two-sided")
  table = _tests([("all", [("mp", "up", a, b) for _, a, b in comparisons])], "ratio", "two-sided")
  table["ratio"] = [r for r, _, _ in comparisons]
  return table


def _balances(run, variant):
  """(B̄ of the paired dense parents, B̄ of the pruned members), float `[K, C]`, or Nones."""
  q0, qt = pairing_lib.paired(
    run.eval[names.DENSE], run.eval[variant], run.pairing_of(variant)["pairs"]
  )
  if not q0.members.size:
    return None, None
  try:
    return tuple(
      recall_distortion.normalized_recall_balance(
        accuracy.per_class_recall(q.top1, q.labels, run.num_classes),
        accuracy.top1_accuracy(q.top1, q.labels),
      )
      for q in (q0, qt)
    )
  except validate.StatsInputError:
    return None, None


def alpha_table(cells, rd_table, pruning):
  """`oneshot_alpha`: the `recall_distortion` rows of the cells, with algorithm and ratio.

  Args:
    cells: `Study.cells`.
    rd_table: the `recall_distortion` table (`units.recall`).
    pruning: variant -> its members' `pruning` record (`Run.pairing`), for docs/spec.md §6.3's
      `ratio_over` and `exclude_classifier` (None when not recorded).
  """
  rows = rd_table.set_index("variant")
  out = []
  for c in cells:
    row = rows.loc[c["variant"]]
    record = pruning.get(c["variant"]) or {}
    out.append(
      {
        "variant": c["variant"],
        "algorithm": c["algorithm"],
        "ratio": c["ratio"],
        "sparsity": c["sparsity"],
        "ratio_over": record.get("ratio_over"),
        "exclude_classifier": record.get("exclude_classifier"),
        **{k: row[k] for k in ALPHA_COLUMNS},
      }
    )
  return pd.DataFrame(
    out,
    columns=["variant", "algorithm", "ratio", "sparsity", "ratio_over", "exclude_classifier"]
    + ALPHA_COLUMNS,
  )


def compute(run, variants, rd_table):
  """002's study of the run's one-shot variants, or None when it has none.

  Args:
    run: a `collect.Run`.
    variants: per variant its `alphas` and `alpha_pairs` [k_dense, k_t] (the
      `alpha_summaries` of `units.recall`).
    rd_table: the `recall_distortion` table (`units.recall`).

  Returns:
    `Study` or None.
  """
  cells, children = oneshot_cells(v for v in run.eval if v != names.DENSE)
  if not cells:
    return None
  notes = [MODELS_NOTE]
  if children:
    notes.append(
      f"quantized / encoded one-shot variants ({', '.join(children)}) are in the "
      "recall_distortion table, not in this study (002 prunes float networks)"
    )
  for c in cells:
    s = variants[c["variant"]]
    c["alphas"] = {
      int(k0): float(a) for (k0, _), a in zip(s.get("alpha_pairs") or [], s.get("alphas") or [])
    }
    c["nrb_0"], c["nrb_t"] = _balances(run, c["variant"])
  tables = {
    "oneshot_alpha": alpha_table(
      cells, rd_table, {c["variant"]: run.pairing_of(c["variant"]).get("pruning") for c in cells}
    ),
    "oneshot_ratio_tests": ratio_tests(cells),
    "oneshot_algorithm_tests": algorithm_tests(cells),
    "oneshot_mp_vs_up": mp_vs_up_tests(cells),
  }
  for name, why in (
    ("oneshot_ratio_tests", "no algorithm has two ratios"),
    ("oneshot_algorithm_tests", "no ratio has two algorithms"),
    ("oneshot_mp_vs_up", "no ratio has both mp and up"),
  ):
    if tables[name].empty:
      notes.append(f"{name}: {why}")
    for row in tables[name].itertuples(index=False):
      if row.n < 2:
        notes.append(
          f"{name}: {row.variant_first} vs {row.variant_second}: {row.n} dense "
          f"model{'' if row.n == 1 else 's'} with a defined α on both sides; a "
          "paired test needs 2"
        )
  used = {(c["algorithm"], round(c["ratio"], 9)) for c in cells}
  if len(used) < len(cells):
    notes.append(
      "one-shot variants with the same algorithm and ratio (given as r and as t): "
      "the tests use the first in table order"
    )
  return Study(tables=tables, notes=notes, cells=cells)
