"""The report's figures, returned as PNG bytes; drawn with the helpers of `figure_kit`
(Agg canvas, deterministic PNGs, legible from 2 to 30 variants).

Inputs are the tables of the report's units (`tf_forget.report.units`;
docs/artifacts/report.md). Figures follow the papers: 000 Figure 2 (per-class recall difference,
significant classes in plum, normalized difference as green points), 000 Table 2 / Figure 3
(#PIE, PIE accuracy), 000 Table 3 (robustness), 003 Figures 1 and 4 (accuracy, prune potential and similarity under l-inf noise), the shipped
size against accuracy. 002's slope α is drawn by `recall_study_plots`, the subgroups' figures
by `subgroup_plots`.
"""

from matplotlib import lines as mpl_lines
from matplotlib import patches as mpl_patches
import numpy as np

from tf_forget.report import figure_kit
from tf_forget.report import palette

MAX_CLASSES = 60


def topline(table):
  """Top-line accuracy per variant (mean bar, min-max whisker), the "nothing changed" view:
  one panel per metric, variants down the y axis, dense's mean dashed.

  Args:
    table: `topline` table (`variant`, `metric`, `mean`, `min`, `max`).
  """
  metrics = list(dict.fromkeys(table.metric))
  variants = list(dict.fromkeys(table.variant))
  styles = figure_kit.variant_styles(variants)
  fig, axes = figure_kit.figure(
    figure_kit.rows_height(len(variants), base=1.2), ncols=len(metrics), sharey=True, sharex=True
  )
  lo = max(0.0, 100 * float(table["min"].min()) - 10)
  pos = np.arange(len(variants))
  for ax, metric in zip(axes, metrics):
    t = table[table.metric == metric].set_index("variant").reindex(variants)
    mean = 100 * t["mean"].to_numpy(float)
    err = np.clip([mean - 100 * t["min"], 100 * t["max"] - mean], 0, None)
    ax.set_xlim(lo, 100 + 0.16 * (100 - lo))
    figure_kit.variant_barh(ax, pos, mean, [styles[v] for v in variants], 0.7, xerr=err, left=lo)
    figure_kit.bar_labels(ax, pos, 100 * t["max"].to_numpy(float), [f"{m:.1f}" for m in mean])
    if "dense" in t.index and not np.isnan(t.loc["dense", "mean"]):
      ax.axvline(
        100 * t.loc["dense", "mean"], color=palette.DENSE_COLOR, linestyle="--", linewidth=0.8
      )
    ax.set_xticks([x for x in ax.get_xticks() if lo <= x <= 100])
    ax.set_xlabel(f"{metric} accuracy (%)")
  figure_kit.variant_yaxis(axes, variants)
  fig.suptitle(
    "Top-line accuracy per variant (mean over members; whiskers: min-max; dashed: dense)"
  )
  return figure_kit.to_png(fig)


