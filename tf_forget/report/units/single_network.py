"""One network against its own compressed files (K = 1): the "k1" section.

The tables are `tf_forget.report.single_network`'s, paired flips and tests over the test
examples. The section renders them: the design in one sentence, the top-1 change with its
Newcombe interval, flips and McNemar p per variant, the classes whose recall changed
significantly (McNemar per class, Benjamini-Hochberg), the subgroup rate changes with their
paired bootstrap intervals (protected attributes only) and the flips per class. An optional
section, left out for populations (the dense population has several members).
"""

import pandas as pd

from tf_forget.report import html
from tf_forget.report import single_network
from tf_forget.report import unit
from tf_forget.report.words import naming

MAX_FLIP_ROWS = 60

PCT = {
  "accuracy_reference": html.PCT,
  "accuracy_candidate": html.PCT,
  "recall_reference": html.PCT,
  "recall_candidate": html.PCT,
  "rate_reference": html.PCT,
  "rate_candidate": html.PCT,
  "difference": html.PTS_ABS,
  "change": html.PTS_ABS,
  "low": html.PTS_ABS,
  "high": html.PTS_ABS,
  "mcnemar_p": "p",
  "p_value": "p",
  "p_adjusted": "p",
  "n": "int",
  "broken": "int",
  "fixed": "int",
  "changed": "int",
  "class": "int",
  "n_resamples": "int",
}


def design(settings, examples):
  """The design sentence of the section (`settings` = the report's `single_network`)."""
  text = settings["design"]
  return (
    f"{text[:1].upper()}{text[1:]}. Each compressed file is compared with the reference "
    f"network on the same {examples} test examples (paired): the intervals and tests "
    "say how sure we are about this network on data like this test set, not about "
    "another training run of the same recipe."
  )


def topline(t):
  """The top-1 table: change with its Newcombe 95% interval, flips, McNemar p."""
  lead = (
    "<p class=\"lead\">Top-1 change (candidate − reference, points) with Newcombe's "
    "hybrid score 95% interval for paired proportions; flips: <b>broken</b> = right → "
    "wrong, <b>fixed</b> = wrong → right, <b>changed</b> = wrong → another wrong; "
    "mcnemar_p: exact two-sided McNemar test of broken vs fixed.</p>"
  )
  return lead + html.table(t.drop(columns=["method"]), PCT)


def classes(t, alpha):
  """The classes whose recall changed significantly, or a line saying there are none."""
  sig = t[t.significant.astype(bool)]
  head = (
    f"<h3>Classes whose recall changed (exact McNemar per class, Benjamini-Hochberg "
    f"adjusted p ≤ {alpha:g})</h3>"
  )
  if sig.empty:
    return head + (
      f"<p class=\"lead\">No class changed significantly "  # a finding
      f"({t['class'].nunique()} classes tested per variant; every class in the "
      "k1_classes table).</p>"
    )
  cols = [
    "variant",
    "class_name",
    "n",
    "recall_reference",
    "recall_candidate",
    "change",
    "low",
    "high",
    "broken",
    "fixed",
    "p_value",
    "p_adjusted",
  ]
  return head + html.table(sig[cols], PCT)


def subgroups(t):
  """The subgroup error / FNR / FPR changes with their paired bootstrap intervals."""
  if t is None:
    return ""
  head = (
    "<h3>Subgroups: error, FNR, FPR change (paired percentile bootstrap 95% interval"
    ", the same examples resampled for both files)</h3>"
  )
  return head + html.table(t, PCT)


def flip_counts(flips, classes):
  """Flipped examples per variant and true class, by kind (every one in tables/flips.csv)."""
  head = "<h3>Flips per class</h3>"
  if flips.empty:
    return head + html.skipped(["no example changed its prediction"])
  counts = (
    flips.groupby(["variant", "label", "kind"])
    .size()
    .unstack("kind", fill_value=0)
    .reindex(columns=list(single_network.FLIP_KINDS), fill_value=0)
    .reset_index()
  )
  counts = pd.DataFrame(counts.to_dict("list"))  # plain columns (no index names)
  names = dict(zip(classes["class"].astype(int), classes["class_name"].astype(str)))
  counts.insert(2, "class_name", [names.get(int(c), str(c)) for c in counts["label"]])
  out = head + html.table(counts, {k: "int" for k in ("label",) + single_network.FLIP_KINDS})
  if "path" in flips:  # the user's files, by name
    shown = flips.assign(label=[naming.class_label(c, names.get(int(c))) for c in flips["label"]])
    out += "<h3>Flipped examples, by file</h3>" + html.table(
      shown,
      {"id": "int", "reference_prediction": "int", "candidate_prediction": "int"},
      max_rows=MAX_FLIP_ROWS,
    )
  return (
    out
    + "<p class=\"lead\">Every flipped example, with its id"
    + (", its file" if "path" in flips else "")
    + " and both predictions, is "
    "in tables/flips.csv.</p>"
  )


def section(top, k1_classes, flips, k1_subgroups, settings):
  """The "k1" section's HTML, or `unit.Skip` without K = 1 tables.

  Args:
    top, k1_classes, flips, k1_subgroups: the K = 1 tables (`single_network.compute`; None when
      the run is not of one network, `k1_subgroups` None without protected attributes).
    settings: the `single_network` settings, or None.
  """
  if top is None or not settings:
    return unit.Skip("not one network (K = 1)")
  examples = int(top["n"].max()) if not top.empty else 0
  alpha = settings["methods"].get("alpha", 0.05)
  return "".join(
    [
      f"<p class=\"lead\"><b>{html.esc(design(settings, examples))}</b></p>",
      topline(top),
      classes(k1_classes, alpha),
      subgroups(k1_subgroups),
      flip_counts(flips, k1_classes),
    ]
  )


TABLES = ("k1_topline", "k1_classes", "flips", "k1_subgroups")


def _compute(run, measure_options):
  return unit.Part(*single_network.compute(run, measure_options["seed"], measure_options["alpha"]))


def _render(k1_topline, k1_classes, flips, k1_subgroups, settings):
  return section(
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
