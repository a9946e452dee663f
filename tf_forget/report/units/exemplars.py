"""The examples compression changed: PIEs (000 §2.3, Table 6; docs/spec.md §3.4-3.5) and Taxicab
CIEs (004 §3.1, Table 2; docs/spec.md §4.1).

Two units: `PIE` (#PIE, ties and accuracy on PIE / non-PIE / all: `pie`, `pie_accuracy`) and
`CIE` (the Taxicab distance and its seeded ranking per variant, given as `cie`, and accuracy at
its percentiles: `cie_accuracy`), which members are paired for as `Run.pairing` says. The PIE
section shows both.
"""

import pandas as pd

from tf_forget.artifacts import names
from tf_forget.report import html
from tf_forget.report import pairing as pairing_lib
from tf_forget.report import plots
from tf_forget.report import unit
from tf_forget.report.units import classes
from tf_forget.report.units import measure_settings
from tf_forget.stats import cie as cie_lib
from tf_forget.stats import exemplars

PIE_COLUMNS = ["variant", "pie_count", "pie_fraction", "examples", "ties_dense", "ties_compressed"]


def pie_measures(run, variant, sample_size=None, seed=0):
  """#PIE, ties and accuracy on PIE / non-PIE / all (000 §2.3, Table 6; docs/spec.md §3.4-3.5).

  Returns:
    (dict from `exemplars.pruning_identified_exemplars`, DataFrame from
    `exemplars.accuracy_on_subsets`).
  """
  pop_0, pop_t = run.eval[names.DENSE], run.eval[variant]
  pie = exemplars.pruning_identified_exemplars(pop_0.top1, pop_t.top1, run.num_classes)
  k = measure_settings.use_topk(run.num_classes)
  table = exemplars.accuracy_on_subsets(
    pop_0.top1,
    pop_t.top1,
    pop_0.labels,
    pie["pie"],
    topk_predictions_0=pop_0.topk if k else None,
    topk_predictions_t=pop_t.topk if k else None,
    k=measure_settings.TOPK,
    sample_size=sample_size,
    seed=seed,
    subset_name="pie",
  )
  return pie, table


def taxicab_measures(run, variant, percentiles=cie_lib.PERCENTILES, seed=0):
  """Taxicab CIE distance, seeded ranking and accuracy at percentiles (004 §3.1, Table 2).

  Returns:
    (dict `order`, `distance`, `modal_0`, `modal_t`, `members`, or None without shared
    members; DataFrame from `cie.taxicab_cie_accuracy` or None).
  """
  q0, qt = pairing_lib.paired_with_dense(run, variant)
  if not q0.members.size:
    return None, None
  distance = cie_lib.taxicab_distance(q0.top1, qt.top1, run.num_classes)
  order = cie_lib.rank_by_distance(distance, seed)
  k = measure_settings.use_topk(run.num_classes)
  table = cie_lib.taxicab_cie_accuracy(
    q0.top1,
    qt.top1,
    q0.labels,
    percentiles=percentiles,
    seed=seed,
    num_classes=run.num_classes,
    topk_predictions_0=q0.topk if k else None,
    topk_predictions_t=qt.topk if k else None,
    k=measure_settings.TOPK,
  )
  modal_0, _ = exemplars.modal_label(q0.top1, run.num_classes)
  modal_t, _ = exemplars.modal_label(qt.top1, run.num_classes)
  return (
    {
      "order": order,
      "distance": distance,
      "modal_0": modal_0,
      "modal_t": modal_t,
      "members": int(q0.members.size),
    },
    table,
  )


def _pie(run, measure_options):
  counts, accuracies = [], []
  for variant in run.eval:
    if variant == names.DENSE:
      continue
    pie, acc = pie_measures(run, variant, measure_options["sample_size"], measure_options["seed"])
    counts.append(
      {
        "variant": variant,
        "pie_count": pie["count"],
        "pie_fraction": pie["count"] / pie["pie"].size,
        "examples": int(pie["pie"].size),
        "ties_dense": pie["ties_0"],
        "ties_compressed": pie["ties_t"],
      }
    )
    accuracies.append(acc.assign(variant=variant))
  return unit.Part(
    {
      "pie": pd.DataFrame(counts, columns=PIE_COLUMNS),
      "pie_accuracy": classes.concat(accuracies, ["variant"]),
    }
  )


def _cie(run, measure_options):
  cies, accuracies, notes = {}, [], []
  for variant in run.eval:
    if variant == names.DENSE:
      continue
    taxi, acc = taxicab_measures(
      run, variant, measure_options["percentiles"], measure_options["seed"]
    )
    if taxi is None:
      notes.append(f"{variant}: no member shared with dense")
      continue
    cies[variant] = taxi
    accuracies.append(acc.assign(variant=variant))
  return unit.Part(
    {"cie_accuracy": classes.concat(accuracies, ["variant"])},
    {"cie": notes} if notes else {},
    gives={"cie": cies},
  )


def _render(pie, pie_accuracy, cie_accuracy, variants):
  """The PIE section: #PIE, accuracy on PIE / non-PIE / all, accuracy on the Taxicab CIEs."""
  t = pie
  if t.empty:
    return unit.Skip.of(["no compressed variant"])
  parts = [
    "<p class=\"lead\">A PIE is an example whose modal label over the compressed "
    "population differs from the dense population's (ties go to the largest label; "
    "ties_* count them). Accuracy: mean over members on each subset, both populations "
    "(docs/spec.md §3.5).</p>",
    html.pair(
      plots.counts(t, variants),
      "significant classes and PIE counts",
      html.table(
        t,
        {
          "pie_count": "int",
          "pie_fraction": html.PCT,
          "examples": "int",
          "ties_dense": "int",
          "ties_compressed": "int",
        },
      ),
    ),
    "<h3>Accuracy on PIE / non-PIE / all</h3>",
  ]
  acc = html.without_empty(pie_accuracy)
  parts.append(
    html.pair(
      plots.pie_accuracy(acc),
      "accuracy on PIE, non-PIE and all",
      html.table(acc, {"top1": html.PCT, "topk": html.PCT, "n": "int"}),
    )
  )
  cie = html.without_empty(cie_accuracy)
  if not cie.empty:
    parts.append(
      "<h3>Accuracy on Taxicab CIEs (004 Table 2)</h3><p class=\"lead\">The "
      "examples with the largest Taxicab distance between the two populations' "
      "label counts at each percentile (p90: top 10%); ties broken by a seeded "
      "permutation (docs/spec.md §4.1).</p>"
    )
    parts.append(
      html.table(cie, {"percentile": "int", "top1": html.PCT, "topk": html.PCT, "n": "int"})
    )
  return "".join(parts)


PIE = unit.Unit(
  "pie",
  reads=("run", "measure_options"),
  makes=("pie", "pie_accuracy"),
  compute=_pie,
  sections=(
    unit.Section(
      "pie",
      "3. Pruning / compression identified exemplars (PIE)",
      "3 PIE",
      ("pie", "pie_accuracy", "cie_accuracy", "variants"),
      _render,
      designs=(unit.POPULATION,),
    ),
  ),
)
CIE = unit.Unit(
  "cie", reads=("run", "measure_options"), makes=("cie_accuracy",), gives=("cie",), compute=_cie
)
