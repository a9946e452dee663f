"""The report's studies, in merge order: one registry says what each needs, how it computes and
which sections of the page view it.

The core measures (`measures.compute`) come first; then each `Study` of `STUDIES`, in order,
is handed the inputs it names in `needs` (by keyword, from `INPUTS`) and returns a `Part`: its
tables, notes and settings, merged into the measures the next study sees. That order is the
order of report.json's `notes` and `settings`. A study may also hand values to the report by
name (`Part.gives`): the page's `gallery`, `recommendation` and `divergence_images`
(`section_registry.View`), report.json's `recommendation`, and the blind-annotation `export` written
beside the report. Its `sections` name the `section_registry.SECTIONS` that view it (`check`).

Adding a study is one entry here, its compute function and its section in
`section_registry` (docs/architecture.md, "A report section").
"""

import dataclasses
from typing import Callable, Tuple

from tf_forget.artifacts import names
from tf_forget.report import deployment
from tf_forget.report import divergence_report
from tf_forget.report import gallery as gallery_lib
from tf_forget.report import human_study as human_study_lib
from tf_forget.report import noise_report
from tf_forget.report import pairing as pairing_lib
from tf_forget.report import prune_retrain
from tf_forget.report import repair_report
from tf_forget.report import section_registry
from tf_forget.report import single_network
from tf_forget.report import verdict as verdict_lib

# The CIEs exported for human annotation (tables/cie_annotation.csv; 004 §3.2): Taxicab p90.
ANNOTATION_PERCENTILE = 90
# What a study may need (`Study.needs`): the `collect.Run`; its run directory; the measures so
# far (the core ones and the parts of the studies before it); the run's configuration
# (`AuditConfig.to_json`, {} if none); `options` ({"gallery_size": int, "human_study":
# `human_study_options.Options`, a dict of its fields, or None}).
INPUTS = ("run", "run_dir", "measures", "config", "options")


@dataclasses.dataclass
class Part:
  """What one study adds after the core measures: its tables, notes and settings, and the values
  it hands on (`gives`, see the module docstring). A notes key that is present is added to the
  report's notes even with no note."""

  tables: dict = dataclasses.field(default_factory=dict)
  notes: dict = dataclasses.field(default_factory=dict)
  config: dict = dataclasses.field(default_factory=dict)
  gives: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Study:
  """One study of the report (see the module docstring).

  Attributes:
    name: its name, unique in `STUDIES`.
    needs: the `INPUTS` its `compute` takes, by keyword.
    compute: callable(**needs) -> `Part` (an empty one when the study does not apply).
    sections: ids of the `section_registry.SECTIONS` that view it.
  """

  name: str
  needs: Tuple[str, ...]
  compute: Callable[..., Part]
  sections: Tuple[str, ...] = ()


def merged(m, part):
  """A new `measures.Measures`: `m`'s tables, notes and settings, then the part's."""
  tables, config = dict(m.tables), dict(m.config)
  notes = {key: list(values) for key, values in m.notes.items()}
  tables.update(part.tables)
  for key, values in part.notes.items():
    notes.setdefault(key, []).extend(values)
  config.update(part.config)
  return dataclasses.replace(m, tables=tables, notes=notes, config=config)


def _noise(run, run_dir):
  """l-inf noise (`noise_report`, 003 §4.1): its notes key is always present."""
  pairs = {
    v: run.pairing_of(v)["pairs"]
    for v in run.variants
    if v != names.DENSE and pairing_lib.is_paired(run, v)
  }
  tables, notes, protocol = noise_report.compute(run_dir, run.variants, pairs)
  return Part(tables, {"noise": notes}, {"noise": protocol})


def _prune_retrain(run, run_dir):
  """003's prune-retrain study (`prune_retrain`), if the run has one."""
  study = prune_retrain.compute(run, noise_report.load(run_dir, run.variants))
  return Part() if study is None else Part(study.tables, {"prune_retrain": study.notes})


def _deployment(run_dir, measures):
  """The deployment encodings (`deployment`): size, latency vs accuracy."""
  tables, notes, settings = deployment.compute(run_dir, measures.variants)
  return Part(tables, {"deployment": notes}, {"deployment": settings})


def _single_network(run, measures):
  """K = 1: one network against its own compressed files (`single_network`)."""
  return Part(*single_network.compute(run, measures.config["seed"], measures.config["alpha"]))


