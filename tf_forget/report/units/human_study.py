"""000's human study (§3.3, Table 7; `tf_forget.report.human_study`), when the report is built
with its options: the blind-annotation export (given as `export`, written beside the report)
and / or Table 7 from filled annotations (`human_study`).

Its section shows 000 Table 7 and a Figure 5 (`human_study`), only when the report was built with
human-study options (`units.registry.PAGE`, after "pie"). Figure: left, each attribute's share among
the sample's PIEs (CIEs) and among its non-PIEs, with Wilson 95% intervals (000 Figure 5 draws these
shares as two pie charts; the attributes are not exclusive — an image may have several — so here
side by side bars); right, the relative representation (share ratio) with its interval on a log
axis, 1 dashed (000 Table 7).
"""

from matplotlib import patches as mpl_patches
import numpy as np
import pandas as pd

from tf_forget.report import html
from tf_forget.report import human_study
from tf_forget.report import unit
from tf_forget.report.figure_kit import figure
from tf_forget.report.figure_kit import GREY
from tf_forget.report.figure_kit import legend_below
from tf_forget.report.figure_kit import legend_height
from tf_forget.report.figure_kit import PLUM
from tf_forget.report.figure_kit import rows_height
from tf_forget.report.figure_kit import to_png
from tf_forget.report.figure_kit import WIDE


def figure_png(table, flagged_label, other_label):
  """PNG bytes: shares per group (left), share ratio with its interval (right)."""
  attrs = list(table.attribute)
  pos = np.arange(len(attrs))[::-1]
  labels = [flagged_label, other_label]
  fig, (left, right) = figure(
    rows_height(len(attrs), base=1.2, per=0.42) + legend_height(WIDE, labels), ncols=2, width=WIDE
  )
  for offset, prefix, color in ((0.2, "flagged", PLUM), (-0.2, "other", GREY)):
    shares = table[f"{prefix}_share"].to_numpy(float)
    err = np.abs(
      np.vstack(
        [
          shares - table[f"{prefix}_share_low"].to_numpy(float),
          table[f"{prefix}_share_high"].to_numpy(float) - shares,
        ]
      )
    )
    left.barh(
      pos + offset,
      100 * shares,
      height=0.38,
      color=color,
      xerr=100 * err,
      error_kw={"elinewidth": 0.8, "capsize": 2},
    )
  left.set_yticks(pos, attrs)
  left.set_xlim(0, 105)
  left.set_xlabel("share of the group's sample (%)")
  left.set_title("Codified attributes per group (000 Figure 5)")
  ratio = table.ratio.to_numpy(float)
  low, high = table.ratio_low.to_numpy(float), table.ratio_high.to_numpy(float)
  finite = np.concatenate([v[np.isfinite(v) & (v > 0)] for v in (ratio, low, high)])
  lo_lim = min(0.5, float(finite.min()) / 1.5) if finite.size else 0.1
  hi_lim = max(2.0, float(finite.max()) * 1.5) if finite.size else 10.0
  for y, r, a, b in zip(pos, ratio, low, high):
    if np.isfinite(a) and np.isfinite(b):
      right.plot([max(a, lo_lim), min(b, hi_lim)], [y, y], color="black", linewidth=1.2)
    if np.isfinite(r) and r > 0:
      right.plot([r], [y], "o", color=PLUM, markersize=5)
    elif r == 0 or np.isinf(r):  # a share of 0 in one group: an arrow at the axis' end
      right.plot(
        [lo_lim if r == 0 else hi_lim], [y], "<" if r == 0 else ">", color=PLUM, clip_on=False
      )
    else:
      right.text(1, y, "  coded in neither group", va="center", fontsize=7, color="#777")
  right.axvline(1, color="black", linewidth=0.8, linestyle="--")
  right.set_xscale("log")
  right.set_xlim(lo_lim, hi_lim)
  right.set_yticks(pos, attrs)
  right.set_xlabel(f"relative representation: {flagged_label} share / {other_label} share")
  right.set_title("Relative representation, 95% interval (000 Table 7)")
  legend_below(fig, [mpl_patches.Patch(color=PLUM), mpl_patches.Patch(color=GREY)], labels)
  return to_png(fig)


