"""The page's sections on 002's recall distortion (`recall_study_plots` beside the tables).

* "recall-distortion": the slope α of every compressed variant against dense (002 §5), with
  the pairing each α uses (`pairing`);
* "recall-study": 002's study of one-shot pruning (`recall_study`) — α per dense model by
  algorithm and ratio (002 Figure 1), the balance scatter (002 Figure 5) and the paired t-tests
  (002 Tables 4, 8, 9).
"""

from tf_forget.report import html
from tf_forget.report import recall_study_plots
from tf_forget.report import unit

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