def class_level(table, variant):
  """000 Figure 2 for one variant: per-class absolute recall difference (bars; plum where the
  Welch test is significant) and normalized recall difference (green points), in points.

  With more than `MAX_CLASSES` classes only the significant ones (largest first) are drawn.

  Args:
    table: the `class_level` rows of one variant.
    variant: its name (title).
  """
  t = table.copy()
  if len(t) > MAX_CLASSES:
    sig = t[t.significant]
    t = (sig if len(sig) else t).reindex(
      (sig if len(sig) else t)
      .absolute_recall_difference.abs()
      .sort_values(ascending=False, kind="stable")
      .index[:MAX_CLASSES]
    )
  t = t.sort_values("absolute_recall_difference", kind="stable")
  fig, (ax,) = figure_kit.figure(3.6)
  x = np.arange(len(t))
  colors = [figure_kit.PLUM if s else figure_kit.GREY for s in t.significant]
  ax.bar(x, 100 * t.absolute_recall_difference.fillna(0), color=colors, width=0.7)
  ax.scatter(x, 100 * t.normalized_recall_difference, color=figure_kit.GREEN, zorder=3, s=14)
  ax.axhline(0, color="black", linewidth=0.8)
  if len(t) < 6:
    ax.set_xlim(-0.5 - (6 - len(t)) / 2, len(t) - 0.5 + (6 - len(t)) / 2)
  ax.set_xticks(x)
  names = [str(n) for n in t.class_name]
  crowded = len(t) * max(map(len, names), default=1) > 60
  ax.set_xticklabels(
    names,
    rotation=60 if crowded else 0,
    ha="right" if crowded else "center",
    rotation_mode="anchor" if crowded else "default",
    fontsize=7 if len(t) > 30 else 9,
  )
  ax.grid(False, axis="x")
  ax.set_ylabel("recall change (points)")
  ax.set_xlabel("class")
  ax.set_title(f"{variant} vs dense: per-class recall difference (000 Figure 2)")
  figure_kit.legend_below(
    fig,
    [
      mpl_patches.Patch(color=figure_kit.PLUM),
      mpl_patches.Patch(color=figure_kit.GREY),
      mpl_lines.Line2D([], [], color=figure_kit.GREEN, marker="o", linestyle="none"),
    ],
    [
      "absolute, significant (Welch p ≤ level)",
      "absolute, not significant",
      "normalized (minus the accuracy change)",
    ],
  )
  return figure_kit.to_png(fig)


def counts(pie_table, variants_summary):
  """#significant classes and #PIE per compressed variant (000 Table 2), variants down y."""
  variants = list(pie_table.variant)
  styles = figure_kit.variant_styles(variants)
  fig, axes = figure_kit.figure(
    figure_kit.rows_height(len(variants), base=1.0, least=2.0), ncols=2, sharey=True
  )
  sig = [variants_summary[v].get("significant_classes", 0) for v in variants]
  pos = np.arange(len(variants))
  for ax, values, title in (
    (axes[0], sig, "# significant classes"),
    (axes[1], list(pie_table.pie_count), "# PIE (modal label changed)"),
  ):
    values = np.asarray(values, dtype=float)
    figure_kit.variant_barh(ax, pos, values, [styles[v] for v in variants], 0.7)
    ax.set_xlim(0, max(1.0, np.nanmax(values, initial=0)) * 1.18)
    figure_kit.bar_labels(ax, pos, values, [f"{int(v)}" if np.isfinite(v) else "" for v in values])
    ax.set_title(title)
  figure_kit.variant_yaxis(axes, variants)
  return figure_kit.to_png(fig)


def pie_accuracy(table):
  """Top-1 of dense and compressed populations on PIE / non-PIE / all (000 Table 6): one
  panel per subset, variants down y, the dense population's bar above the variant's."""
  variants = list(dict.fromkeys(table.variant))
  subsets = list(dict.fromkeys(table.subset))
  styles = figure_kit.variant_styles(variants)
  dense = {"color": figure_kit.REFERENCE, "hatch": "", "hatch_color": "black"}
  fig, axes = figure_kit.figure(
    figure_kit.rows_height(len(variants), base=1.5, per=0.36),
    ncols=max(1, len(subsets)),
    sharey=True,
    sharex=True,
  )
  pos = np.arange(len(variants))
  for ax, subset in zip(axes, subsets):
    t = table[table.subset == subset]
    ax.set_xlim(0, 118)
    for offset, pop, style in (
      (-0.19, "dense", lambda v: dense),
      (0.19, "compressed", lambda v: styles[v]),
    ):
      vals = np.array(
        [
          100 * float(next(iter(t[(t.variant == v) & (t.population == pop)].top1), np.nan))
          for v in variants
        ]
      )
      figure_kit.variant_barh(ax, pos + offset, vals, [style(v) for v in variants], 0.36)
      figure_kit.bar_labels(ax, pos + offset, vals, [f"{v:.1f}" for v in vals], fontsize=6)
    ax.set_xticks([0, 25, 50, 75, 100])
    ax.set_xlabel("top-1 (%)")
    ax.set_title({"pie": "PIE", "non_pie": "non-PIE"}.get(subset, subset))
  figure_kit.variant_yaxis(axes, variants)
  figure_kit.legend_below(
    fig,
    [figure_kit.patch(dense), mpl_patches.Patch(facecolor="white", edgecolor="#555")],
    [
      "dense population on the variant's subset (upper bar)",
      "compressed population (lower bar, the variant's colour)",
    ],
    fontsize=7.5,
  )
  return figure_kit.to_png(fig)