def _shares(table, prefix):
  """'75.0% [59.8, 85.8]' per row: a share (count / n) with its Wilson interval, in %."""
  return [
    f"{100 * v:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}] ({int(c)}/{int(n)})"
    for v, lo, hi, c, n in zip(
      table[f"{prefix}_share"],
      table[f"{prefix}_share_low"],
      table[f"{prefix}_share_high"],
      table[f"{prefix}_count"],
      table[f"{prefix}_n"],
    )
  ]


def _interval(low, high):
  return "n/a" if low != low or high != high else f"[{low:.3g}, {high:.3g}]"


def section(t, settings, notes):
  """The "human-study" section's HTML when the report has human-study settings, else
  `unit.Skip`.

  Args:
    t: the `human_study` table (None: no annotations read).
    settings: the `human_study` settings, or None.
    notes: its notes (a list).
  """
  if not settings:
    return unit.Skip("no human study asked")
  group = settings.get("group") or "pie"
  flagged, other = group.upper(), f"non-{group.upper()}"
  definition = (
    "modal label of the compressed population differs from the dense one's"
    if group == "pie"
    else f"Taxicab CIE at percentile {settings.get('percentile')} with d_T &gt; 0"
  )
  lead = (
    f"<p class=\"lead\">000's human study (§3.3, appendix C): a balanced random sample "
    f"of {settings.get('per_group')} {flagged} ({definition}) and "
    f"{settings.get('per_group')} {other} examples of {html.esc(settings.get('variant'))}"
    f" (seed {settings.get('seed')}; {settings.get('flagged_total')} {flagged} and "
    f"{settings.get('other_total')} others in the split), shuffled and shown to "
    "annotators without the group, who coded each attribute 0/1. Per attribute: its "
    f"share among the {flagged} and among the {other} images of the sample, and the "
    f"relative representation {flagged} share / {other} share (1 = the same; 000 Table "
    "7) with its 95% interval (Katz log method, scipy <code>relative_risk</code>; "
    "+0.5 adjusted where a count is 0: interval_method) and Fisher's exact p.</p>"
  )
  parts = [lead] + [f"<p class=\"skip\">{html.esc(n)}</p>" for n in notes]
  if t is None:
    parts.append(
      "<p class=\"skip\">No annotations read yet: fill the export's "
      "<code>sheet/annotations.csv</code> and pass it back (<code>--annotations"
      "</code>) to add 000 Table 7 here.</p>"
    )
    return "".join(parts)
  shown = pd.DataFrame(
    {
      "attribute": t.attribute,
      "source": t.source,
      f"{flagged} share [95%] (count/n)": _shares(t, "flagged"),
      f"{other} share [95%] (count/n)": _shares(t, "other"),
      "ratio": t.ratio,
      "95% interval": [_interval(a, b) for a, b in zip(t.ratio_low, t.ratio_high)],
      "interval_method": t.interval_method,
      "p (Fisher)": t.p_value,
    }
  )
  formats = {"ratio": "num", "p (Fisher)": "p"}
  parts.append(
    html.pair(
      figure_png(t, flagged, other),
      "attribute shares per group and their relative representation",
      html.table(shown, formats),
      stacked=True,
    )
  )
  return "".join(parts)


def _compute(run, cie, settings, options):
  if options["human_study"] is None:
    return unit.Part()
  measures = unit.Measures(
    tables=unit.Reads((), {}), notes={}, config=dict(settings), values={"cie": cie}
  )
  study = human_study.compute(run, measures, options["human_study"])
  return unit.Part(
    study.tables,
    {"human_study": study.notes} if study.notes else {},
    {"human_study": study.settings},
    {"export": study.export},
  )


def _render(human_study, settings, notes):
  return section(human_study, settings.get("human_study"), notes.get("human_study") or [])


UNIT = unit.Unit(
  "human_study",
  reads=("run", "cie", "settings", "options"),
  makes=("human_study",),
  gives=("export",),
  compute=_compute,
  sections=(
    unit.Section(
      "human-study",
      "3b. Human study: what the PIEs (CIEs) are (000 Table 7, Figure 5)",
      "3b Human study",
      ("human_study", "settings", "notes"),
      _render,
      optional=True,
    ),
  ),
)
