"""002's MNIST / LeNet-5 tables reproduced: the per-model table, our numbers, the paper's beside.

A run of 002's protocol (preset `lenet5_002`, one-shot MP at ratios 2, 4, 10, 20, 50;
docs/reproductions/002_mnist.md) is reduced to one small table, `members_table`: one row per
network — each parent (`ratio` 1) and each pruned child — with its test accuracy and per-class
recall, from the same float32 predictions the report's 002 section reads. Everything on the
reproduction page is computed from that table alone (`compute`, `render`), so anyone can
recompute the page from the committed CSV without training:

* Table 10: mean accuracy of the parents;
* Table 11: mean recall variance (ddof = 0 over classes, docs/spec.md §5.5) before and at each
  ratio;
* Table 3, MNIST column: paired one-sided t-tests of α between consecutive ratios, Bonferroni
  × 4 (docs/spec.md §5.4);
* Figures 3 / 11: mean α per ratio with its t-based 99% interval and label (§5.3).

Intervals are t-based 99% intervals over models (002's level). No TensorFlow.
"""

import numpy as np
import pandas as pd

from tf_forget.artifacts import names
from tf_forget.report import pairing as pairing_lib
from tf_forget.stats import accuracy
from tf_forget.stats import intervals
from tf_forget.stats import recall_distortion
from tf_forget.stats import recall_tests

RATIOS = (2, 4, 10, 20, 50)
CONFIDENCE = 0.99
# The paper's numbers (002 appendix D Table 10, appendix F Table 11, §7 Table 3), as printed.
PAPER = {
  "accuracy": 0.989,
  "recall_variance": {1: 0.0038, 2: 0.0038, 4: 0.0038, 10: 0.0038, 20: 0.0039, 50: 0.0111},
  "ratio_tests": {(2, 4): "0.389", (4, 10): "1.000", (10, 20): "0.071", (20, 50): "<0.001"},
}


def variant_of(ratio, algorithm="mp"):
  """The run's variant name of a one-shot ratio (`oneshot_mp_r2`); the parents' for ratio 1."""
  return names.DENSE if ratio == 1 else f"oneshot_{algorithm}_r{ratio:g}"


def members_table(run, ratios=RATIOS):
  """One row per network of a run: `model` (parent k), `ratio` (1 = the parent), `accuracy`,
  `recall_<c>` for every class.

  Args:
    run: a `tf_forget.report.collect.Run` holding `dense` and `oneshot_mp_r<r>` predictions.
    ratios: the one-shot ratios to take.

  Returns:
    DataFrame sorted by (model, ratio); a pruned network's `model` is its parent's k.
  """
  rows = []
  dense = run.eval[names.DENSE]
  for ratio in (1,) + tuple(ratios):
    variant = variant_of(ratio)
    if variant not in run.eval:
      continue
    pop = run.eval[variant]
    if ratio == 1:
      parents = pop.members
    else:
      _, pop = pairing_lib.paired(dense, pop, run.pairing_of(variant)["pairs"])
      parents = np.asarray([k0 for k0, _ in run.pairing_of(variant)["pairs"]], np.int64)
    recall = accuracy.per_class_recall(pop.top1, pop.labels, run.num_classes)
    acc = accuracy.top1_accuracy(pop.top1, pop.labels)
    for i, k in enumerate(parents):
      rows.append(
        {
          "model": int(k),
          "ratio": int(ratio),
          "accuracy": float(acc[i]),
          **{f"recall_{c}": float(recall[i, c]) for c in range(run.num_classes)},
        }
      )
  return pd.DataFrame(rows).sort_values(["model", "ratio"]).reset_index(drop=True)


def _recall(table):
  return table[[c for c in table.columns if c.startswith("recall_")]].to_numpy(np.float64)


def alphas(table, ratio):
  """α_t(m) of every parent m with a child at `ratio` (002 §5, docs/spec.md §5.2), by model."""
  before = table[table.ratio == 1].set_index("model")
  after = table[table.ratio == ratio].set_index("model")
  models = sorted(set(before.index) & set(after.index))
  nrb = [
    recall_distortion.normalized_recall_balance(
      _recall(t.loc[models]), t.loc[models, "accuracy"].to_numpy()
    )
    for t in (before, after)
  ]
  return pd.Series(recall_distortion.model_slope(*nrb), index=models)


def complete(table):
  """The rows of the parents that have a child at every ratio of the table (a run still going
  has some parents without all their children: every column then counts the same parents)."""
  counts = table.groupby("model").ratio.nunique()
  models = counts[counts == table.ratio.nunique()].index
  return table[table.model.isin(models)]


