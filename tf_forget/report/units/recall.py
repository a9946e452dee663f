"""002's recall distortion: the slope α of every compressed variant (002 §5-6; docs/spec.md
§5.2-5.3) and the study of one-shot pruning (002 §6-7, `recall_study`).

Two units. `RECALL_DISTORTION`: α per member, its mean with a 99% CI and label, per compressed
variant against the dense members it is paired with (`Run.pairing_of`: for one-shot variants
its parent, the same network before pruning, 002 §6.2; for gradual pruning member k, an
independently trained network): the `recall_distortion` table and each variant's member slopes
(`alpha_summaries`). `RECALL_STUDY`: the one-shot variants' α by algorithm and ratio and the
paired t-tests (`oneshot_*` tables and the `study`), when the run has one-shot variants.

Their sections (`recall_study_plots` beside the tables):

* "recall-distortion": the slope α of every compressed variant against dense (002 §5), with
  the pairing each α uses (`pairing`);
* "recall-study": 002's study of one-shot pruning (`recall_study`) — α per dense model by
  algorithm and ratio (002 Figure 1), the balance scatter (002 Figure 5) and the paired t-tests
  (002 Tables 4, 8, 9).
"""

import pandas as pd

from tf_forget.artifacts import names
from tf_forget.report import class_measures
from tf_forget.report import html
from tf_forget.report import pairing as pairing_lib
from tf_forget.report import recall_study
from tf_forget.report import recall_study_plots
from tf_forget.report import unit
from tf_forget.stats import recall_distortion
from tf_forget.stats import validate

ALPHA_FORMATS = {
  "members": "int",
  "n": "int",
  "mean_accuracy_0": html.PCT,
  "mean_accuracy_t": html.PCT,
}
TEST_FORMATS = {"n": "int", "rows": "int", "p_value": "p", "p_bonferroni": "p"}


def distortion(recall_distortion, alpha_summaries):
  """The "recall-distortion" section: α of every compressed variant (002 §5).

  Args:
    recall_distortion: the `recall_distortion` table.
    alpha_summaries: variant -> its member slopes (`alphas`).
  """
  t = recall_distortion
  if t.empty:
    return unit.Skip.of(["no compressed variant"])
  return (
    "<p class=\"lead\">α: slope through the origin of each class's normalized recall "
    "balance after vs before compression, per member (grey dots); mean with a "
    "t-based 99% CI; label &lt; (CI below 1), &gt; (above), ? (contains 1).</p>"
    + html.pair(
      recall_study_plots.alpha(t, alpha_summaries),
      "recall distortion slope",
      "<p class=\"lead\">pairing: 002's α compares the same network before "
      "and after pruning. One-shot members are paired with the dense parent "
      "their metadata links to (<i>parent</i>); quantized dense members with "
      "the dense member they quantize (<i>index (same network)</i>); a "
      "gradual-pruning member k (prune_&lt;t&gt;) is trained independently, so "
      "its α compares it with dense member k, another network (<i>index "
      "(independent members)</i>).</p>" + html.table(t, ALPHA_FORMATS),
    )
  )


