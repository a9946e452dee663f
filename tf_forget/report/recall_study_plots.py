"""Figures of 002's recall distortion, drawn with `figure_kit` (Agg, PNG bytes).

* `alpha`: the slope α of every compressed variant against 1 (002 Figures 3-5): mean with its
  99% CI, member slopes as grey dots; from the `recall_distortion` table (`units.recall`).
* `alpha_boxplots`: 002 Figure 1 — boxplots of the model slopes α_t(m) across dense models m
  at each compression ratio t, one panel per pruning algorithm P; each tick names the ratio
  with its CI label ("<", ">", "?", 002 §6.2), the mean with its 99% CI beside the box, α = 1
  dashed.
* `balance_scatter`: 002 Figure 5 — normalized recall balance B̄^c(m) of the dense parent
  (x) vs B̄^c_t(m) of its pruned self (y), one point per (class, model), ratios as rows and
  algorithms as columns; y = x dashed, y = α̂·x solid, α̂ / r² / Ā_t printed in the panel.

Inputs of the last two: the `oneshot_alpha` table and `recall_study.Study.cells`.
"""

import numpy as np

from tf_forget.report import figure_kit

MAX_SCATTER_ROWS = 6


def _cells(cells):
  return {c["variant"]: c for c in cells}


def alpha(table, variants_summary):
  """002's slope α per variant, variants down y: mean with its 99% CI, member slopes as grey
  dots, 1 dashed; "mean label" printed beside the CI.

  Args:
    table: `recall_distortion` (`variant`, `mean_alpha`, `ci_low`, `ci_high`, `label`).
    variants_summary: variant -> summary dict (`alphas`: the member slopes).

  Returns:
    PNG bytes.
  """
  variants = list(table.variant)
  styles = figure_kit.variant_styles(variants)
  fig, (ax,) = figure_kit.figure(
    figure_kit.rows_height(len(variants), base=1.1, per=0.32, least=2.2)
  )
  right = []
  for i, v in enumerate(variants):
    row = table[table.variant == v].iloc[0]
    members = np.asarray(variants_summary[v].get("alphas") or [], dtype=float)
    members = members[~np.isnan(members)]
    ax.scatter(members, np.full(members.size, i + 0.22), color=figure_kit.GREY, s=9, zorder=2)
    if np.isnan(row.mean_alpha):
      ax.text(1, i, " n/a", va="center", fontsize=7, color="#666")
      continue
    ci = not np.isnan(row.ci_low)
    s = styles[v]
    ax.errorbar(
      [row.mean_alpha],
      [i],
      xerr=np.clip([[row.mean_alpha - row.ci_low], [row.ci_high - row.mean_alpha]], 0, None)
      if ci
      else None,
      fmt=s["marker"],
      color=s["color"],
      capsize=3,
      markersize=5,
      zorder=3,
    )
    right.append(
      (
        max(row.ci_high if ci else row.mean_alpha, members.max(initial=row.mean_alpha)),
        i,
        f"{row.mean_alpha:.2f} {row.label}",
      )
    )
  ax.axvline(1, color="black", linewidth=0.8, linestyle="--")
  lo, hi = ax.get_xlim()
  ax.set_xlim(lo, hi + 0.18 * (hi - lo))
  for x, i, text in right:
    ax.text(x + 0.015 * (hi - lo), i, " " + text, va="center", ha="left", fontsize=7.5)
  figure_kit.variant_yaxis([ax], variants)
  ax.set_xlabel("α (1 = recall balance unchanged)")
  ax.set_title("Recall distortion slope α, mean and 99% CI (002); grey: members")
  return figure_kit.to_png(fig)