def robustness(table):
  """Top-1 per corruption normalized to dense, 100 (A_t / A_0 − 1) (000 Table 3): a heatmap,
  compressed variants down y and corruptions across, every cell annotated (red: worse than
  dense, blue: better; grey: n/a)."""
  corruptions = list(dict.fromkeys(table.corruption))
  variants = [v for v in dict.fromkeys(table.variant) if v != "dense"] or ["dense"]
  t = (
    table.drop_duplicates(["variant", "corruption"])
    .pivot(index="variant", columns="corruption", values="top1_norm")
    .reindex(index=variants, columns=corruptions)
    .to_numpy(float)
  )
  longest = max(map(len, corruptions), default=0)
  width = figure_kit.WIDE if len(corruptions) > 8 else figure_kit.WIDTH
  base = 1.0 + (0.05 * longest if len(corruptions) > 1 else 0.2)
  fig, (ax,) = figure_kit.figure(base + 0.3 * len(variants), width=width)
  vmax = max(5.0, float(np.nanmax(np.abs(t))) if np.isfinite(t).any() else 0.0)
  image = figure_kit.heatmap(
    ax, t, variants, corruptions, vmax=vmax, fontsize=7 if len(corruptions) <= 14 else 6.5
  )
  fig.colorbar(
    image, ax=ax, shrink=0.9, pad=0.01, aspect=max(8, 4 * len(variants)), label="top-1 vs dense (%)"
  )
  ax.set_title("Top-1 vs dense per corruption, 100 (A_t / A_0 − 1) (000 Table 3)")
  return figure_kit.to_png(fig)


def noise(accuracy, similarity, potential=None):
  """Top-1, prune potential and matching labels vs ε (003 Figures 1, 4a), one panel each;
  one legend of the variants below the panels."""
  panels = 3 if potential is not None else 2
  variants = list(dict.fromkeys(accuracy.variant))
  extra = [v for v in dict.fromkeys(similarity.variant) if v not in variants]
  styles = figure_kit.variant_styles(variants)
  fig, axes = figure_kit.figure(
    3.1 + figure_kit.legend_height(figure_kit.WIDE, variants + extra),
    ncols=panels,
    width=figure_kit.WIDE,
  )
  for v in variants:
    t = accuracy[accuracy.variant == v]
    s = styles[v]
    axes[0].plot(
      t.eps,
      100 * t.top1,
      markersize=3.5,
      linewidth=2.2 if v == "dense" else 1.3,
      color=s["color"],
      marker=s["marker"],
      linestyle=s["linestyle"],
    )
  axes[0].set_xlabel("ε (normalized input)")
  axes[0].set_ylabel("top-1 (%)")
  axes[0].set_title("Accuracy under l-inf noise")
  ax = axes[-1]
  reference = {"color": "black", "linestyle": ":", "marker": "o"}
  for v in dict.fromkeys(similarity.variant):
    t = similarity[similarity.variant == v]
    s = reference if v in extra else styles[v]
    ax.plot(
      t.eps,
      100 * t.matching,
      markersize=3.5,
      linewidth=1.3,
      color=s["color"],
      marker=s["marker"],
      linestyle=s["linestyle"],
    )
  ax.set_xlabel("ε (normalized input)")
  ax.set_ylabel("labels = dense member k's (%)")
  ax.set_title("Noise similarity (003 Figure 4a)")
  if potential is not None:
    axes[1].plot(potential.eps, 100 * potential.prune_potential, marker="o", color=figure_kit.PLUM)
    axes[1].fill_between(
      potential.eps,
      100 * (potential.prune_potential - potential.prune_potential_sd),
      100 * (potential.prune_potential + potential.prune_potential_sd),
      color=figure_kit.PLUM,
      alpha=0.15,
    )
    axes[1].set_ylim(-5, 105)
    axes[1].set_xlabel("ε (normalized input)")
    axes[1].set_ylabel("prune potential (%)")
    axes[1].set_title("Prune potential under noise (003 Figure 1)")
  figure_kit.legend_below(
    fig,
    [figure_kit.line(styles[v], markersize=4) for v in variants]
    + [figure_kit.line(reference, markersize=4) for _ in extra],
    variants + extra,
  )
  return figure_kit.to_png(fig)


