"""002's recall distortion: the slope α of every compressed variant (002 §5-6; docs/spec.md
§5.2-5.3) and the study of one-shot pruning (002 §6-7, `recall_study`).

Two units. `RECALL_DISTORTION`: α per member, its mean with a 99% CI and label, per compressed
variant against the dense members it is paired with (`Run.pairing_of`: for one-shot variants
its parent, the same network before pruning, 002 §6.2; for gradual pruning member k, an
independently trained network): the `recall_distortion` table and each variant's member slopes
(`alpha_summaries`). `RECALL_STUDY`: the one-shot variants' α by algorithm and ratio and the
paired t-tests (`oneshot_*` tables and the `study`), when the run has one-shot variants.
"""

import pandas as pd

from tf_forget.artifacts import names
from tf_forget.report import class_measures
from tf_forget.report import pairing as pairing_lib
from tf_forget.report import recall_study
from tf_forget.report import recall_study_view
from tf_forget.report import unit
from tf_forget.stats import recall_distortion
from tf_forget.stats import validate

ONESHOT_TABLES = (
  "oneshot_alpha",
  "oneshot_ratio_tests",
  "oneshot_algorithm_tests",
  "oneshot_mp_vs_up",
)


def alpha_measures(run, variant, confidence=0.99):
  """Recall-distortion slope α per member, mean α with CI and label (002 §5-6;
  docs/spec.md §5.2-5.3).

  Returns:
    (dict from `recall_distortion.recall_distortion_summary` with `alphas` as a list,
    `members`, `pairs` ([k_dense, k_variant] per alpha) and `pairing` (the pairing label), or
    NaN fields and a note where undefined; list of notes).
  """
  pairing = run.pairing_of(variant)
  q0, qt = pairing_lib.paired_with_dense(run, variant)
  nan = float("nan")
  empty = {
    "alphas": [],
    "mean_alpha": {"mean": nan, "low": nan, "high": nan, "label": "?", "n": 0},
    "alpha_hat": nan,
    "r2": nan,
    "mean_accuracy_0": nan,
    "mean_accuracy_t": nan,
    "recall_variance_0": nan,
    "recall_variance_t": nan,
    "members": 0,
    "pairs": [],
    "pairing": pairing["label"],
  }
  if not q0.members.size:
    return empty, [f"{variant}: no member paired with dense; α not computed"]
  r0, a0 = class_measures.recall_and_accuracy(q0, run.num_classes)
  rt, at = class_measures.recall_and_accuracy(qt, run.num_classes)
  try:
    out = recall_distortion.recall_distortion_summary(r0, a0, rt, at, confidence=confidence)
  except validate.StatsInputError as e:
    return empty, [f"{variant}: α not computed ({e})"]
  out = dict(
    out,
    alphas=[float(a) for a in out["alphas"]],
    members=int(q0.members.size),
    pairs=[[int(a), int(b)] for a, b in zip(q0.members, qt.members)],
    pairing=pairing["label"],
  )
  notes = []
  if out["mean_alpha"]["n"] < 2:
    notes.append(
      f"{variant}: the CI of α needs at least 2 defined slopes (have {out['mean_alpha']['n']})"
    )
  return out, notes


def _row(variant, rd):
  """A variant's row of the `recall_distortion` table."""
  mean = rd["mean_alpha"]
  return {
    "variant": variant,
    "pairing": rd["pairing"],
    "members": rd["members"],
    "mean_alpha": mean["mean"],
    "ci_low": mean["low"],
    "ci_high": mean["high"],
    "label": mean["label"],
    "n": mean["n"],
    "alpha_hat": rd["alpha_hat"],
    "r2": rd["r2"],
    "mean_accuracy_0": rd["mean_accuracy_0"],
    "mean_accuracy_t": rd["mean_accuracy_t"],
    "recall_variance_0": rd["recall_variance_0"],
    "recall_variance_t": rd["recall_variance_t"],
  }


def _distortion(run, measure_options):
  rows, summaries, notes = [], {}, []
  for variant in run.eval:
    if variant == names.DENSE:
      continue
    rd, n = alpha_measures(run, variant, measure_options["confidence"])
    notes += n
    rows.append(_row(variant, rd))
    summaries[variant] = {
      "pairing": rd["pairing"],
      "alpha_pairs": rd["pairs"],
      "alphas": rd["alphas"],
      "mean_alpha": rd["mean_alpha"]["mean"],
      "alpha_label": rd["mean_alpha"]["label"],
    }
  return unit.Part(
    {"recall_distortion": pd.DataFrame(rows)},
    {"recall_distortion": notes} if notes else {},
    gives={"alpha_summaries": summaries},
  )


def _study(run, recall_distortion, alpha_summaries):
  study = recall_study.compute(run, alpha_summaries, recall_distortion)
  if study is None:
    return unit.Part()
  return unit.Part(
    study.tables, {"recall_study": study.notes} if study.notes else {}, gives={"study": study}
  )


def _render_study(
  study, oneshot_alpha, oneshot_ratio_tests, oneshot_algorithm_tests, oneshot_mp_vs_up
):
  return recall_study_view.oneshot_study(
    study,
    oneshot_alpha,
    {
      "oneshot_ratio_tests": oneshot_ratio_tests,
      "oneshot_algorithm_tests": oneshot_algorithm_tests,
      "oneshot_mp_vs_up": oneshot_mp_vs_up,
    },
  )


RECALL_DISTORTION = unit.Unit(
  "recall_distortion",
  reads=("run", "measure_options"),
  makes=("recall_distortion",),
  gives=("alpha_summaries",),
  compute=_distortion,
  sections=(
    unit.Section(
      "recall-distortion",
      "8. Recall distortion slope α (002)",
      "8 α",
      ("recall_distortion", "alpha_summaries"),
      recall_study_view.distortion,
      designs=(unit.POPULATION,),
    ),
  ),
)
RECALL_STUDY = unit.Unit(
  "recall_study",
  reads=("run", "recall_distortion", "alpha_summaries"),
  makes=ONESHOT_TABLES,
  gives=("study",),
  compute=_study,
  sections=(
    unit.Section(
      "recall-study",
      "9. Recall distortion after one-shot pruning (002)",
      "9 One-shot",
      ("study",) + ONESHOT_TABLES,
      _render_study,
      designs=(unit.POPULATION,),
    ),
  ),
)
