"""The report's figures, drawn with matplotlib's Agg canvas and returned as PNG bytes.

No pyplot (no global state, no display): each function builds a `matplotlib.figure.Figure`
of a fixed size and renders it with `FigureCanvasAgg`. PNG metadata carries no software
version or date, so the same tables give the same bytes (with the same matplotlib).

Inputs are the tables of `measures.compute` (docs/artifacts/report.md). Figures follow the
papers: 000 Figure 2 (per-class recall difference, significant classes in plum, normalized
difference as green points), 000 Table 2 / Figure 3 (#PIE, PIE accuracy), 004 Tables 3-4
(subgroup normalized differences), 004 Figure 2 (over-indexing), 000 Table 3 (robustness),
003 Figures 1 and 4 (accuracy, prune potential and similarity under l-inf noise), 002 Figures
3-5 (slope α against 1).
"""

import io

import matplotlib
from matplotlib.backends import backend_agg
from matplotlib import figure as mpl_figure
import numpy as np

DPI = 100
WIDTH = 7.5  # inches
WIDE = 12.0  # inches, figures shown full width (subgroups)
PLUM = "#8e4585"
GREEN = "#2ca02c"
GREY = "#b0b0b0"
DENSE_COLOR = "#4c72b0"
# A fixed, colour-blind-friendly cycle (variants are coloured by their order).
PALETTE = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3",
           "#8c8c8c", "#ccb974", "#64b5cd")
_RC = {"font.size": 9, "axes.titlesize": 10, "axes.grid": True, "grid.alpha": 0.3,
       "axes.axisbelow": True, "svg.hashsalt": "tf_forget", "path.simplify": False}
MAX_CLASSES = 60


def color(i):
  """The i-th colour of the fixed palette."""
  return PALETTE[i % len(PALETTE)]


