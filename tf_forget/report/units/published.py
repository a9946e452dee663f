"""Published test sets: ImageNet-A (000 Table 8; docs/spec.md §3.6) and CIFAR-10.1
(`published_report`), only when such a split was evaluated; the section is left out otherwise.
"""

from tf_forget.report import published_report
from tf_forget.report import unit

TABLES = (published_report.IMAGENET_A, "published_splits")


def _compute(run, measure_options):
  tables, notes, settings = published_report.compute(run, measure_options["imagenet_a_mask"])
  return unit.Part(
    tables,
    {"published": notes} if notes else {},
    {} if settings is None else {"published": settings},
  )


def _render(imagenet_a, published_splits, settings):
  return published_report.section(imagenet_a, published_splits, settings.get("published") or {})


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
