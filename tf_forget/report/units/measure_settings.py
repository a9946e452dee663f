"""The options of the core measures: the report's first unit.

Takes the measure options the report was built with (`options["measures"]`, the keyword
arguments of `measure_options`), gives them with their defaults to the units of the core measures
(`measure_options`) and records them as report.json's first settings; notes how each compressed
variant is paired with dense (`tf_forget.report.pairing`, docs/spec.md §1.3).
"""

from tf_forget.artifacts import names
from tf_forget.report import unit
from tf_forget.stats import cie

TOPK = 5


def use_topk(num_classes):
  """Top-5 is reported only with more than 5 classes."""
  return num_classes > TOPK


def measure_options(
  seed=0,
  alpha=0.05,
  center="member",
  correction=None,
  percentiles=cie.PERCENTILES,
  over_indexing_percentile=80,
  subgroup_members=10,
  sample_size=None,
  confidence=0.99,
  imagenet_a_mask=False,
):
  """The core measures' options with their defaults (a dict of the arguments).

  Args:
    seed: seed of Taxicab tie-breaking (docs/spec.md §4.1) and of optional PIE samples.
    alpha: significance level of the Welch test (000: 0.05).
    center, correction: see `class_level.welch_class_test` (docs/spec.md §3.1).
    percentiles: Taxicab CIE percentiles (docs/spec.md §4.1).
    over_indexing_percentile: CIEs of 004 Figure 2 (docs/spec.md §4.4: 80).
    subgroup_members: members averaged in subgroup tables (docs/spec.md §1.5: first 10).
    sample_size: optional PIE / non-PIE sample size (docs/spec.md §3.5; default the full
      subsets).
    confidence: CI level of α (002: 0.99).
    imagenet_a_mask: 000 Table 8 also with the argmax over ImageNet-A's 200 classes
      (Hendrycks' protocol; docs/spec.md §3.6: 1000-way by default).

  Raises:
    TypeError: an unknown measure option.
  """
  return dict(locals())


def settings(run, o):
  """report.json's settings of the core measures (`o`: `measure_options`)."""
  return {
    "seed": o["seed"],
    "alpha": o["alpha"],
    "center": o["center"],
    "correction": o["correction"],
    "percentiles": [float(p) for p in o["percentiles"]],
    "over_indexing_percentile": float(o["over_indexing_percentile"]),
    "subgroup_members": o["subgroup_members"],
    "pie_sample_size": o["sample_size"],
    "confidence": o["confidence"],
    "topk": use_topk(run.num_classes),
  }


def _compute(run, options):
  """The options and settings, and the pairing notes of the compressed variants."""
  resolved = measure_options(**(options.get("measures") or {}))
  pairing = [n for v in run.eval if v != names.DENSE for n in run.pairing_of(v)["notes"]]
  return unit.Part(
    notes={"pairing": pairing} if pairing else {},
    settings=settings(run, resolved),
    gives={"measure_options": resolved},
  )


UNIT = unit.Unit("settings", reads=("run", "options"), gives=("measure_options",), compute=_compute)