def line_style(i):
  """Colour, line style and marker of the i-th series: past the palette, dashed and squares."""
  second = (i // len(PALETTE)) % 2 == 1
  return {"color": color(i), "linestyle": "--" if second else "-",
          "marker": "s" if second else "o"}


def _figure(height, ncols=1, width=WIDTH, sharey=False, nrows=1):
  """A figure of `nrows` x `ncols` axes (a flat list, row-major); `height` is per row."""
  with matplotlib.rc_context(_RC):
    fig = mpl_figure.Figure(figsize=(width, height * nrows), dpi=DPI)
    axes = []
    for i in range(ncols * nrows):
      share = axes[0] if sharey and axes else None
      axes.append(fig.add_subplot(nrows, ncols, i + 1, sharey=share))
  return fig, axes


def figure(height, ncols=1, width=WIDTH, sharey=False, nrows=1):
  """Public `_figure` for the report's other figure modules (`recall_study_plots`)."""
  return _figure(height, ncols=ncols, width=width, sharey=sharey, nrows=nrows)


def _few(ax, n, slots=6):
  """Keeps bars of a plot with few groups from filling the whole axis."""
  if n < slots:
    pad = (slots - n) / 2
    ax.set_xlim(-0.5 - pad, n - 0.5 + pad)


def to_png(fig):
  """Renders a figure to PNG bytes without metadata (deterministic)."""
  with matplotlib.rc_context(_RC):
    canvas = backend_agg.FigureCanvasAgg(fig)
    fig.tight_layout()
    buf = io.BytesIO()
    canvas.print_png(buf, metadata={"Software": None})
  return buf.getvalue()


def _bars(ax, labels, series, ylabel):
  """Grouped bars: series = [(name, values, colour)], one group per label."""
  n = max(len(series), 1)
  width = 0.8 / n
  x = np.arange(len(labels))
  for i, (name, values, c) in enumerate(series):
    v = np.asarray(values, dtype=float)
    ax.bar(x + (i - (n - 1) / 2) * width, np.nan_to_num(v), width, label=name, color=c)
    for xi, vi in zip(x + (i - (n - 1) / 2) * width, v):
      if np.isnan(vi):
        ax.text(xi, 0, "n/a", ha="center", va="bottom", fontsize=7, rotation=90)
  ax.set_xticks(x)
  ax.set_xticklabels(labels, rotation=30 if max(map(len, labels), default=0) > 8 else 0,
                     ha="right" if max(map(len, labels), default=0) > 8 else "center")
  ax.set_ylabel(ylabel)
  ax.axhline(0, color="black", linewidth=0.8)
  _few(ax, len(labels), 4)


def topline(table):
  """Top-line accuracy per variant (mean bar, min-max whisker), the "nothing changed" view.

  Args:
    table: `topline` table (`variant`, `metric`, `mean`, `min`, `max`).
  """
  metrics = list(dict.fromkeys(table.metric))
  variants = list(dict.fromkeys(table.variant))
  fig, (ax,) = _figure(3.2)
  n = len(metrics)
  width = 0.8 / n
  x = np.arange(len(variants))
  for i, metric in enumerate(metrics):
    t = table[table.metric == metric].set_index("variant").loc[variants]
    pos = x + (i - (n - 1) / 2) * width
    ax.bar(pos, 100 * t["mean"], width, color=color(i), label=metric)
    yerr = np.clip([100 * (t["mean"] - t["min"]), 100 * (t["max"] - t["mean"])], 0, None)
    ax.errorbar(pos, 100 * t["mean"], yerr=yerr,
                fmt="none", ecolor="black", capsize=3, linewidth=0.8)
    for p, m in zip(pos, t["mean"]):
      ax.text(p, 100 * m, f"{100 * m:.1f}", ha="center", va="bottom", fontsize=7)
  lo = 100 * float(table["min"].min())
  ax.set_ylim(max(0.0, lo - 10), 101)
  ax.set_xticks(x)
  ax.set_xticklabels(variants)
  _few(ax, len(variants), 4)
  ax.set_ylabel("accuracy (%)")
  ax.set_title("Top-line accuracy per variant (mean over members; whiskers: min-max)")
  ax.legend(loc="lower right")
  return to_png(fig)


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
        (sig if len(sig) else t).absolute_recall_difference.abs()
        .sort_values(ascending=False, kind="stable").index[:MAX_CLASSES])
  t = t.sort_values("absolute_recall_difference", kind="stable")
  fig, (ax,) = _figure(3.4)
  x = np.arange(len(t))
  colors = [PLUM if s else GREY for s in t.significant]
  ax.bar(x, 100 * t.absolute_recall_difference.fillna(0), color=colors,
         label="absolute recall difference")
  ax.scatter(x, 100 * t.normalized_recall_difference, color=GREEN, zorder=3, s=14,
             label="normalized recall difference")
  ax.axhline(0, color="black", linewidth=0.8)
  _few(ax, len(t))
  ax.set_xticks(x)
  names = [str(n) for n in t.class_name]
  crowded = len(t) * max(map(len, names), default=1) > 60
  ax.set_xticklabels(names, rotation=60 if crowded else 0, ha="right" if crowded else "center",
                     fontsize=7 if len(t) > 30 else 9)
  ax.set_ylabel("recall change (points)")
  ax.set_xlabel("class (plum: significant, Welch p ≤ level)")
  ax.set_title(f"{variant} vs dense: per-class recall difference (000 Figure 2)")
  ax.legend(loc="best", fontsize=8)
  return to_png(fig)


def counts(pie_table, variants_summary):
  """#significant classes and #PIE per compressed variant (000 Table 2)."""
  variants = list(pie_table.variant)
  fig, (a1, a2) = _figure(3.0, ncols=2)
  sig = [variants_summary[v].get("significant_classes", 0) for v in variants]
  for ax, values, title, c in ((a1, sig, "# significant classes", PLUM),
                               (a2, list(pie_table.pie_count), "# PIE (modal label changed)",
                                color(1))):
    ax.bar(np.arange(len(variants)), values, color=c)
    for i, v in enumerate(values):
      ax.text(i, v, str(int(v)), ha="center", va="bottom", fontsize=8)
    ax.set_xticks(np.arange(len(variants)))
    ax.set_xticklabels(variants, rotation=20, ha="right")
    ax.set_title(title)
  return to_png(fig)


