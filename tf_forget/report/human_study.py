"""000's human study, both ways: a blind annotation export, and Table 7 / Figure 5 read back.

000 §3.3 "Human study" (appendix C): annotators "were shown a balanced sample of PIE and
non-PIE images that were selected at random and shuffled. The classification as PIE or non-PIE
was not known or available to the human"; they coded attributes per image, and Table 7 /
Figure 5 report each attribute's share among PIEs and among non-PIEs and their relative
representation. 004 §3.2 proposes the same human-in-the-loop audit on CIEs.

Design:

* One study = one compressed variant (`Options.variant`; default: the one with the most
  examples in the group, ties to the first in report order) and one group definition:
  "pie" (modal labels of the dense and compressed populations differ, 000 §2.3, docs/spec.md §3.4)
  or "cie" (Taxicab CIEs at `percentile`, default 90, with d_T > 0, as `tables/cie_annotation.csv`;
  004 §3.1-3.2, docs/spec.md §4.1). The rest of the evaluation split is the other group. One
  variant, not one sample per variant: a PIE of two variants would be shown twice, and every variant
  would double the annotators' work.
* The sample: n = min(per_group, |group|, |rest|) examples drawn without replacement from
  each (`numpy.random.default_rng(seed)`), then shuffled together by the same generator. Each
  row gets an opaque item id `<study>-<hash>` (sha256 of the study and the example id): the
  sheet names no example id, group, model prediction or rank. Only the true label is shown
  (000 appendix C's "label 1"): both modal labels would reveal the group (they differ exactly
  on PIEs).
* The key (`key.json`, kept apart from the annotator's `sheet/`): item -> example id,
  position and group, the study's parameters and a fingerprint of the run's group (sha256 of
  the data set, split, variant, group definition, example ids and group mask). Reading back,
  the key is checked against the run — data set, variant, fingerprint, and the sample it would
  draw now — and the filled file against the key; any mismatch is one `HumanStudyError` line
  and nothing is written.

Attribute vocabulary (`VOCABULARY`): 000 §3.3's five codified attributes plus appendix C's
"typical exemplar" question (001's "atypical exemplars"). Users add their own 0/1 columns
(`Options.columns` on the sheet, or any extra column in the filled file). Statistics:
`tf_forget.stats.representation` (Katz log interval of the ratio of two proportions, Fisher's
exact p). The sample and its key: `human_study_sample`; the sheet's files:
`human_study_sheet`; the filled file read back: `human_study_annotations`; the section and
figure: `tf_forget.report.units.human_study`.
"""

import dataclasses
import hashlib
import re
from typing import Optional

import numpy as np
import pandas as pd

from tf_forget.artifacts import errors
from tf_forget.artifacts import fileio
from tf_forget.artifacts import filesystem
from tf_forget.policy import human_study_options
from tf_forget.report import human_study_annotations
from tf_forget.report import human_study_sample as sample
from tf_forget.report import human_study_sheet
from tf_forget.stats import representation

DEFAULT_GROUP = "pie"
DEFAULT_PER_GROUP = 100
DEFAULT_PERCENTILE = 90
DEFAULT_SEED = 0
CONFIDENCE = human_study_options.CONFIDENCE
TABLE_COLUMNS = (
  "variant",
  "group",
  "attribute",
  "source",
  "flagged_count",
  "flagged_n",
  "flagged_share",
  "flagged_share_low",
  "flagged_share_high",
  "other_count",
  "other_n",
  "other_share",
  "other_share_low",
  "other_share_high",
  "ratio",
  "ratio_low",
  "ratio_high",
  "interval_method",
  "p_value",
)
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


@dataclasses.dataclass(frozen=True)
class Attribute:
  """One codified attribute: CSV column `name`, its title, what to mark, where it comes from."""

  name: str
  title: str
  definition: str
  source: str


