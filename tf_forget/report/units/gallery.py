"""The gallery of Taxicab CIEs per variant family (004 Figure 3; `tf_forget.report.gallery`):
the cards with their thumbnails (given as `gallery_cards`) and their table (`gallery`), the CIEs
exported for human annotation (`cie_annotation`, 004 §3.2: Taxicab p90); the section also shows
the largest-KL examples of the divergence unit.
"""

from tf_forget.report import gallery as gallery_lib
from tf_forget.report import gallery_view
from tf_forget.report import html
from tf_forget.report import unit
from tf_forget.report.units import divergence

# The CIEs exported for human annotation (tables/cie_annotation.csv; 004 §3.2): Taxicab p90.
ANNOTATION_PERCENTILE = 90


def _compute(run, cie, measure_options, options):
  cards = gallery_lib.build_families(run, cie, size=options["gallery_size"])
  tables = {
    "gallery": gallery_lib.table(gallery_lib.without_images(cards)),
    "cie_annotation": gallery_lib.annotation_table(
      run, cie, percentile=ANNOTATION_PERCENTILE, seed=measure_options["seed"]
    ),
  }
  return unit.Part(tables, gives={"gallery_cards": cards})


def section(cards, protected, more=""):
  """The gallery section: the cards, or why there are none, then `more` (HTML)."""
  if not cards and not more:
    return unit.Skip.of(["no compressed variant"])
  return (
    gallery_view.html(cards, protected) if cards else html.skipped(["no compressed variant"])
  ) + more


def _render(run, gallery_cards, divergence_examples, divergence_images):
  return section(
    gallery_cards,
    run.protected_attributes,
    divergence.gallery(divergence_examples, divergence_images or {}),
  )


UNIT = unit.Unit(
  "gallery",
  reads=("run", "cie", "measure_options", "options"),
  makes=("gallery", "cie_annotation"),
  gives=("gallery_cards",),
  compute=_compute,
  sections=(
    unit.Section(
      "gallery",
      "11. Gallery: top Taxicab CIEs for human review (004 Figure 3)",
      "11 Gallery",
      ("run", "gallery_cards", "divergence_examples", "divergence_images"),
      _render,
    ),
  ),
)
