"""Generic drawing helpers of the report's figures (`plots`, `recall_study_plots`,
`units/prune_retrain`): figure creation, PNG rendering, legends, variant bars, heatmaps and
scatter labels, with the style constants they share.

No pyplot (no global state, no display): each figure is a `matplotlib.figure.Figure`
(constrained layout, `figure`) rendered with `FigureCanvasAgg` at `DPI * SCALE` pixels per inch
(`to_png`): the HTML shows a figure at (pixel width / `SCALE`) CSS px, so it is never upscaled.
PNG metadata carries no software version or date, so the same tables give the same bytes (with
the same matplotlib).

Legible from 2 to 30 variants: variants run down the y axis of horizontal bars
(`variant_barh`, `variant_yaxis`; figure height grows with their number, `rows_height`) or
across a `heatmap`, legends sit outside the axes (`legend_below`), labels of scatter points are
moved apart (`place_labels`), and every variant has the style of its family (`variant_styles`,
from `palette.styles`: colour = trained network, hatch / marker = format).
"""

import io

import matplotlib
from matplotlib import colors as mpl_colors
from matplotlib import figure as mpl_figure
from matplotlib import lines as mpl_lines
from matplotlib import patches as mpl_patches
from matplotlib.backends import backend_agg
import numpy as np

from tf_forget.report import palette

DPI = 100
SCALE = 2  # PNGs have DPI * SCALE pixels per inch; the HTML shows them at 1 / SCALE.
WIDTH = 7.5  # inches
WIDE = 12.0  # inches, figures shown full width
ROW = 0.26  # inches per variant row of a horizontal bar chart or heatmap
PLUM = "#8e4585"
GREEN = "#2ca02c"
GREY = "#b0b0b0"
REFERENCE = "#c9c9c9"  # the dense population as a reference bar beside a variant
# A fixed, colour-blind-friendly cycle for series that are not variants (distributions).
PALETTE = (
  "#4c72b0",
  "#dd8452",
  "#55a868",
  "#c44e52",
  "#8172b3",
  "#937860",
  "#da8bc3",
  "#8c8c8c",
  "#ccb974",
  "#64b5cd",
)
_LINESTYLES = ("-", "--", "-.", ":")
_MARKERS = ("o", "s", "^", "D")
_RC = {
  "font.size": 9,
  "axes.titlesize": 10,
  "axes.grid": True,
  "grid.alpha": 0.3,
  "axes.axisbelow": True,
  "svg.hashsalt": "tf_forget",
  "path.simplify": False,
  "legend.fontsize": 8,
  "figure.titlesize": 10,
}


def color(i):
  """The i-th colour of the fixed palette (series that are not variants)."""
  return PALETTE[i % len(PALETTE)]