def oneshot_study(study, t, tests):
  """The "recall-study" section: 002's one-shot study (α per algorithm and ratio, its tests).

  Args:
    study: the `recall_study.Study`, or None without one-shot variants.
    t: the `oneshot_alpha` table.
    tests: the tables of its tests by name (`oneshot_ratio_tests`, `oneshot_algorithm_tests`,
      `oneshot_mp_vs_up`).
  """
  if study is None:
    return unit.Skip.of(["no one-shot variant (oneshot_<alg>_r<r>) in this run"])
  lead = (
    "<p class=\"lead\">Each dense member pruned once by magnitude (mp), gradient "
    "(gp), 002's UP (up) or at random (rp) to ratio r, then fine-tuned (docs/spec.md §6), "
    "and compared with itself before pruning. α (002 §5): the slope through the origin of "
    "the classes' normalized recall balance B̄ = (R − A)/A after against before pruning; "
    "&gt; 1 means pruning widened the gaps between classes, &lt; 1 that it narrowed them. "
    "Label: the t-based 99% CI of the mean α over dense models lies below 1 (&lt;), above 1 "
    "(&gt;) or contains 1 (?) (002 §6.2). Tests compare the same dense models on both sides "
    "(paired t-tests, 002 §7); Bonferroni multiplies each p-value by the number of rows in "
    "its column (rows), capped at 1 (docs/spec.md §5.4).</p>"
  )
  cols = [
    c for c in t.columns if c not in ("ratio_over", "exclude_classifier") or t[c].notna().any()
  ]
  parts = [
    lead,
    html.pair(
      recall_study_plots.alpha_boxplots(t, study.cells),
      "alpha per dense model by ratio and algorithm",
      html.table(t[cols], dict(ALPHA_FORMATS, sparsity=html.PCT, ratio="g")),
      stacked=True,
    ),
    "<h3>Normalized recall balance before vs after (002 Figure 5)</h3>",
    html.pair(
      recall_study_plots.balance_scatter(t, study.cells),
      "normalized recall balance before and after pruning",
      "<p class=\"lead\">One point per class and dense model; dashed: y = x "
      "(balance unchanged); solid: y = α̂·x, the pooled fit (α̂, uncentered "
      "r², mean accuracy after pruning Ā_t; 002 §6.2).</p>",
      stacked=True,
    ),
  ]
  for name, title, what in (
    (
      "oneshot_ratio_tests",
      "Consecutive ratios within each algorithm (002 Table 4)",
      "paired, H_a: E[α at the smaller ratio] &lt; E[α at the larger]; rows = ratio pairs "
      "of the algorithm",
    ),
    (
      "oneshot_algorithm_tests",
      "Pairs of algorithms at each ratio (002 Table 8)",
      "paired, two-sided; rows = algorithm pairs at the ratio",
    ),
    (
      "oneshot_mp_vs_up",
      "MP vs UP at each ratio (002 Table 9)",
      "paired, two-sided; rows = every ratio cell at once",
    ),
  ):
    frame = tests[name]
    parts.append(f"<h3>{html.esc(title)}</h3><p class=\"lead\">{what}.</p>")
    parts.append(
      html.table(frame, dict(TEST_FORMATS, ratio="g", first="g", second="g"))
      if not frame.empty
      else html.skipped([n for n in study.notes if n.startswith(name)])
    )
  general = [n for n in study.notes if not n.startswith("oneshot_")]
  parts.append("<p class=\"skip\">" + html.esc("; ".join(general) + ".") + "</p>")
  return "".join(parts)


ONESHOT_TABLES = (
  "oneshot_alpha",
  "oneshot_ratio_tests",
  "oneshot_algorithm_tests",
  "oneshot_mp_vs_up",
)


def alpha_measures(run, variant, confidence=0.99):
  """Recall-distortion slope α per member, mean α with CI and label (002 §5-6;
  docs/spec.md §5.2-5.3).

  Returns:
    (dict from `recall_distortion.recall_distortion_summary` with `alphas` as a list,
    `members`, `pairs` ([k_dense, k_variant] per alpha) and `pairing` (the pairing label), or
    NaN fields and a note where undefined; list of notes).
  """
  pairing = run.pairing_of(variant)
  q0, qt = pairing_lib.paired_with_dense(run, variant)
  nan = float("nan")
  empty = {
    "alphas": [],
    "mean_alpha": {"mean": nan, "low": nan, "high": nan, "label": "?", "n": 0},
    "alpha_hat": nan,
    "r2": nan,
    "mean_accuracy_0": nan,
    "mean_accuracy_t": nan,
    "recall_variance_0": nan,
    "recall_variance_t": nan,
    "members": 0,
    "pairs": [],
    "pairing": pairing["label"],
  }
  if not q0.members.size:
    return empty, [f"{variant}: no member paired with dense; α not computed"]
  r0, a0 = class_measures.recall_and_accuracy(q0, run.num_classes)
  rt, at = class_measures.recall_and_accuracy(qt, run.num_classes)
  try:
    out = recall_distortion.recall_distortion_summary(r0, a0, rt, at, confidence=confidence)
  except validate.StatsInputError as e:
    return empty, [f"{variant}: α not computed ({e})"]
  out = dict(
    out,
    alphas=[float(a) for a in out["alphas"]],
    members=int(q0.members.size),
    pairs=[[int(a), int(b)] for a, b in zip(q0.members, qt.members)],
    pairing=pairing["label"],
  )
  notes = []
  if out["mean_alpha"]["n"] < 2:
    notes.append(
      f"{variant}: the CI of α needs at least 2 defined slopes (have {out['mean_alpha']['n']})"
    )
  return out, notes


