"""One network against its own compressed files (K = 1, `tf_forget.report.single_network`):
paired flips and tests over the test examples; the section is left out for populations.
"""

from tf_forget.report import single_network
from tf_forget.report import single_network_view
from tf_forget.report import unit

TABLES = ("k1_topline", "k1_classes", "flips", "k1_subgroups")


def _compute(run, measure_options):
  return unit.Part(*single_network.compute(run, measure_options["seed"], measure_options["alpha"]))


def _render(k1_topline, k1_classes, flips, k1_subgroups, settings):
  return single_network_view.section(
    k1_topline, k1_classes, flips, k1_subgroups, settings.get(single_network.SETTINGS_KEY)
  )


UNIT = unit.Unit(
  "single_network",
  reads=("run", "measure_options"),
  makes=TABLES,
  compute=_compute,
  sections=(
    unit.Section(
      "k1",
      "1b. One network, its compressed files: flips and paired tests (K = 1)",
      "1b K = 1",
      TABLES + ("settings",),
      _render,
      optional=True,
    ),
  ),
)