def size_accuracy(table):
  """Shipped size (relative to dense float32, log) vs population top-1 per variant.

  A hollow marker is the plain file, a filled one the shipped file; an arrow joins them when
  the sparse twin is shipped. Each shipped point is named beside it (labels moved apart).
  """
  rows = [
    r
    for r in table.itertuples(index=False)
    if r.top1 is not None
    and r.shipped_vs_dense_float32 is not None
    and np.isfinite(r.top1)
    and np.isfinite(r.shipped_vs_dense_float32)
  ]
  styles = figure_kit.variant_styles([r.variant for r in rows])
  dense_bytes = next(
    (r.plain_bytes for r in table.itertuples(index=False) if r.variant == "dense"), None
  )
  fig, (ax,) = figure_kit.figure(max(3.8, 1.6 + 0.17 * len(rows)))
  shipped_xy, plain_xy, shipped_sparse, texts, colors = [], [], [], [], []
  for row in rows:
    y = 100 * row.top1
    shipped = row.shipped_vs_dense_float32
    plain = row.plain_bytes / dense_bytes if dense_bytes and row.plain_bytes else shipped
    s = styles[row.variant]
    ax.scatter(
      [shipped],
      [y],
      color=s["color"],
      s=36,
      marker=s["marker"],
      zorder=4,
      edgecolors="white",
      linewidths=0.4,
    )
    if row.encoding == "sparse":
      ax.scatter(
        [plain], [y], facecolors="none", edgecolors=s["color"], s=36, marker=s["marker"], zorder=3
      )
      ax.annotate(
        "",
        xy=(shipped, y),
        xytext=(plain, y),
        arrowprops={"arrowstyle": "->", "color": s["color"], "linewidth": 0.9},
      )
      plain_xy.append((plain, y))
      shipped_sparse.append((shipped, y))
    shipped_xy.append((shipped, y))
    texts.append(
      row.variant
      + (" (sparse)" if row.encoding == "sparse" and "sparse" not in row.variant else "")
    )
    colors.append("black")
  ax.set_xscale("log")
  if shipped_xy:
    xs = [x for x, _ in shipped_xy + plain_xy]
    ys = [y for _, y in shipped_xy]
    ax.set_xlim(min(xs) / 2.2, max(xs) * 2.2)
    pad = max(0.5, 0.12 * (max(ys) - min(ys)))
    ax.set_ylim(min(ys) - pad, max(ys) + pad)
  ax.set_xlabel("shipped file size / dense float32 file (log)")
  ax.set_ylabel("population top-1 (%)")
  ax.set_title("Size vs accuracy per variant (filled: shipped file; hollow: its plain twin)")
  figure_kit.place_labels(
    fig,
    ax,
    shipped_xy,
    texts,
    fontsize=7,
    colors=colors,
    obstacles=plain_xy,
    segments=list(zip(shipped_sparse, plain_xy)),
  )
  return figure_kit.to_png(fig)