def _row(variant, rd):
  """A variant's row of the `recall_distortion` table."""
  mean = rd["mean_alpha"]
  return {
    "variant": variant,
    "pairing": rd["pairing"],
    "members": rd["members"],
    "mean_alpha": mean["mean"],
    "ci_low": mean["low"],
    "ci_high": mean["high"],
    "label": mean["label"],
    "n": mean["n"],
    "alpha_hat": rd["alpha_hat"],
    "r2": rd["r2"],
    "mean_accuracy_0": rd["mean_accuracy_0"],
    "mean_accuracy_t": rd["mean_accuracy_t"],
    "recall_variance_0": rd["recall_variance_0"],
    "recall_variance_t": rd["recall_variance_t"],
  }


def _distortion(run, measure_options):
  rows, summaries, notes = [], {}, []
  for variant in run.eval:
    if variant == names.DENSE:
      continue
    rd, n = alpha_measures(run, variant, measure_options["confidence"])
    notes += n
    rows.append(_row(variant, rd))
    summaries[variant] = {
      "pairing": rd["pairing"],
      "alpha_pairs": rd["pairs"],
      "alphas": rd["alphas"],
      "mean_alpha": rd["mean_alpha"]["mean"],
      "alpha_label": rd["mean_alpha"]["label"],
    }
  return unit.Part(
    {"recall_distortion": pd.DataFrame(rows)},
    {"recall_distortion": notes} if notes else {},
    gives={"alpha_summaries": summaries},
  )


def _study(run, recall_distortion, alpha_summaries):
  study = recall_study.compute(run, alpha_summaries, recall_distortion)
  if study is None:
    return unit.Part()
  return unit.Part(
    study.tables, {"recall_study": study.notes} if study.notes else {}, gives={"study": study}
  )


def _render_study(
  study, oneshot_alpha, oneshot_ratio_tests, oneshot_algorithm_tests, oneshot_mp_vs_up
):
  return oneshot_study(
    study,
    oneshot_alpha,
    {
      "oneshot_ratio_tests": oneshot_ratio_tests,
      "oneshot_algorithm_tests": oneshot_algorithm_tests,
      "oneshot_mp_vs_up": oneshot_mp_vs_up,
    },
  )


RECALL_DISTORTION = unit.Unit(
  "recall_distortion",
  reads=("run", "measure_options"),
  makes=("recall_distortion",),
  gives=("alpha_summaries",),
  compute=_distortion,
  sections=(
    unit.Section(
      "recall-distortion",
      "8. Recall distortion slope α (002)",
      "8 α",
      ("recall_distortion", "alpha_summaries"),
      distortion,
      designs=(unit.POPULATION,),
    ),
  ),
)
RECALL_STUDY = unit.Unit(
  "recall_study",
  reads=("run", "recall_distortion", "alpha_summaries"),
  makes=ONESHOT_TABLES,
  gives=("study",),
  compute=_study,
  sections=(
    unit.Section(
      "recall-study",
      "9. Recall distortion after one-shot pruning (002)",
      "9 One-shot",
      ("study",) + ONESHOT_TABLES,
      _render_study,
      designs=(unit.POPULATION,),
    ),
  ),
)