VOCABULARY = (
  Attribute(
    "incorrect_label",
    "ground truth label incorrect or inadequate",
    "The label shown is wrong, or the image holds too little information for a "
    "human to arrive at it (000 appendix C: 'Does label 1 accurately label an "
    "object in the image?' answered no).",
    "000 §3.3 (1)",
  ),
  Attribute(
    "multiple_objects",
    "multiple-object image",
    "The image depicts several objects, so a human may consider several labels "
    "appropriate (a paddle and a canoe; a screen, mouse and keyboard).",
    "000 §3.3 (2)",
  ),
  Attribute(
    "corrupted_image",
    "corrupted image",
    "Common corruptions: motion or defocus blur, contrast, brightness, fog, "
    "pixelation, noise, JPEG artefacts; also super-imposed text, an artificial "
    "frame, or black and white instead of colour.",
    "000 §3.3 (3)",
  ),
  Attribute(
    "fine_grained",
    "fine-grained classification",
    "The object is semantically close to other classes of the data set (rock crab "
    "vs fiddler crab, bassinet vs cradle, cuirass vs breastplate).",
    "000 §3.3 (4)",
  ),
  Attribute(
    "abstract_representation",
    "abstract representation",
    "The object is shown in an abstract form: a cartoon, painting, drawing, "
    "sculpture, or a rendering in another material.",
    "000 §3.3 (5)",
  ),
  Attribute(
    "atypical",
    "atypical exemplar",
    "Not a typical exemplar of its class: an unusual or outlier example of the "
    "images of that category (000 appendix C's 'typical exemplar' question, "
    "answered no; 001 'atypical exemplars').",
    "000 appendix C",
  ),
)
VOCABULARY_NAMES = tuple(a.name for a in VOCABULARY)


@dataclasses.dataclass
class Study:
  """What `compute` adds to a report.

  Attributes:
    tables: {"human_study": DataFrame} when annotations were read, else {}.
    notes: one-line notes.
    settings: `report.json["settings"]["human_study"]`.
    export: (export_dir, {relative path: bytes}) to write, or None (none asked, or kept).
  """

  tables: dict
  notes: list
  settings: dict
  export: Optional[tuple] = None


def as_options(value):
  """`Options` from an `Options`, a dict of its fields, or None (-> None)."""
  if value is None or isinstance(value, human_study_options.Options):
    return value
  try:
    return human_study_options.Options(**dict(value))
  except TypeError as e:
    raise sample.HumanStudyError(f"human-study options: {errors.one_line(e)}") from e


def check_options(options):
  """Checks the options without a run: values, column names, readable files.

  Raises:
    human_study_sample.HumanStudyError: a bad group, per_group, percentile, seed or column
      name, a missing or unreadable annotations / key file, an export directory that is a file
      or a non-empty directory without a key (one line).
  """
  if options.group is not None and options.group not in sample.GROUPS:
    raise sample.HumanStudyError(
      f"human-study group must be one of {', '.join(sample.GROUPS)}, got {options.group!r}"
    )
  if options.per_group is not None and int(options.per_group) < 1:
    raise sample.HumanStudyError(f"human-study per_group must be >= 1, got {options.per_group}")
  if options.seed is not None and int(options.seed) < 0:
    raise sample.HumanStudyError(f"human-study seed must be >= 0, got {options.seed}")
  if options.percentile is not None and not 0 <= float(options.percentile) < 100:
    raise sample.HumanStudyError(
      f"human-study percentile must be in [0, 100), got {options.percentile}"
    )
  if not 0 < float(options.confidence) < 1:
    raise sample.HumanStudyError(
      f"human-study confidence must be in (0, 1), got {options.confidence}"
    )
  seen = set(VOCABULARY_NAMES)
  for name in options.columns:
    if (
      not _NAME.match(str(name))
      or name in (sample.ITEM, sample.NOTES)
      or str(name).startswith(sample.NOTES)
    ):
      raise sample.HumanStudyError(
        f"human-study column {name!r}: use a name of letters, "
        f"digits and _ (not {sample.ITEM!r} or {sample.NOTES}*)"
      )
    if name in seen:
      raise sample.HumanStudyError(
        f"human-study column {name!r} is given twice (or is in the vocabulary already)"
      )
    seen.add(name)
  if options.export_dir is not None:
    human_study_sheet.existing_key(options.export_dir)  # a file, a foreign directory
  if options.annotations is not None:
    if not filesystem.isfile(options.annotations):
      raise sample.HumanStudyError(f"no annotations file {options.annotations}")
    sample.read_key(human_study_annotations.key_path(options))


