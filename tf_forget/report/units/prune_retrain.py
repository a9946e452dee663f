"""003's prune-retrain study (`tf_forget.report.prune_retrain`): how far each parent prunes per
test distribution, when the run has prune-retrain cycles; the section is left out otherwise.
"""

from tf_forget.report import noise_report
from tf_forget.report import prune_retrain
from tf_forget.report import prune_retrain_plots
from tf_forget.report import unit

TABLES = (
  "prune_retrain_curve",
  "prune_retrain_potential",
  "prune_retrain_summary",
  "prune_retrain_excess",
  "prune_retrain_similarity",
)


def _compute(run, run_dir):
  study = prune_retrain.compute(run, noise_report.load(run_dir, run.variants))
  return unit.Part() if study is None else unit.Part(study.tables, {"prune_retrain": study.notes})


def _render(
  prune_retrain_curve,
  prune_retrain_potential,
  prune_retrain_summary,
  prune_retrain_excess,
  prune_retrain_similarity,
  notes,
):
  return prune_retrain_plots.section(
    prune_retrain_curve,
    prune_retrain_summary,
    prune_retrain_potential,
    prune_retrain_excess,
    prune_retrain_similarity,
    notes.get("prune_retrain"),
  )


UNIT = unit.Unit(
  "prune_retrain",
  reads=("run", "run_dir"),
  makes=TABLES,
  compute=_compute,
  sections=(
    unit.Section(
      "prune-retrain",
      "9b. Prune-retrain: how far each parent prunes, per distribution (003)",
      "9b Prune-retrain",
      TABLES + ("notes",),
      _render,
      optional=True,
    ),
  ),
)