def alpha_boxplots(table, cells):
  """002 Figure 1 for one run: α_t(m) per ratio, one panel per algorithm.

  Args:
    table: `oneshot_alpha` (`variant`, `algorithm`, `ratio`, `mean_alpha`, `ci_low`,
      `ci_high`, `label`).
    cells: `Study.cells` (`alphas` {k_dense: α}).

  Returns:
    PNG bytes.
  """
  by_variant = _cells(cells)
  styles = figure_kit.variant_styles(table.variant)
  algs = list(dict.fromkeys(table.algorithm))
  n = max(1, len(algs))
  fig, axes = figure_kit.figure(
    3.4, ncols=n, width=figure_kit.WIDE if n > 2 else figure_kit.WIDTH, sharey=False
  )  # own scale: a collapsed algorithm's α spans ±100s
  for ax, alg in zip(axes, algs):
    rows = list(table[table.algorithm == alg].itertuples(index=False))
    for j, row in enumerate(rows):
      a = np.array([x for x in by_variant[row.variant]["alphas"].values() if np.isfinite(x)])
      if a.size:
        ax.boxplot(
          [a],
          positions=[j],
          widths=0.45,
          patch_artist=True,
          manage_ticks=False,
          boxprops={"facecolor": styles[row.variant]["color"], "alpha": 0.55},
          medianprops={"color": "black"},
          flierprops={"markersize": 3},
        )
      if np.isfinite(row.mean_alpha):
        err = (
          None
          if not np.isfinite(row.ci_low)
          else np.clip([[row.mean_alpha - row.ci_low], [row.ci_high - row.mean_alpha]], 0, None)
        )
        ax.errorbar(
          [j + 0.32],
          [row.mean_alpha],
          yerr=err,
          fmt="o",
          color=figure_kit.PLUM,
          capsize=3,
          markersize=4,
          zorder=3,
        )
    ax.axhline(1, color="black", linewidth=0.8, linestyle="--")
    ax.set_xticks(np.arange(len(rows)))
    crowded = len(rows) * 3.4 / 7.5 * n > 6 or len(rows) > 8
    ax.set_xticklabels(
      [f"{row.ratio:g}{row.label}" for row in rows],
      rotation=45 if crowded else 0,
      ha="right" if crowded else "center",
      rotation_mode="anchor" if crowded else "default",
    )
    ax.grid(False, axis="x")
    ax.set_xlim(-0.6, max(len(rows), 2) - 0.4)
    ax.set_xlabel("compression ratio r (CI label)")
    ax.set_title(f"{alg.upper()}: α per dense model")
  axes[0].set_ylabel("α_t(m)  (1 = balance unchanged)")
  return figure_kit.to_png(fig)


def balance_scatter(table, cells):
  """002 Figure 5 for one run: B̄ before (x) vs after (y), ratios × algorithms.

  At most `MAX_SCATTER_ROWS` ratios (the largest) are drawn.

  Args:
    table: `oneshot_alpha` (`variant`, `algorithm`, `ratio`, `alpha_hat`, `r2`,
      `mean_accuracy_t`).
    cells: `Study.cells` (`nrb_0`, `nrb_t` float `[K, C]` or None).

  Returns:
    PNG bytes.
  """
  by_variant = _cells(cells)
  styles = figure_kit.variant_styles(table.variant)
  algs = list(dict.fromkeys(table.algorithm))
  ratios = sorted({round(float(r), 9) for r in table.ratio})[-MAX_SCATTER_ROWS:]
  ncols, nrows = max(1, len(algs)), max(1, len(ratios))
  fig, axes = figure_kit.figure(
    2.5, ncols=ncols, nrows=nrows, width=figure_kit.WIDE if ncols > 2 else figure_kit.WIDTH
  )
  for ax in axes:
    ax.set_visible(False)
  for row in table.itertuples(index=False):
    r = round(float(row.ratio), 9)
    if r not in ratios:
      continue
    i, j = ratios.index(r), algs.index(row.algorithm)
    ax = axes[i * ncols + j]
    if ax.get_visible():  # a second variant with the same cell (r and t): keep the first
      continue
    ax.set_visible(True)
    cell = by_variant[row.variant]
    # Each panel on its own symmetric scale: a collapsed network's B̄ (up to 1/A − 1) would
    # shrink every healthy panel to a dot on a shared one.
    lim = 1e-3
    if cell["nrb_0"] is not None:
      both = np.concatenate([cell["nrb_0"].ravel(), cell["nrb_t"].ravel()])
      if np.isfinite(both).any():
        lim = max(lim, float(np.nanmax(np.abs(both))))
    lim *= 1.08
    if cell["nrb_0"] is not None:
      ax.scatter(
        cell["nrb_0"].ravel(),
        cell["nrb_t"].ravel(),
        s=6,
        alpha=0.45,
        color=styles[row.variant]["color"],
        linewidths=0,
      )
    ax.plot([-lim, lim], [-lim, lim], color=figure_kit.GREY, linestyle="--", linewidth=0.9)
    if np.isfinite(row.alpha_hat):
      ax.plot(
        [-lim, lim], [-lim * row.alpha_hat, lim * row.alpha_hat], color="black", linewidth=1.0
      )
    ax.text(
      0.03,
      0.97,
      f"α̂ = {row.alpha_hat:.2f}\nr² = {row.r2:.2f}\nĀ_t = {row.mean_accuracy_t:.3f}",
      transform=ax.transAxes,
      va="top",
      fontsize=7,
    )
    ax.set_xlim(-lim, lim)
    ax.set_ylim(-lim, lim)
    ax.set_title(f"{row.algorithm.upper()}, r = {row.ratio:g}", fontsize=9)
    if i == nrows - 1:
      ax.set_xlabel("B̄ dense parent")
    if j == 0:
      ax.set_ylabel("B̄ pruned")
  return figure_kit.to_png(fig)