def table(key, attrs, values, confidence=CONFIDENCE):
  """000 Table 7: per attribute, its share in each group and their ratio with an interval.

  Returns:
    DataFrame with `TABLE_COLUMNS` (`representation.relative_representation`: flagged = the
    PIEs (CIEs) of the sample, other = the non-PIEs), one row per attribute in `attrs` order.
  """
  s = key["study"]
  flagged = np.asarray([it["group"] == s["group"] for it in key["items"]])
  sources = {a.name: a.source for a in VOCABULARY}
  rows = []
  for j, a in enumerate(attrs):
    r = representation.relative_representation(
      int(values[flagged, j].sum()),
      int(flagged.sum()),
      int(values[~flagged, j].sum()),
      int((~flagged).sum()),
      confidence,
    )
    rows.append(
      {
        "variant": s["variant"],
        "group": s["group"],
        "attribute": a,
        "source": sources.get(a, "user"),
        "flagged_count": r["count_1"],
        "flagged_n": r["n_1"],
        "flagged_share": r["share_1"],
        "flagged_share_low": r["share_1_low"],
        "flagged_share_high": r["share_1_high"],
        "other_count": r["count_0"],
        "other_n": r["n_0"],
        "other_share": r["share_0"],
        "other_share_low": r["share_0_low"],
        "other_share_high": r["share_0_high"],
        "ratio": r["ratio"],
        "ratio_low": r["low"],
        "ratio_high": r["high"],
        "interval_method": r["method"],
        "p_value": r["p_value"],
      }
    )
  return pd.DataFrame(rows, columns=list(TABLE_COLUMNS))


def _settings(key, confidence):
  s = key["study"]
  return {
    k: s.get(k)
    for k in (
      "variant",
      "group",
      "percentile",
      "per_group",
      "requested_per_group",
      "seed",
      "study",
      "flagged_total",
      "other_total",
    )
  } | {
    "confidence": confidence,
    "attributes": list(key["attributes"]),
    "interval": "Katz log interval of the ratio of two proportions (scipy "
    "relative_risk); +0.5 adjusted where a count is 0; p: Fisher's exact test",
  }


def _export(run, measures, options):
  """(key, files to write or None if this study's export is there already, note)."""
  group = options.group or DEFAULT_GROUP
  percentile = DEFAULT_PERCENTILE if options.percentile is None else options.percentile
  variant = options.variant or sample.default_variant(run, measures, group, percentile)
  key = sample.draw(
    run,
    measures,
    variant,
    group,
    DEFAULT_PER_GROUP if options.per_group is None else options.per_group,
    DEFAULT_SEED if options.seed is None else options.seed,
    percentile,
    VOCABULARY_NAMES + tuple(options.columns),
  )
  where = options.export_dir
  if human_study_sheet.kept(where, key):
    return key, None, f"export {where} of study {key['study']['study']} is already there: kept"
  files = human_study_sheet.files(run, key, VOCABULARY)
  s = key["study"]
  return (
    key,
    files,
    (
      f"export for blind annotation written to {where}: {s['per_group']} "
      f"{sample.label(group)} + {s['per_group']} others of {variant}, seed "
      f"{s['seed']} (annotators get {sample.SHEET_DIR}/; {sample.KEY_FILE} "
      "stays apart)"
    ),
  )


def compute(run, measures, options):
  """The human study of a report: export and / or Table 7 from filled annotations.

  Args:
    run: `collect.Run`.
    measures: `unit.Measures` (Taxicab CIEs and their seed).
    options: `Options` (or a dict of its fields).

  Returns:
    `Study`.

  Raises:
    human_study_sample.HumanStudyError: bad options, an export directory holding another
      study, a key or annotation file that does not match (one line; raised before anything is
      written).
  """
  options = as_options(options)
  check_options(options)
  notes, settings, export, tables = [], {}, None, {}
  if options.export_dir is not None:
    key, files, note = _export(run, measures, options)
    notes.append(note)
    settings = _settings(key, options.confidence) | {"export": options.export_dir}
    if files is not None:
      export = (options.export_dir, files)
  if options.annotations is not None:
    path = human_study_annotations.key_path(options)
    key = sample.read_key(path)
    sample.check_key(key, path, run, measures, options)
    attrs, values = human_study_annotations.read_annotations(options.annotations, key)
    tables["human_study"] = table(key, attrs, values, options.confidence)
    settings = _settings(key, options.confidence) | {
      "export": options.export_dir,
      "annotations": options.annotations,
      "key": path,
      "items": len(key["items"]),
      "attributes": attrs,
      "annotations_sha256": hashlib.sha256(fileio.read_bytes(options.annotations)).hexdigest(),
      "key_sha256": hashlib.sha256(fileio.read_bytes(path)).hexdigest(),
    }
  return Study(tables=tables, notes=notes, settings=settings, export=export)
