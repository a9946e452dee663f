"""The report's one registry: its units in the order they compute (`UNITS`) and their sections in
page order (`PAGE`).

The core measures, from the evaluation split's predictions alone (`CORE`), come first; then the
units that read another artifact of the run directory, the run's configuration or the report's
options. That order is the order of report.json's `notes` and `settings`: a new unit goes at
the end, its section where it belongs in `PAGE`. `check` (run by `compute` and the tests) proves
the registry sound (`unit.check`).

Adding a part of the report: one unit module of this package and its line in `UNITS` (and its
section's id in `PAGE`); docs/architecture.md, "A report unit".
"""

from tf_forget.data import dataset_api
from tf_forget.report import single_network as single_network_lib
from tf_forget.report import unit
from tf_forget.report.units import classes
from tf_forget.report.units import deployment
from tf_forget.report.units import divergence
from tf_forget.report.units import exemplars
from tf_forget.report.units import gallery
from tf_forget.report.units import human_study
from tf_forget.report.units import measure_settings
from tf_forget.report.units import noise
from tf_forget.report.units import overview
from tf_forget.report.units import page
from tf_forget.report.units import prune_retrain
from tf_forget.report.units import published
from tf_forget.report.units import recall
from tf_forget.report.units import repair
from tf_forget.report.units import robustness
from tf_forget.report.units import side_by_side
from tf_forget.report.units import single_network
from tf_forget.report.units import subgroups
from tf_forget.report.units import topline
from tf_forget.report.units import unlabelled
from tf_forget.report.units import verdict

CORE = (
  measure_settings.UNIT,
  topline.UNIT,
  classes.UNIT,
  exemplars.PIE,
  exemplars.CIE,
  recall.RECALL_DISTORTION,
  recall.RECALL_STUDY,
  subgroups.UNIT,
  robustness.UNIT,
  published.UNIT,
  overview.UNIT,
)
UNITS = CORE + (
  noise.UNIT,
  prune_retrain.UNIT,
  deployment.UNIT,
  single_network.UNIT,
  divergence.UNIT,
  repair.UNIT,
  verdict.UNIT,
  gallery.UNIT,
  human_study.UNIT,
  side_by_side.UNIT,
  page.GLOSSARY,
  page.NOTES,
)
PAGE = (
  "verdict",
  "side-by-side",
  "glossary",
  "overview",
  "topline",
  "k1",
  "divergence",
  "why",
  "class-level",
  "pie",
  "human-study",
  "subgroups",
  "over-indexing",
  "robustness",
  "published",
  "noise",
  "recall-distortion",
  "recall-study",
  "prune-retrain",
  "deployment",
  "gallery",
  "deployment-gallery",
  "notes",
)

# A run whose data has no labels (docs/spec.md §8): its own units instead of all the above.
UNLABELLED = (unlabelled.UNIT, page.NOTES)
UNLABELLED_PAGE = ("verdict", "unlabelled", "unlabelled-gallery", "notes")


def _of(run):
  """(units, page) of `run`: `UNLABELLED` for data without labels, else `UNITS`."""
  if dataset_api.unlabelled(run.dataset_options):
    return UNLABELLED, UNLABELLED_PAGE
  return UNITS, PAGE


def check(units=None, page_order=None):
  """The problems of the registry (or of `units` / `page_order`): `unit.check`'s lines."""
  return unit.check(UNITS if units is None else units, PAGE if page_order is None else page_order)


def sections():
  """Every `unit.Section` of the registry, in page order."""
  by_id = {s.id: s for u in UNITS for s in u.sections}
  return [by_id[sid] for sid in PAGE]


def core(run, **measure_options):
  """The core measures of `run` alone (`CORE`), a `unit.Measures`.

  Args:
    run: a `collect.Run`.
    **measure_options: see `measure_settings.measure_options`.
  """
  unit.refuse(CORE)
  return unit.compute(
    CORE, run=run, run_dir=run.run_dir, config={}, options={"measures": measure_options}
  )


def compute(run, run_dir, config, options):
  """Runs `UNITS` (`UNLABELLED` for data without labels) in order (after `check`): the report's
  `unit.Measures`.

  Args:
    run, run_dir, config, options: the `unit.INPUTS` (options: `gallery_size`, `human_study`
      and `measures`, the keyword arguments of `measure_settings.measure_options`).

  Raises:
    ValueError: an unsound registry (`unit.check`'s first problem).
  """
  units, page_order = _of(run)
  unit.refuse(units, page_order)
  return unit.compute(units, run=run, run_dir=run_dir, config=config, options=options)


def design(measures):
  """`unit.K1` when the report is of one network (`single_network`), else `unit.POPULATION`."""
  return unit.K1 if measures.config.get(single_network_lib.SETTINGS_KEY) else unit.POPULATION


def render(measures, run, run_dir, config, options):
  """[(section, inner HTML)] of the page, in `PAGE` order (`unit.render`)."""
  units, page_order = _of(run)
  return unit.render(
    units,
    page_order,
    measures,
    design(measures),
    run=run,
    run_dir=run_dir,
    config=config,
    options=options,
  )
