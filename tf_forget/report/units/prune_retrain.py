"""003's prune-retrain study (`tf_forget.report.prune_retrain`): how far each parent prunes per
test distribution, when the run has prune-retrain cycles; the section is left out otherwise.

Its figures, from `prune_retrain`'s tables:

* `curves`: prune–accuracy curve per method on every distribution (003 Figure 6a): nominal
  bold, corruptions thin, published sets dashed, l-inf noise levels dotted grey;
* `excess`: ê − e, the pruned network's excess error over its parent's, against the prune
  ratio (003 Figure 6c);
* `similarity`: share of equal labels under noise against ε, each cycle against its own
  parent (solid) and against an independent dense member (dashed), with the dense-vs-dense
  reference dotted (003 Figure 4).

Each panel has its own y scale. PNG bytes via `figure_kit.to_png` (deterministic).
"""

from tf_forget.report import figure_kit
from tf_forget.report import noise_report
from tf_forget.report import prune_retrain
from tf_forget.report import unit

STYLE = {
  "nominal": {"linewidth": 2.4, "color": "black", "marker": "o"},
  "published": {"linewidth": 1.4, "linestyle": "--", "marker": "s"},
  "noise": {"linewidth": 0.9, "linestyle": ":", "color": figure_kit.GREY, "marker": None},
}


def curves(curve):
  """Top-1 (%) against prune ratio (%) per method, one line per distribution; one legend of
  the distributions below the panels (noise levels: one grey entry)."""
  methods = list(dict.fromkeys(curve.method))
  n = max(1, len(methods))
  width = figure_kit.WIDE if n > 1 else figure_kit.WIDTH
  labels = list(
    dict.fromkeys(
      "l-inf noise (all ε)" if k == "noise" else d for d, k in zip(curve.distribution, curve.kind)
    )
  )
  fig, axes = figure_kit.figure(
    3.3 + figure_kit.legend_height(width, labels, 7), ncols=n, width=width
  )
  legend = {}
  for ax, method in zip(axes, methods):
    t = curve[curve.method == method]
    others = [
      d for d in dict.fromkeys(t.distribution) if t[t.distribution == d].kind.iloc[0] not in STYLE
    ]
    for dist in dict.fromkeys(t.distribution):
      d = t[t.distribution == dist].sort_values("prune_ratio")
      kind = d.kind.iloc[0]
      style = dict(
        STYLE.get(kind) or dict(figure_kit.line_style(others.index(dist)), linewidth=1.0)
      )
      if kind == "published":
        style.setdefault("color", figure_kit.color(len(others)))
      (handle,) = ax.plot(100 * d.prune_ratio, 100 * d.top1, markersize=3, **style)
      legend.setdefault("l-inf noise (all ε)" if kind == "noise" else dist, handle)
    ax.set_xlabel("prune ratio (% of prunable weights)")
    ax.set_ylabel("top-1 (%)")
    ax.set_title(f"{method.upper()}: prune–accuracy per distribution (003 Fig. 6a)")
  figure_kit.legend_below(fig, list(legend.values()), list(legend), fontsize=7)
  return figure_kit.to_png(fig)


def _method_style(method):
  """The palette style of a prune-retrain method (its cycle 1's family hue)."""
  name = f"iter_{method}_c1"
  return figure_kit.variant_styles([name])[name]


def excess(table):
  """ê − e (points) against prune ratio (%), mean ± SD over parents, per method."""
  fig, (ax,) = figure_kit.figure(3.6)
  methods = list(dict.fromkeys(table.method))
  for i, method in enumerate(methods):
    t = table[table.method == method].sort_values("prune_ratio")
    style = _method_style(method)
    ax.errorbar(
      100 * t.prune_ratio,
      100 * t.excess_vs_parent,
      yerr=100 * t.excess_vs_parent_sd,
      capsize=2,
      color=style["color"],
      marker=figure_kit.line_style(i)["marker"],
      linestyle=figure_kit.line_style(i)["linestyle"],
    )
  ax.axhline(0, color="black", linewidth=0.8)
  ax.set_xlabel("prune ratio (% of prunable weights)")
  ax.set_ylabel("ê − e (points of error)")
  ax.set_title("Excess error over the parent's on the test distribution (003 Fig. 6c)")
  figure_kit.legend_below(
    fig,
    [
      figure_kit.line(
        dict(
          _method_style(m),
          marker=figure_kit.line_style(i)["marker"],
          linestyle=figure_kit.line_style(i)["linestyle"],
        )
      )
      for i, m in enumerate(methods)
    ],
    [m.upper() for m in methods],
  )
  return figure_kit.to_png(fig)


def similarity(table):
  """Share of equal labels (%) under noise against ε, per method (parent vs independent)."""
  methods = [m for m in dict.fromkeys(table.method) if m != "dense"]
  n = max(1, len(methods))
  fig, axes = figure_kit.figure(3.6, ncols=n, width=figure_kit.WIDE if n > 1 else figure_kit.WIDTH)
  ref = table[table.method == "dense"]
  for ax, method in zip(axes, methods):
    t = table[table.method == method]
    cycles = sorted(set(t.cycle))
    styles = figure_kit.variant_styles([f"iter_{method}_c{c}" for c in cycles])
    handles, labels = [], []
    for cycle in cycles:
      c = t[t.cycle == cycle]
      color = styles[f"iter_{method}_c{cycle}"]["color"]
      (h,) = ax.plot(c.eps, 100 * c.matching_parent, markersize=3, color=color, marker="o")
      ax.plot(
        c.eps, 100 * c.matching_independent, markersize=3, color=color, linestyle="--", marker="x"
      )
      handles.append(h)
      labels.append(f"c{cycle} ({100 * c.prune_ratio.iloc[0]:.0f}%)")
    if len(ref):
      (h,) = ax.plot(ref.eps, 100 * ref.matching_independent, color="black", linestyle=":")
      handles.append(h)
      labels.append("dense vs indep. dense")
    ax.set_xlabel("ε (normalized input)")
    ax.set_ylabel("labels equal (%)")
    ax.set_title(f"{method.upper()}: noise similarity (003 Fig. 4)")
    ax.legend(
      handles,
      labels,
      loc="upper center",
      bbox_to_anchor=(0.5, -0.2),
      fontsize=7,
      ncol=min(4, len(labels)),
      frameon=False,
      title="solid: vs own parent; dashed: vs an independent dense member",
      title_fontsize=7,
    )
  return figure_kit.to_png(fig)