def compute(table):
  """Our numbers of the four published results, from `members_table`'s table.

  Returns:
    dict: `models` (parents), `accuracy` (mean_interval of the parents' accuracy),
    `recall_variance` {ratio: mean_interval}, `alpha` {ratio: mean_slope_ci}, `accuracy_t`
    {ratio: mean_interval}, `ratio_tests` (DataFrame of `ratio_trend_tests`, Bonferroni by
    its rows).
  """
  ratios = sorted(r for r in table.ratio.unique() if r != 1)
  table = complete(table)
  parents = table[table.ratio == 1]
  out = {
    "models": int(len(parents)),
    "accuracy": intervals.mean_interval(parents.accuracy, CONFIDENCE),
    "recall_variance": {},
    "accuracy_t": {},
    "alpha": {},
  }
  for ratio in [1] + ratios:
    rows = table[table.ratio == ratio]
    out["recall_variance"][ratio] = intervals.mean_interval(
      recall_distortion.recall_variance(_recall(rows)), CONFIDENCE
    )
    out["accuracy_t"][ratio] = intervals.mean_interval(rows.accuracy, CONFIDENCE)
  by_ratio = {}
  for ratio in ratios:
    a = alphas(table, ratio)
    out["alpha"][ratio] = recall_distortion.mean_slope_ci(a.to_numpy(), CONFIDENCE)
    by_ratio[ratio] = a
  common = sorted(set.intersection(*(set(a.index) for a in by_ratio.values()))) if ratios else []
  out["ratio_tests"] = recall_tests.ratio_trend_tests(
    {r: a.loc[common].to_numpy() for r, a in by_ratio.items()}
  )
  return out


def p_text(p):
  """A p-value as 002's tables print it: three decimals, "<0.001" below."""
  return "<0.001" if p < 0.0005 else f"{p:.3f}"


def _ci(d, digits=4):
  """`mean [low, high]` of a `mean_interval` / `mean_slope_ci` dict."""
  return f"{d['mean']:.{digits}f} [{d['low']:.{digits}f}, {d['high']:.{digits}f}]"


def _inside(value, d):
  return d["low"] <= value <= d["high"]


def _where(value, d, digits=4):
  """Where a published value lies against our 99% interval, in words with the gap."""
  if _inside(value, d):
    return "inside our interval"
  side = "below" if value < d["low"] else "above"
  edge = d["low"] if value < d["low"] else d["high"]
  return f"{side} our interval by {abs(value - edge):.{digits}f}"


def comparison_rows(result):
  """The side-by-side rows: (result, paper, ours with 99% interval, difference, where)."""
  rows = [
    (
      "Table 10: mean accuracy before pruning",
      f"{PAPER['accuracy']:.3f}",
      _ci(result["accuracy"]),
      f"{result['accuracy']['mean'] - PAPER['accuracy']:+.4f}",
      _where(PAPER["accuracy"], result["accuracy"]),
    )
  ]
  for ratio, published in PAPER["recall_variance"].items():
    if ratio not in result["recall_variance"]:
      continue
    ours = result["recall_variance"][ratio]
    label = "before pruning" if ratio == 1 else f"ratio {ratio}"
    rows.append(
      (
        f"Table 11: mean recall variance, {label}",
        f"{published:.4f}",
        _ci(ours),
        f"{ours['mean'] - published:+.4f}",
        _where(published, ours),
      )
    )
  return rows


def test_rows(result):
  """Table 3's MNIST column beside ours: (pair, paper p, our p (Bonferroni), t, n, agree)."""
  rows = []
  for r in result["ratio_tests"].itertuples(index=False):
    pair = (int(r.first), int(r.second))
    paper = PAPER["ratio_tests"].get(pair)
    if paper is None:
      continue
    paper_sig = paper.startswith("<") or float(paper) <= 0.05
    ours_sig = r.p_bonferroni <= 0.05
    rows.append(
      (
        f"{pair[0]} vs {pair[1]}",
        paper,
        p_text(r.p_bonferroni),
        f"{r.statistic:+.2f}",
        "yes" if paper_sig == ours_sig else "no",
      )
    )
  return rows


