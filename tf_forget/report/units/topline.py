"""Top-line accuracy: the "nothing changed" view (000 Table 2).

Per variant, top-1 (and top-5 with more than 5 classes) over members: mean, spread, the 95%
t interval of the mean and the change against dense (`topline`); shown beside its figure.
"""

import pandas as pd

from tf_forget.artifacts import names
from tf_forget.report import html
from tf_forget.report import plots
from tf_forget.report import unit
from tf_forget.report.units import measure_settings
from tf_forget.stats import accuracy
from tf_forget.stats import intervals


def table(run):
  """Top-line accuracy per variant: mean / std / min / max over members (000 Table 2).

  Returns:
    DataFrame columns `variant`, `metric` ("top1", "top5" if C > 5), `mean`, `std`, `min`,
    `max`, `members`, `ci_low`, `ci_high` (95% t interval of the mean over members,
    `intervals.mean_interval`), `change` (mean minus dense's mean, fraction).
  """
  rows = []
  for variant, pop in run.eval.items():
    metrics = {"top1": accuracy.top1_accuracy(pop.top1, pop.labels)}
    if measure_settings.use_topk(run.num_classes):
      metrics["top5"] = accuracy.topk_accuracy(pop.topk, pop.labels, k=measure_settings.TOPK)
    for metric, values in metrics.items():
      ci = intervals.mean_interval(values)
      rows.append(
        {
          "variant": variant,
          "metric": metric,
          **accuracy.population_summary(values),
          "ci_low": ci["low"],
          "ci_high": ci["high"],
        }
      )
  frame = pd.DataFrame(
    rows, columns=["variant", "metric", "mean", "std", "min", "max", "members", "ci_low", "ci_high"]
  )
  dense_mean = frame[frame.variant == names.DENSE].set_index("metric")["mean"]
  frame["change"] = frame["mean"] - frame["metric"].map(dense_mean)
  return frame


def _compute(run):
  compressed = [v for v in run.eval if v != names.DENSE]
  notes = {} if compressed else {"report": ["only the dense population: nothing to compare"]}
  return unit.Part({"topline": table(run)}, notes)


def render(topline):
  """The section: the figure beside the table."""
  t = topline
  return html.pair(
    plots.topline(t),
    "top-line accuracy per variant",
    html.table(
      t,
      {
        "mean": html.PCT,
        "std": html.PCT,
        "min": html.PCT,
        "max": html.PCT,
        "members": "int",
        "ci_low": html.PCT,
        "ci_high": html.PCT,
        "change": html.PTS_ABS,
      },
    )
    + "<p class=\"lead\">ci_low / ci_high: 95% t interval of the mean over "
    "members; the interval of each change is in the verdict table.</p>",
  )


UNIT = unit.Unit(
  "topline",
  reads=("run",),
  makes=("topline",),
  compute=_compute,
  sections=(
    unit.Section(
      "topline",
      "1. Top-line accuracy: the \"nothing changed\" view",
      "1 Top-1",
      ("topline",),
      render,
      designs=(unit.POPULATION,),
    ),
  ),
)