def section(curve, summary, potential, excess_t, sim, notes):
  """The "prune-retrain" section's HTML when the run has prune-retrain cycles, else `unit.Skip`.

  Args:
    curve, summary, potential, excess_t, sim: the `prune_retrain_curve`, `_summary`,
      `_potential`, `_excess` and `_similarity` tables (None when not made).
    notes: the `prune_retrain` notes, or None.
  """
  from tf_forget.report import html
  from tf_forget.report import unit

  if curve is None or curve.empty:
    return unit.Skip("no prune-retrain cycles in this run")
  parts = [
    "<p class=\"lead\">Each dense member (a parent; 003's repetitions) pruned and "
    "retrained cycle after cycle (003 Algorithm 1, docs/spec.md §6.5): WT removes the "
    "smallest |θ| globally, FT the filters with the smallest L1 norm in every layer (whole "
    "filters, their bias and the BatchNorm γ/β behind them). prune_ratio: zeros among the "
    "prunable kernels of the exported networks. Prune potential (003 Definition 1): the "
    "largest prune ratio whose top-1 error stays within 0.5 points of the parent's on the "
    "same distribution; train = nominal test data, test = the corrupted and published "
    "splits (average and minimum over them), mean ± SD over parents; diff = test − train "
    "(003 Table 2).</p>"
  ]
  numbers = ""
  if summary is not None and not summary.empty:
    numbers += html.table(
      summary,
      {c: html.PCT for c in summary.columns if c.startswith(("train", "test_a", "test_m", "diff"))}
      | {"parents": "int", "test_distributions": "int"},
    )
  parts.append(
    html.pair(curves(curve), "prune-accuracy curves per distribution", numbers, stacked=True)
  )
  if potential is not None and not potential.empty:
    parts.append(
      "<h3>Prune potential per distribution</h3>"
      + html.table(
        potential,
        {"prune_potential": html.PCT, "prune_potential_sd": html.PCT, "parents": "int"},
        max_rows=80,
      )
    )
  if excess_t is not None and not excess_t.empty:
    parts.append(
      "<h3>Excess error (003 Definition 2)</h3><p class=\"lead\">e = mean error "
      "over the test distribution − nominal error; ê − e: the pruned network's "
      "minus its parent's, mean ± SD over parents.</p>"
      + html.pair(
        excess(excess_t),
        "excess error over the parent",
        html.table(
          excess_t,
          {
            "prune_ratio": html.PCT,
            "excess_error": html.PCT,
            "parent_excess_error": html.PCT,
            "excess_vs_parent": html.PCT,
            "excess_vs_parent_sd": html.PCT,
            "parents": "int",
            "test_distributions": "int",
            "cycle": "int",
          },
        ),
      )
    )
  if sim is not None and not sim.empty:
    parts.append(
      "<h3>Noise similarity to the parent (003 §4.1)</h3><p class=\"lead\">Share "
      "of equal labels on the same noisy inputs: each pruned member against its own "
      "parent (the dense member its chain of parent links starts from) and against "
      "an independently trained dense member (k+1 mod K).</p>"
      + html.pair(
        similarity(sim),
        "noise similarity to the parent",
        html.table(
          sim,
          {
            "prune_ratio": html.PCT,
            "matching_parent": html.PCT,
            "matching_independent": html.PCT,
            "pairs": "int",
            "cycle": "int",
          },
          max_rows=60,
        ),
        stacked=True,
      )
    )
  if notes:
    parts.append(html.skipped(notes))
  return "".join(parts)


TABLES = (
  "prune_retrain_curve",
  "prune_retrain_potential",
  "prune_retrain_summary",
  "prune_retrain_excess",
  "prune_retrain_similarity",
)


def _compute(run, run_dir):
  study = prune_retrain.compute(run, noise_report.load(run_dir, run.variants))
  return unit.Part() if study is None else unit.Part(study.tables, {"prune_retrain": study.notes})


def _render(
  prune_retrain_curve,
  prune_retrain_potential,
  prune_retrain_summary,
  prune_retrain_excess,
  prune_retrain_similarity,
  notes,
):
  return section(
    prune_retrain_curve,
    prune_retrain_summary,
    prune_retrain_potential,
    prune_retrain_excess,
    prune_retrain_similarity,
    notes.get("prune_retrain"),
  )


UNIT = unit.Unit(
  "prune_retrain",
  reads=("run", "run_dir"),
  makes=TABLES,
  compute=_compute,
  sections=(
    unit.Section(
      "prune-retrain",
      "9b. Prune-retrain: how far each parent prunes, per distribution (003)",
      "9b Prune-retrain",
      TABLES + ("notes",),
      _render,
      optional=True,
    ),
  ),
)
