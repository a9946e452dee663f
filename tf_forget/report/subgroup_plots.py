"""The subgroups' figures, returned as PNG bytes (drawn with the helpers of `figure_kit`): 004
Tables 3-4 (error / FPR / FNR change per subgroup, in points) and 004 Figure 2 (attribute
over-indexing among Taxicab CIEs).

Inputs are the `subgroups` and `over_indexing` tables (docs/artifacts/report.md).
"""

import numpy as np

from tf_forget.report import figure_kit

MAX_SUBGROUP_BARS = 6  # more compressed variants: the subgroup figure becomes a heatmap


def _points(table, model):
  """Long-format rows (`metric`, `variant`, `subgroup`, value) of one `model` of `subgroups`."""
  groups = [c for c in table.columns if c not in ("variant", "model", "metric")]
  t = table[table.model == model].melt(
    id_vars=["variant", "metric"], value_vars=groups, var_name="subgroup", value_name="value"
  )
  return t, groups


def subgroup_points(table):
  """What `subgroups` draws: per (metric, variant, subgroup) the absolute difference in points
  (100 × compressed − dense rate) and the normalized difference (%) beside it.

  Args:
    table: `subgroups` (`variant`, `model`, `metric`, one column per subgroup).

  Returns:
    DataFrame `metric`, `variant`, `subgroup`, `points`, `normalized` (table order).
  """
  absolute, groups = _points(table, "absolute_difference")
  normalized, _ = _points(table, "normalized_difference")
  out = absolute.rename(columns={"value": "points"})
  out["points"] = 100 * out["points"].astype(float)
  out = out.merge(
    normalized.rename(columns={"value": "normalized"}),
    how="left",
    on=["variant", "metric", "subgroup"],
  )
  order = {m: i for i, m in enumerate(("error", "fpr", "fnr"))}
  out["_g"] = out.subgroup.map({g: i for i, g in enumerate(groups)})
  out = out.sort_values(
    ["metric", "_g"], key=lambda s: s.map(order) if s.name == "metric" else s, kind="stable"
  )
  return out[["metric", "variant", "subgroup", "points", "normalized"]].reset_index(drop=True)


