"""Output divergence from the logits (`divergence_report`): KL, Δp and flips of every compressed
file against its reference, per class and subgroup, and the largest-KL examples (with their
thumbnails, `divergence_images`, for the gallery).
"""

from tf_forget.report import divergence_report
from tf_forget.report import divergence_view
from tf_forget.report import unit

TABLES = ("divergence", "divergence_classes", "divergence_examples", "divergence_subgroups")


def _compute(run, options):
  tables, notes, settings = divergence_report.compute(run, size=options["gallery_size"])
  images = divergence_report.thumbnails(run, tables.get("divergence_examples"))
  return unit.Part(tables, notes, settings, {"divergence_images": images})


def _render(divergence, divergence_classes, divergence_examples, divergence_subgroups, notes):
  return divergence_view.section(
    divergence,
    divergence_classes,
    divergence_examples,
    divergence_subgroups,
    notes.get(divergence_report.KEY, []),
  )


UNIT = unit.Unit(
  "divergence",
  reads=("run", "options"),
  makes=TABLES,
  gives=("divergence_images",),
  compute=_compute,
  sections=(
    unit.Section(
      "divergence",
      "1c. Output divergence: how far each file's outputs moved (KL, Δp)",
      "1c Divergence",
      TABLES + ("notes",),
      _render,
    ),
  ),
)