def _collapse(result, kept):
  """The sentence on the largest ratio: what it kept per layer and what accuracy that left."""
  ratio = max(result["accuracy_t"])
  k = kept.get(str(ratio))
  if not k:
    return None
  layers = ", ".join(
    f"{name} {100 * frac:.3g}%" for name, frac in k.items() if name not in ("weights", "total")
  )
  return (
    f"Ratio {ratio}: counted over all {k['total']:,} parameters with the classifier "
    f"unpruned, as 002's released code counts, {k['weights']:,.0f} are kept; per layer "
    f"{layers} of the weights. Fine-tuned, our networks reach a mean accuracy of "
    f"{result['accuracy_t'][ratio]['mean']:.4f} (chance: 0.1). 002's recall variance at "
    f"ratio {ratio}, {PAPER['recall_variance'].get(ratio)}, is that of networks far from "
    "chance (one that predicts a single class has 0.09): its networks kept more than "
    "this counting leaves, or trained differently."
  )


def differences(table, result, kept=None):
  """Where ours and 002's differ, in numbers: member count, the recalls behind Table 11, Table 3,
  and what the largest ratio kept (`kept`: the run facts' per-ratio kept weights)."""
  from scipy import stats as sp_stats

  k = result["models"]
  half = {n: sp_stats.t.ppf(0.995, n - 1) / np.sqrt(n) for n in (k, 30)}
  parents = table[table.ratio == 1]
  recall = _recall(parents)
  lines = [
    f"Members: {k} parents where 002 has 30. A t-based 99% interval's half-width is "
    f"t_0.995,K−1 · s / √K: {half[k]:.3f} s at K = {k} and {half[30]:.3f} s at K = 30, so "
    f"ours are {half[k] / half[30]:.1f}× as wide as 30 parents would give.",
    f"Accuracy: our parents score {parents.accuracy.min():.4f} to {parents.accuracy.max():.4f} "
    f"(SD {parents.accuracy.std(ddof=1):.4f}); docs/spec.md §7.3 lists 002's Table 10 "
    "accuracies among the published values not to use as goldens.",
  ]
  worst = recall.mean(axis=0)
  mu = float(recall.mean())
  var0 = PAPER["recall_variance"][1]
  one_class = 1 - np.sqrt(var0 / 0.09)  # one recall at x, nine at 1: variance 0.09 (1 − x)²
  lines.append(
    "Recall variance: ten recalls in [0, 1] with mean μ have a variance of at most μ(1 − μ) "
    f"(Bhatia–Davis): {mu * (1 - mu):.4f} at our parents' mean recall μ = {mu:.4f}, about "
    f"{PAPER['accuracy'] * (1 - PAPER['accuracy']):.4f} at 002's accuracy 0.989. 002's "
    f"{var0} before pruning is an SD of {np.sqrt(var0):.3f} across classes — one class at "
    f"{one_class:.2f} and nine at 1.00 (mean {(9 + one_class) / 10:.3f}) — while our parents' "
    f"class recalls average {worst.min():.4f} (class {int(worst.argmin())}) to "
    f"{worst.max():.4f} (class {int(worst.argmax())}), an SD of "
    f"{float(np.sqrt(result['recall_variance'][1]['mean'])):.4f}. What the two runs can "
    "share is the growth: 002's variance at ratio 50 over before is "
    f"{PAPER['recall_variance'][50] / var0:.2f}, ours "
    + (
      f"{result['recall_variance'][50]['mean'] / result['recall_variance'][1]['mean']:.2f}."
      if 50 in result["recall_variance"]
      else "not measured."
    )
  )
  collapse = _collapse(result, kept or {})
  if collapse:
    lines.append(collapse)
  for row in test_rows(result):
    if row[4] == "no":
      first, second = (int(x) for x in row[0].split(" vs "))
      lines.append(
        f"Table 3, {row[0]}: 002 prints p = {row[1]}, ours is {row[2]} (t = {row[3]} over "
        f"{k} pairs; mean α {result['alpha'][first]['mean']:.3f} at {first}, "
        f"{result['alpha'][second]['mean']:.3f} at {second})."
      )
  return lines


def _table(header, rows):
  lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
  return "\n".join(lines + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows])