def subgroups(table):
  """Error / FPR / FNR change per subgroup and variant (004 Tables 3-4) in percentage points
  (compressed − dense rate, the `absolute_difference` rows; red / right = worse), the
  normalized difference (%) in brackets when there is room: one panel per metric on one
  shared scale. Up to `MAX_SUBGROUP_BARS` variants a bar per variant with subgroups down y,
  beyond that a heatmap (variants x subgroups)."""
  pts = subgroup_points(table)
  groups = list(dict.fromkeys(pts.subgroup))
  variants = list(dict.fromkeys(pts.variant))
  metrics = ("error", "fpr", "fnr")
  names = {m: "error" if m == "error" else m.upper() for m in metrics}
  finite = pts.points[np.isfinite(pts.points)].to_numpy(float)
  lo, hi = min(0.0, *finite), max(0.0, *finite)
  n = max(1, len(variants))
  if n > MAX_SUBGROUP_BARS:
    fig, axes = figure_kit.figure(
      figure_kit.rows_height(n, base=1.2 + 0.05 * max(map(len, groups), default=0)),
      ncols=3,
      width=figure_kit.WIDE,
      sharey=True,
    )
    for ax, metric in zip(axes, metrics):
      t = pts[pts.metric == metric].pivot(index="variant", columns="subgroup", values="points")
      image = figure_kit.heatmap(
        ax,
        t.reindex(index=variants, columns=groups),
        variants,
        groups,
        cmap="RdBu_r",
        vmax=max(-lo, hi, 5.0),
        fontsize=6.5,
      )
      ax.set_title(f"{names[metric]}: compressed − dense (points)")
    figure_kit.variant_yaxis(axes, variants)
    fig.colorbar(image, ax=axes, shrink=0.7, label="points, compressed − dense (red: worse)")
    fig.suptitle(
      "Subgroup error / FPR / FNR: compressed − dense in percentage points (004 Tables 3-4)"
    )
    return figure_kit.to_png(fig)
  styles = figure_kit.variant_styles(variants)
  fig, axes = figure_kit.figure(
    1.3 + len(groups) * (0.16 * n + 0.18) + figure_kit.legend_height(figure_kit.WIDE, variants),
    ncols=3,
    width=figure_kit.WIDE,
    sharey=True,
    sharex=True,
  )
  span = max(hi - lo, 1.0)
  ax_lo, ax_hi = lo - (0.45 * span if lo < 0 else 0.04 * span), hi + 0.45 * span
  height = 0.8 / n
  y = np.arange(len(groups))
  for ax, metric in zip(axes, metrics):
    ax.set_xlim(ax_lo, ax_hi)
    for i, v in enumerate(variants):
      t = pts[(pts.metric == metric) & (pts.variant == v)].set_index("subgroup").reindex(groups)
      pos = y + (i - (n - 1) / 2) * height
      vals = t.points.to_numpy(float)
      figure_kit.variant_barh(ax, pos, vals, [styles[v]] * len(groups), height * 0.92)
      texts = [
        ("0" if abs(p) < 0.05 else f"{p:+.1f}")
        + (f" ({q:+.0f}%)" if n <= 2 and np.isfinite(q) and abs(p) >= 0.05 else "")
        for p, q in zip(vals, t.normalized.to_numpy(float))
      ]
      figure_kit.bar_labels(ax, pos, vals, texts, fontsize=7 if n <= 3 else 6.5)
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_xlabel("points (compressed − dense)")
    ax.set_title(names[metric])
  figure_kit.variant_yaxis(axes, groups)  # subgroup names down y, first at the top
  figure_kit.legend_below(fig, [figure_kit.patch(styles[v]) for v in variants], variants)
  fig.suptitle(
    "Subgroup error / FPR / FNR: compressed − dense in percentage points (004 "
    "Tables 3-4)" + ("; in brackets the normalized difference, %" if n <= 2 else "")
  )
  return figure_kit.to_png(fig)


def over_indexing(table):
  """004 Figure 2: training share of each attribute vs its relative representation among
  Taxicab CIEs (1 = proportional); a marker per variant, each attribute named once (at its
  highest point, labels moved apart), the variants' legend below."""
  variants = list(dict.fromkeys(table.variant))
  styles = figure_kit.variant_styles(variants)
  fig, (ax,) = figure_kit.figure(3.8 + figure_kit.legend_height(figure_kit.WIDTH, variants))
  for v in variants:
    t = table[table.variant == v]
    s = styles[v]
    ax.scatter(
      100 * t.train_share,
      t.relative_representation,
      color=s["color"],
      marker=s["marker"],
      s=22,
      edgecolors="white",
      linewidths=0.4,
      zorder=3,
    )
  ax.axhline(1, color="black", linewidth=0.8, linestyle="--")
  ax.set_xlabel("share of the training set (%)")
  ax.set_ylabel("relative representation among CIEs")
  ax.set_title("Attribute over-indexing among Taxicab CIEs (004 Figure 2)")
  ax.margins(x=0.15, y=0.12)
  figure_kit.legend_below(
    fig, [figure_kit.line(styles[v], linestyle="none") for v in variants], variants
  )
  top = table.loc[table.groupby("attribute", sort=False).relative_representation.idxmax().dropna()]
  if 0 < len(top) <= 45:
    figure_kit.place_labels(
      fig,
      ax,
      list(zip(100 * top.train_share, top.relative_representation)),
      [str(a) for a in top.attribute],
      fontsize=6.5,
      obstacles=list(zip(100 * table.train_share, table.relative_representation)),
    )
  return figure_kit.to_png(fig)