def line_style(i):
  """Colour, line style and marker of the i-th series; distinct for 40 series."""
  r = (i // len(PALETTE)) % len(_LINESTYLES)
  return {"color": color(i), "linestyle": _LINESTYLES[r], "marker": _MARKERS[r]}


def variant_styles(variants):
  """`palette.styles` of a figure's variants (colour, hatch, hatch_color, marker, linestyle)."""
  return palette.styles(list(variants))


def figure(height, ncols=1, width=WIDTH, sharey=False, nrows=1, sharex=False):
  """A figure of `nrows` x `ncols` axes (a flat list, row-major); `height` is per row."""
  with matplotlib.rc_context(_RC):
    fig = mpl_figure.Figure(figsize=(width, height * nrows), dpi=DPI * SCALE, layout="constrained")
    axes = []
    for i in range(ncols * nrows):
      kw = {
        "sharey": axes[0] if sharey and axes else None,
        "sharex": axes[0] if sharex and axes else None,
      }
      axes.append(fig.add_subplot(nrows, ncols, i + 1, **kw))
  return fig, axes


def rows_height(n, base=1.3, per=ROW, least=2.4):
  """Height (inches) of a figure with `n` rows of variants."""
  return max(least, base + per * max(n, 1))


def to_png(fig):
  """Renders a figure to PNG bytes at `DPI * SCALE` without metadata (deterministic).

  The figure keeps its size in inches: the PNG is (width · DPI · SCALE) pixels wide.
  """
  with matplotlib.rc_context(_RC):
    canvas = backend_agg.FigureCanvasAgg(fig)
    if fig.get_layout_engine() is None:
      fig.tight_layout()
    fig.set_dpi(DPI * SCALE)
    buf = io.BytesIO()
    canvas.print_png(buf, metadata={"Software": None})
  return buf.getvalue()


def legend_shape(width, labels, fontsize=8):
  """(columns, rows) of a `legend_below` of these labels in a figure `width` inches wide."""
  if not len(labels):
    return 0, 0
  per = 0.5 + 0.075 * fontsize / 8 * max(len(str(l)) for l in labels)  # inches per entry
  ncol = max(1, min(len(labels), int(width * 0.95 // per)))
  return ncol, -(-len(labels) // ncol)


def legend_height(width, labels, fontsize=8):
  """Inches a `legend_below` takes: add it to the figure's height."""
  return 0.1 + 0.2 * fontsize / 8 * legend_shape(width, labels, fontsize)[1]


def legend_below(fig, handles, labels, fontsize=8, title=None):
  """A figure legend under the axes (constrained layout makes room), as many columns as fit."""
  if not handles:
    return None
  ncol, _ = legend_shape(fig.get_figwidth(), labels, fontsize)
  return fig.legend(
    handles,
    labels,
    loc="outside lower center",
    ncol=ncol,
    fontsize=fontsize,
    frameon=False,
    title=title,
    title_fontsize=fontsize,
  )


def patch(style, label=None):
  """A legend patch with a variant's fill and hatch."""
  return mpl_patches.Patch(
    facecolor=style["color"],
    hatch=style["hatch"] or None,
    edgecolor=style["hatch_color"],
    linewidth=0,
    label=label,
  )


def line(style, label=None, **kw):
  """A legend line with a variant's colour, marker and line style."""
  kw = {"color": style["color"], "marker": style["marker"], "linestyle": style["linestyle"], **kw}
  return mpl_lines.Line2D([], [], label=label, **kw)


def variant_barh(ax, pos, values, styles, height, xerr=None, left=0.0):
  """Horizontal bars at y = pos, each in its variant's style (`styles` aligned with pos)."""
  v = np.asarray(values, dtype=float)
  for p, val, s in zip(pos, v, styles):
    ax.barh(
      p,
      0.0 if np.isnan(val) else val - left,
      height,
      left=left,
      color=s["color"],
      hatch=s["hatch"] or None,
      edgecolor=s["hatch_color"],
      hatchcolor=s["hatch_color"],
      linewidth=0,
    )
  if xerr is not None:
    ax.errorbar(v, pos, xerr=xerr, fmt="none", ecolor="black", capsize=2.5, linewidth=0.8)


def bar_labels(ax, pos, values, texts, pad=0.01, fontsize=7):
  """`texts` right of each bar end (left of a negative one); "n/a" at 0 for NaN."""
  span = np.diff(ax.get_xlim())[0]
  for p, v, t in zip(pos, values, texts):
    if np.isnan(v):
      ax.text(0, p, " n/a", va="center", ha="left", fontsize=fontsize, color="#666")
      continue
    right = v >= 0
    ax.text(
      v + (pad if right else -pad) * span,
      p,
      t,
      va="center",
      ha="left" if right else "right",
      fontsize=fontsize,
    )


def variant_yaxis(axes, variants):
  """Variant names down the y axis of shared-y `axes` (a list), first at the top, named on the
  first panel only."""
  axes[0].set_yticks(np.arange(len(variants)))
  axes[0].set_yticklabels(variants)
  axes[0].set_ylim(len(variants) - 0.5, -0.5)
  for ax in axes:
    ax.grid(False, axis="y")
  for ax in axes[1:]:
    ax.tick_params(labelleft=False)


def heatmap(ax, values, rows, cols, fmt="{:+.1f}", cmap="RdBu", vmax=None, fontsize=7):
  """Annotated cells (rows x cols), a diverging map centred at 0, NaN cells grey "n/a".

  Returns:
    The image (for a colorbar).
  """
  v = np.asarray(values, dtype=float)
  if vmax is None:
    vmax = float(np.nanmax(np.abs(v))) if np.isfinite(v).any() else 1.0
  norm = mpl_colors.Normalize(-max(vmax, 1e-9), max(vmax, 1e-9))
  cm = matplotlib.colormaps[cmap].with_extremes(bad="#e6e6e6")
  image = ax.imshow(
    np.ma.masked_invalid(v), cmap=cm, norm=norm, aspect="auto", interpolation="nearest"
  )
  for i in range(v.shape[0]):
    for j in range(v.shape[1]):
      bg = "#e6e6e6" if np.isnan(v[i, j]) else mpl_colors.to_hex(cm(norm(v[i, j])))
      ax.text(
        j,
        i,
        "n/a" if np.isnan(v[i, j]) else fmt.format(v[i, j]),
        ha="center",
        va="center",
        fontsize=fontsize,
        color=palette.ink(bg),
      )
  ax.set_xticks(np.arange(len(cols)))
  ax.set_xticklabels(
    cols,
    rotation=40 if len(cols) > 1 else 0,
    ha="right" if len(cols) > 1 else "center",
    rotation_mode="anchor",
  )
  ax.set_yticks(np.arange(len(rows)))
  ax.set_yticklabels(rows)
  ax.grid(False)
  return image


def place_labels(fig, ax, xy, texts, fontsize=7, gap=5.0, colors=None, obstacles=(), segments=()):
  """Annotates data points with texts that overlap neither each other nor the points.

  Each label goes right of its point if it fits inside the axes, else left, moved up or down
  in steps of half a text line until it is clear (greedy, points taken top to bottom); a
  moved label gets a thin leader line. The layout is made final first, so positions are exact
  for this figure; the labels are left out of the layout.

  Args:
    fig: the figure (constrained layout).
    ax: its axes (limits final).
    xy: [(x, y)] data coordinates.
    texts: one label per point.
    fontsize: points.
    gap: points between a point and its label.
    colors: optional text colour per label.
    obstacles: more [(x, y)] data points labels must not cover.
    segments: [((x0, y0), (x1, y1))] horizontal or vertical lines labels must not cover.
  """
  if not len(xy):
    return
  if not isinstance(fig.canvas, backend_agg.FigureCanvasAgg):
    backend_agg.FigureCanvasAgg(fig)
  fig.set_dpi(DPI * SCALE)
  fig.draw_without_rendering()
  renderer = fig.canvas.get_renderer()
  px = fig.dpi / 72.0
  frame = ax.get_window_extent(renderer)
  pts = [ax.transData.transform(p) for p in xy]
  r = 4 * px
  placed = [
    (x - r, y - r, x + r, y + r) for x, y in pts + [ax.transData.transform(p) for p in obstacles]
  ]
  for a, b in segments:
    (x0, y0), (x1, y1) = ax.transData.transform(a), ax.transData.transform(b)
    placed.append((min(x0, x1), min(y0, y1) - 2 * px, max(x0, x1), max(y0, y1) + 2 * px))

  def free(box):
    inside = box[0] >= frame.x0 and box[2] <= frame.x1 and box[1] >= frame.y0 and box[3] <= frame.y1
    return inside and not any(
      box[0] < b[2] and b[0] < box[2] and box[1] < b[3] and b[1] < box[3] for b in placed
    )

  colors = list(colors or ["black"] * len(texts))
  for i in sorted(range(len(texts)), key=lambda i: (-pts[i][1], pts[i][0])):
    probe = ax.text(0, 0, texts[i], fontsize=fontsize)
    ext = probe.get_window_extent(renderer)
    probe.remove()
    w, h = ext.width + 2 * px, ext.height + px
    (x, y), g = pts[i], gap * px
    side, dy = 1, 0.0
    for k in range(120):
      step = (k + 1) // 2 * (1 if k % 2 else -1) * h / 2
      hit = [s for s in (1, -1) if free(_box(x, y + step, g, w, h, s))]
      if hit:
        side, dy = hit[0], step
        break
    placed.append(_box(x, y + dy, g, w, h, side))
    moved = abs(dy) > 0.6 * h
    a = ax.annotate(
      texts[i],
      xy[i],
      xytext=(side * gap, dy / px),
      textcoords="offset points",
      fontsize=fontsize,
      va="center",
      ha="left" if side == 1 else "right",
      color=colors[i],
      annotation_clip=False,
      arrowprops={"arrowstyle": "-", "color": "#999", "linewidth": 0.5, "shrinkA": 0, "shrinkB": 3}
      if moved
      else None,
    )
    a.set_in_layout(False)


def _box(x, y, gap, w, h, side):
  x0 = x + gap if side == 1 else x - gap - w
  return (x0, y - h / 2, x0 + w, y + h / 2)