def render(table, facts):
  """The reproduction page (Markdown), computed from `members_table`'s table and the run facts.

  Args:
    table: the per-network table (the committed CSV, read back).
    facts: the run's facts (`tools/reproduce_002.py` writes them beside the CSV): `command`,
      `members`, `train_hours`, `finetune_hours`, `machine`, `versions`, `date`, `protocol`.
  """
  result = compute(table)
  k = result["models"]
  table = complete(table)
  alpha_rows = [
    (
      ratio,
      _ci(a, 3),
      a["label"],
      f"{result['accuracy_t'][ratio]['mean']:.4f}",
      f"{float(np.std(alphas(table, ratio), ddof=1)):.3f}",
    )
    for ratio, a in result["alpha"].items()
  ]
  inside = sum(row[4] == "inside our interval" for row in comparison_rows(result))
  agree = sum(row[4] == "yes" for row in test_rows(result))
  sections = [
    "# 002 on MNIST / LeNet-5, reproduced",
    "",
    "Good et al., *Recall Distortion in Neural Network Pruning and the Undecayed Pruning "
    "Algorithm* (002; [protocols.md](../protocols.md#prune-after-training-002-one-shot-mp--gp--up--rp)), trains 30 LeNet-5 parents on MNIST, prunes "
    "each one-shot by magnitude (MP) at ratios 2, 4, 10, 20 and 50, fine-tunes, and reports "
    "the mean accuracy before pruning (appendix D, Table 10), the mean recall variance "
    "(appendix F, Table 11), the paired tests of the slope α between consecutive ratios "
    "(§7, Table 3) and α per ratio (Figures 3 and 11). This page sets our run of the same "
    "protocol beside those numbers. Every number below is computed from "
    "[002_mnist_members.csv](002_mnist_members.csv) (one row per network: test accuracy and "
    "the ten per-class recalls) by `tf_forget/report/reproduction_002.py`; a test recomputes "
    "this page from the CSV and fails when they disagree.",
    "",
    "## The command",
    "",
    "```sh",
    facts["command"],
    "```",
    "",
    f"Members: **{k} parents** (002: 30) and their {int((table.ratio != 1).sum())} pruned "
    "children. "
    f"Compute: {facts['train_hours']:.2f} h of training and {facts['finetune_hours']:.2f} h "
    f"of fine-tuning (worker time), on {facts['machine']}. Stack: {facts['versions']}. "
    f"Run finished {facts['date']}.",
    "",
    "## Side by side",
    "",
    f"Ours: mean over the networks with its t-based 99% interval (002's level), K = {k}.",
    "",
    _table(
      ("result", "002", "ours (99% interval)", "ours − 002", "002's value"), comparison_rows(result)
    ),
    "",
    "Table 3, MNIST column: paired one-sided t-tests of H_a: E[α_{t_i}] < E[α_{t_i+1}] "
    "(the same parent on both sides), Bonferroni × 4 (docs/spec.md §5.4).",
    "",
    _table(("ratios", "002 p", "ours p", "ours t", "same decision at 0.05"), test_rows(result)),
    "",
    "α per ratio (Figures 3 and 11 show these as box plots and 99% intervals; the paper "
    "prints no number, so there is no column of its own): mean α over parents with its "
    "t-based 99% interval and 002's label (`<` interval below 1, `>` above, `?` contains 1; "
    "docs/spec.md §5.3), beside the pruned networks' mean accuracy and the SD of α.",
    "",
    _table(("ratio", "mean α (99% interval)", "label", "mean accuracy", "SD of α"), alpha_rows),
    "",
    "## Where ours differ",
    "",
    f"- {inside} of {len(comparison_rows(result))} published values lie inside our 99% "
    f"intervals, and {agree} of {len(test_rows(result))} of Table 3's decisions at 0.05 are "
    "ours too.",
  ]
  sections += [f"- {line}" for line in differences(table, result, facts.get("kept"))]
  sections += (
    [
      "",
      "## The protocol, and what it leaves open",
      "",
    ]
    + [f"- {line}" for line in facts["protocol"]]
    + [
      "",
      "## Recompute, rerun, Fashion-MNIST",
      "",
      "- Recompute this page from the CSV (no training): "
      "`python tools/reproduce_002.py --check docs/reproductions`.",
      "- Rerun: the command above (it resumes after a kill; `--plan` prints its cost first), "
      "then `python tools/reproduce_002.py --run=RUN_DIR docs/reproductions` writes the CSV, "
      "the facts and this page from the run.",
      "- Fashion-MNIST's column (Table 10: 0.899; Table 11: 0.0099, 0.0098, 0.0088, 0.0088, "
      "0.0115, 0.0416; Table 3: 1.000, 0.700, 0.001, <0.001): put its four IDX files (as "
      "distributed, `.gz`) in a directory and run the same command with "
      "`--dataset=fashion_mnist --data_dir=DIR`; the reader checks them against Fashion-MNIST's "
      "published checksums.",
      "",
    ]
  )
  return "\n".join(sections)