def _divergence(run, options):
  """Output divergence from the logits (`divergence_report`), and the thumbnails of
  its largest-KL examples for the gallery section."""
  tables, notes, settings = divergence_report.compute(run, size=options["gallery_size"])
  images = divergence_report.thumbnails(run, tables.get("divergence_examples"))
  return Part(tables, notes, settings, {"divergence_images": images})


def _repair(run, config):
  """Per-layer error and repairs (`repair_report`)."""
  asked = bool((config.get("repair") or {}).get("repairs"))
  return Part(*repair_report.compute(run, repair_asked=asked))


def _verdict(run, measures, config):
  """The verdict table and the recommendation, with the repairs' sentences and why
  a file forgot from the repair study's tables and notes."""
  user = config.get("user") or {}
  table, rec = verdict_lib.compute(
    run,
    measures,
    config.get("gates"),
    deployment=config.get("deployment"),
    scaling_checked=bool(user.get("input_scaling_check", False)),
  )
  skipped = measures.notes.get(repair_report.NOT_REPAIRED_KEY, [])
  if rec is not None and ("repair" in measures.tables or skipped):
    rec["repairs"] = repair_report.sentences(measures.tables, skipped)
  if rec is not None and measures.notes.get(repair_report.WHY_KEY):
    rec["why_forgot"] = list(measures.notes[repair_report.WHY_KEY])
  return Part({"verdict": table}, gives={"recommendation": rec})


def _gallery(run, measures, options):
  """The gallery of Taxicab CIEs per variant family (with thumbnails, for the page) and its
  tables: the cards, and the CIEs to annotate (`ANNOTATION_PERCENTILE`)."""
  gallery = gallery_lib.build_families(run, measures.cie, size=options["gallery_size"])
  tables = {
    "gallery": gallery_lib.table(gallery_lib.without_images(gallery)),
    "cie_annotation": gallery_lib.annotation_table(
      run, measures.cie, percentile=ANNOTATION_PERCENTILE, seed=measures.config["seed"]
    ),
  }
  return Part(tables, gives={"gallery": gallery})


def _human_study(run, measures, options):
  """000's human study (§3.3, Table 7), when asked: Table 7 from filled annotations
  and / or the blind-annotation `export`."""
  if options["human_study"] is None:
    return Part()
  study = human_study_lib.compute(run, measures, options["human_study"])
  return Part(
    study.tables,
    {"human_study": study.notes} if study.notes else {},
    {"human_study": study.settings},
    {"export": study.export},
  )


STUDIES = (
  Study("noise", ("run", "run_dir"), _noise, ("noise",)),
  Study("prune_retrain", ("run", "run_dir"), _prune_retrain, ("prune-retrain",)),
  Study("deployment", ("run_dir", "measures"), _deployment, ("deployment",)),
  Study("single_network", ("run", "measures"), _single_network, ("k1",)),
  Study("divergence", ("run", "options"), _divergence, ("divergence", "gallery")),
  Study("repair", ("run", "config"), _repair, ("why",)),
  Study("verdict", ("run", "measures", "config"), _verdict, ("verdict",)),
  Study("gallery", ("run", "measures", "options"), _gallery, ("gallery",)),
  Study("human_study", ("run", "measures", "options"), _human_study, ("human-study",)),
)


def check(studies):
  """Raises ValueError for a study with a repeated name, an unknown need or an unknown section
  (a bug in the registry)."""
  seen, sections = set(), {s.id for s in section_registry.SECTIONS}
  for study in studies:
    unknown = [n for n in study.needs if n not in INPUTS]
    missing = [s for s in study.sections if s not in sections]
    if study.name in seen or unknown or missing:
      raise ValueError(
        f"report study {study.name!r}: repeated, or unknown needs {unknown} / sections {missing}"
      )
    seen.add(study.name)


def compute(run, run_dir, core, config, options):
  """Runs `STUDIES` in order after the core measures.

  Args:
    run, run_dir, config, options: see `INPUTS`.
    core: the core `measures.Measures` (`measures.compute`).

  Returns:
    (the `measures.Measures` with every study's part merged in order, {name: value} of what
    the studies gave).
  """
  check(STUDIES)
  m, given = core, {}
  for study in STUDIES:
    inputs = {"run": run, "run_dir": run_dir, "measures": m, "config": config, "options": options}
    part = study.compute(**{name: inputs[name] for name in study.needs})
    m = merged(m, part)
    given.update(part.gives)
  return m, given
