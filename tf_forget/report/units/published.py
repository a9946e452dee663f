"""Published test sets: ImageNet-A (000 Table 8; docs/spec.md §3.6) and CIFAR-10.1
(`published_report` computes the tables), only when such a split was evaluated; the section
(`section`) is left out otherwise.
"""

from tf_forget.report import html
from tf_forget.report import published_report
from tf_forget.report import unit
from tf_forget.report.words import paragraphs

TABLES = (published_report.IMAGENET_A, "published_splits")


def _compute(run, measure_options):
  tables, notes, settings = published_report.compute(run, measure_options["imagenet_a_mask"])
  return unit.Part(
    tables,
    {"published": notes} if notes else {},
    {} if settings is None else {"published": settings},
  )


def section(t8, other, settings):
  """The "published" section's HTML when a published table exists, else `unit.Skip` (left out).

  Args:
    t8: the `imagenet_a` table (000 Table 8), or None.
    other: the `published_splits` table, or None.
    settings: the `published` settings ({} if none).
  """
  if t8 is None and other is None:
    return unit.Skip("no published test set in this run")
  parts = []
  if t8 is not None:
    parts.append(
      f"<h3>ImageNet-A (000 Table 8)</h3><p class=\"lead\">{paragraphs.IMAGENET_A_LEAD}</p>"
      + html.table(
        t8,
        {
          "classes": "int",
          "top1": html.PCT,
          "top5": html.PCT,
          "top1_norm": html.PTS,
          "top5_norm": html.PTS,
          "members": "int",
          "examples": "int",
        },
      )
    )
  if other is not None:
    parts.append(
      f"<h3>Published test sets</h3><p class=\"lead\">{paragraphs.PUBLISHED_SPLITS_LEAD}</p>"
      + html.table(
        other.dropna(axis=1, how="all"),
        {
          "top1": html.PCT,
          "top5": html.PCT,
          "top1_change": html.PCT,
          "top1_norm": html.PTS,
          "clean_top1": html.PCT,
          "members": "int",
          "examples": "int",
        },
      )
    )
  if settings.get("note"):
    parts.append(f"<p class=\"skip\">Note: {html.esc(settings['note'])}.</p>")
  return "".join(parts)


def _render(imagenet_a, published_splits, settings):
  return section(imagenet_a, published_splits, settings.get("published") or {})


UNIT = unit.Unit(
  "published",
  reads=("run", "measure_options"),
  makes=TABLES,
  compute=_compute,
  sections=(
    unit.Section(
      "published",
      "6b. Published test sets: ImageNet-A (000 Table 8), CIFAR-10.1",
      "6b Published sets",
      TABLES + ("settings",),
      _render,
      optional=True,
    ),
  ),
)
