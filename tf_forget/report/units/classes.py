"""Class level: which classes changed (000 §2.2, Figure 2; docs/spec.md §3.1-3.3).

Per compressed variant against dense, the per-class Welch test and recall differences of
`class_measures.class_table` (`class_level`) and the counts of significant, gained and lost
classes each variant's summary shows (`class_summaries`); the section folds a quantized child
that repeats its trained variant (`sections.class_level`).
"""

import pandas as pd

from tf_forget.artifacts import names
from tf_forget.report import class_measures
from tf_forget.report import sections
from tf_forget.report import unit


def concat(frames, first):
  """Concatenates per-variant frames, `first` columns in front (empty frame if none)."""
  if not frames:
    return pd.DataFrame(columns=first)
  out = pd.concat(frames, ignore_index=True)
  return out[first + [c for c in out.columns if c not in first]]


def _compute(run, measure_options):
  rows, summaries, notes = [], {}, []
  for variant in run.eval:
    if variant == names.DENSE:
      continue
    o = measure_options
    table, n = class_measures.class_table(run, variant, o["alpha"], o["center"], o["correction"])
    notes += n
    rows.append(table.reset_index().assign(variant=variant))
    summaries[variant] = class_measures.class_summary(run, variant, table, o["alpha"])
  return unit.Part({"class_level": concat(rows, ["variant", "class"])},
                   {"class_level": notes} if notes else {},
                   gives={"class_summaries": summaries})


def _render(class_level, variants, notes):
  return sections.class_level(class_level, variants, notes.get("class_level"))


UNIT = unit.Unit(
    "classes", reads=("run", "measure_options"), makes=("class_level",), gives=("class_summaries",),
    compute=_compute,
    sections=(unit.Section("class-level", "2. Class level: which classes changed (000 Figure 2)",
                           "2 Classes", ("class_level", "variants", "notes"), _render,
                           designs=(unit.POPULATION,)),))