def pie_accuracy(table):
  """Top-1 of dense and compressed populations on PIE / non-PIE / all (000 Table 6)."""
  variants = list(dict.fromkeys(table.variant))
  ncols = min(4, max(1, len(variants)))
  nrows = -(-max(1, len(variants)) // ncols)
  fig, axes = _figure(3.0, ncols=ncols, nrows=nrows, width=WIDTH if nrows == 1 else WIDE)
  for ax in axes[len(variants):]:
    ax.set_visible(False)
  for ax, variant in zip(axes, variants):
    t = table[table.variant == variant]
    subsets = list(dict.fromkeys(t.subset))
    series = [(pop, [100 * float(t[(t.population == pop) & (t.subset == s)].top1.iloc[0])
                     for s in subsets], c)
              for pop, c in (("dense", DENSE_COLOR), ("compressed", color(1)))]
    _bars(ax, subsets, series, "top-1 (%)")
    ax.set_ylim(0, 105)
    ax.set_title(variant)
  axes[0].legend(loc="lower left", fontsize=8)
  return to_png(fig)


def subgroups(table):
  """Normalized difference of error / FPR / FNR per subgroup and variant (004 Tables 3-4):
  one panel per metric, subgroups down the y-axis, a bar per compressed variant."""
  groups = [c for c in table.columns if c not in ("variant", "model", "metric")]
  variants = list(dict.fromkeys(table.variant))
  nd = table[table.model == "normalized_difference"]
  fig, axes = _figure(0.9 + 0.32 * len(groups) * max(1, len(variants)) ** 0.5, ncols=3,
                      width=WIDE, sharey=True)
  n = max(1, len(variants))
  height = 0.8 / n
  y = np.arange(len(groups))
  for ax, metric in zip(axes, ("error", "fpr", "fnr")):
    t = nd[nd.metric == metric].set_index("variant")
    for i, v in enumerate(variants):
      vals = t.loc[v, groups].to_numpy(float)
      pos = y + (i - (n - 1) / 2) * height
      ax.barh(pos, np.nan_to_num(vals), height, color=color(i + 1), label=v)
      for p, val in zip(pos, vals):
        if np.isnan(val):
          ax.text(0, p, " n/a", va="center", fontsize=7)
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_title(("error" if metric == "error" else metric.upper())
                 + ": normalized difference (%)")
  axes[0].set_yticks(y)
  axes[0].set_yticklabels(groups)
  axes[0].invert_yaxis()
  axes[0].legend(fontsize=7)
  return to_png(fig)


def over_indexing(table):
  """004 Figure 2: training share of each attribute vs its relative representation among
  Taxicab CIEs (1 = proportional)."""
  variants = list(dict.fromkeys(table.variant))
  fig, (ax,) = _figure(3.8)
  for i, v in enumerate(variants):
    t = table[table.variant == v]
    ax.scatter(100 * t.train_share, t.relative_representation, color=color(i + 1), label=v,
               s=18)
    if len(t) <= 45:
      for _, row in t.iterrows():
        ax.annotate(str(row.attribute), (100 * row.train_share, row.relative_representation),
                    fontsize=6, xytext=(2, 2), textcoords="offset points")
  ax.axhline(1, color="black", linewidth=0.8, linestyle="--")
  ax.set_xlabel("share of the training set (%)")
  ax.set_ylabel("relative representation among CIEs")
  ax.set_title("Attribute over-indexing among Taxicab CIEs (004 Figure 2)")
  ax.legend(fontsize=8)
  return to_png(fig)


def robustness(table):
  """Top-1 per corruption normalized to dense, 100 (A_t / A_0 − 1) (000 Table 3)."""
  corruptions = list(dict.fromkeys(table.corruption))
  variants = [v for v in dict.fromkeys(table.variant) if v != "dense"]
  fig, (ax,) = _figure(3.4)
  series = []
  for i, v in enumerate(variants):
    t = table[table.variant == v].set_index("corruption")
    series.append((v, [float(t.top1_norm.get(c, np.nan)) for c in corruptions], color(i + 1)))
  _bars(ax, corruptions, series, "top-1 vs dense (%)")
  ax.set_title("Robustness per corruption, normalized to dense (000 Table 3)")
  if series:
    ax.legend(fontsize=8)
  return to_png(fig)


def noise(accuracy, similarity, potential=None):
  """Top-1, prune potential and matching labels vs ε (003 Figures 1, 4a), one panel each."""
  panels = 3 if potential is not None else 2
  fig, axes = _figure(3.2, ncols=panels, width=WIDE)
  variants = list(dict.fromkeys(accuracy.variant))
  for i, v in enumerate(variants):
    t = accuracy[accuracy.variant == v]
    axes[0].plot(t.eps, 100 * t.top1, markersize=3, linewidth=2.2 if v == "dense" else 1.2,
                 label=v, **line_style(i))
  axes[0].set_xlabel("ε (normalized input)")
  axes[0].set_ylabel("top-1 (%)")
  axes[0].set_title("Accuracy under l-inf noise")
  axes[0].legend(fontsize=7)
  ax = axes[-1]
  for v in dict.fromkeys(similarity.variant):
    t = similarity[similarity.variant == v]
    style = ({"color": "black", "linestyle": ":", "marker": "o"} if v not in variants
             else line_style(variants.index(v)))
    ax.plot(t.eps, 100 * t.matching, markersize=3, label=v, **style)
  ax.set_xlabel("ε (normalized input)")
  ax.set_ylabel("labels matching dense member k (%)")
  ax.set_title("Noise similarity (003 Figure 4a)")
  if len(similarity):
    ax.legend(fontsize=7)
  if potential is not None:
    axes[1].plot(potential.eps, 100 * potential.prune_potential, marker="o", color=PLUM)
    axes[1].fill_between(potential.eps,
                         100 * (potential.prune_potential - potential.prune_potential_sd),
                         100 * (potential.prune_potential + potential.prune_potential_sd),
                         color=PLUM, alpha=0.15)
    axes[1].set_ylim(-5, 105)
    axes[1].set_xlabel("ε (normalized input)")
    axes[1].set_ylabel("prune potential (%)")
    axes[1].set_title("Prune potential under noise (003 Figure 1)")
  return to_png(fig)


def size_accuracy(table):
  """Shipped size (relative to dense float32, log) vs population top-1 per variant (#10).

  A hollow marker is the plain file, a filled one the shipped file; an arrow joins them when
  the sparse twin is shipped.
  """
  fig, (ax,) = _figure(3.6)
  dense_bytes = None
  for row in table.itertuples(index=False):
    if row.variant == "dense":
      dense_bytes = row.plain_bytes
  for i, row in enumerate(table.itertuples(index=False)):
    if row.top1 is None or row.shipped_vs_dense_float32 is None:
      continue
    y = 100 * row.top1
    shipped = row.shipped_vs_dense_float32
    plain = row.plain_bytes / dense_bytes if dense_bytes else shipped
    c, marker = color(i), line_style(i)["marker"]
    ax.scatter([plain], [y], facecolors="none", edgecolors=c, s=40, marker=marker, zorder=3)
    ax.scatter([shipped], [y], color=c, s=40, marker=marker, zorder=4,
               label=f"{row.variant} ({row.encoding})")
    if row.encoding == "sparse":
      ax.annotate("", xy=(shipped, y), xytext=(plain, y),
                  arrowprops={"arrowstyle": "->", "color": c})
  ax.set_xscale("log")
  ax.set_xlabel("shipped file size / dense float32 file (log)")
  ax.set_ylabel("population top-1 (%)")
  ax.set_title("Size vs accuracy per variant (hollow: plain file; filled: shipped)")
  if len(table):
    ax.legend(fontsize=7, loc="best")
  return to_png(fig)


def alpha(table, variants_summary):
  """002's slope α per variant: mean with its 99% CI, member slopes as dots, 1 dashed."""
  variants = list(table.variant)
  fig, (ax,) = _figure(3.2)
  for i, v in enumerate(variants):
    row = table[table.variant == v].iloc[0]
    members = np.asarray(variants_summary[v].get("alphas") or [], dtype=float)
    members = members[~np.isnan(members)]
    ax.scatter(np.full(members.size, i + 0.15), members, color=GREY, s=10, zorder=2)
    if not np.isnan(row.mean_alpha):
      ax.errorbar([i], [row.mean_alpha],
                  yerr=np.clip([[row.mean_alpha - row.ci_low],
                                [row.ci_high - row.mean_alpha]], 0, None)
                  if not np.isnan(row.ci_low) else None,
                  fmt="o", color=color(i + 1), capsize=4, zorder=3)
      ax.text(i - 0.1, row.mean_alpha, f"{row.mean_alpha:.2f} {row.label}", ha="right",
              va="center", fontsize=8)
  ax.axhline(1, color="black", linewidth=0.8, linestyle="--")
  ax.set_xticks(np.arange(len(variants)))
  ax.set_xticklabels(variants)
  ax.set_xlim(-0.8, len(variants) - 0.2)
  ax.set_ylabel("α (1 = recall balance unchanged)")
  ax.set_title("Recall distortion slope α, mean and 99% CI (002)")
  return to_png(fig)
