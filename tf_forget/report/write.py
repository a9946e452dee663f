"""Writes a run's report: `report.json`, `tables/<name>.csv` and `report.html`.

    build_report(run_dir, config)         -> Report (everything in memory, nothing written)
    write_report(run_dir, out_dir, config) -> the report.json dict

Everything is computed and rendered in memory first, so bad input (missing predictions,
misaligned ids, an unknown data set) raises before any file exists. The files are then written
to a staging directory in the output directory and swapped in by renames, `report.json` last
(`swap.swap_in`): a directory holding `report.json` holds a complete report, and a
write that fails (a full disk, a directory where report.html goes) leaves the previous report
byte for byte. Schema: docs/artifacts/report.md.
"""

import dataclasses
import importlib.metadata
import math
import os
import platform
from typing import Dict

import numpy as np

from tf_forget.artifacts import errors
from tf_forget.artifacts import fileio
from tf_forget.artifacts import filesystem
from tf_forget.artifacts import layout
from tf_forget.artifacts import names
from tf_forget.artifacts import swap
from tf_forget.report import collect
from tf_forget.report import gallery as gallery_lib
from tf_forget.report import gallery_view
from tf_forget.report import html
from tf_forget.report import human_study_sheet
from tf_forget.report.units import registry
from tf_forget.report.words import header

SCHEMA_VERSION = "tf_forget.report/1"
TOOLS = (
  "numpy",
  "scipy",
  "pandas",
  "matplotlib",
  "pillow",
  "tensorflow-cpu",
  "tensorflow",
  "tf-keras",
  "tensorflow-model-optimization",
  "tensorflow-datasets",
  "ai-edge-litert",
)


class ReportError(errors.Error):
  """A report that cannot be built or written (one line)."""


@dataclasses.dataclass
class Report:
  """A rendered report, not yet written.

  Attributes:
    json: the report.json dict (JSON-ready: NaN as None).
    tables: name -> CSV text.
    html: the page.
    measures: the `unit.Measures` it was built from.
    export: (directory, {relative path: bytes}) of a blind-annotation export to write with
      the report (`human_study`), or None.
  """

  json: dict
  tables: Dict[str, str]
  html: str
  measures: object
  export: object = None


def jsonable(value):
  """Plain JSON types: numpy scalars / arrays converted, NaN and infinities -> None."""
  if isinstance(value, dict):
    return {str(k): jsonable(v) for k, v in value.items()}
  if isinstance(value, (list, tuple)):
    return [jsonable(v) for v in value]
  if isinstance(value, np.ndarray):
    return [jsonable(v) for v in value.tolist()]
  if isinstance(value, (bool, np.bool_)):
    return bool(value)
  if isinstance(value, (int, np.integer)):
    return int(value)
  if isinstance(value, (float, np.floating)):
    v = float(value)
    return None if math.isnan(v) or math.isinf(v) else v
  if value is None or isinstance(value, str):
    return value
  return str(value)


def records(frame):
  """A DataFrame as a list of JSON-ready row dicts (column order kept)."""
  return [jsonable(dict(zip(frame.columns, row))) for row in frame.itertuples(index=False)]


def tool_versions():
  """Installed versions of the tools the numbers depend on (None if absent)."""
  out = {"python": platform.python_version()}
  for name in TOOLS:
    try:
      out[name] = importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
      out[name] = None
  return out


def _inputs(run):
  """variant -> split -> member indices and the `.tflite` sha256 of each member's file."""
  return {
    v: {
      s: {
        "members": [int(k) for k in p.members],
        "tflite_sha256": [m.get("tflite_sha256") for m in p.metadata],
      }
      for s, p in sorted(splits.items())
    }
    for v, splits in sorted(run.predictions.items())
  }


def _dataset_json(run, examples):
  """report.json's `dataset`: the data set's facts and the evaluation split's size."""
  return {
    "name": run.dataset_name,
    "options": run.dataset_options,
    "num_classes": run.num_classes,
    "class_names": list(run.class_names),
    "eval_split": run.eval_split,
    "examples": examples,
    "protected_attributes": list(run.protected_attributes),
    "attributes": sorted(run.attributes),
    "train_attribute_shares": run.train_attribute_shares,
  }


def build_report(
  run_dir,
  config=None,
  dataset=None,
  dataset_name=None,
  dataset_options=None,
  train_attribute_shares=None,
  gallery_size=12,
  title=None,
  variants=None,
  splits=None,
  human_study=None,
  **measure_options,
):
  """Computes and renders a report in memory (nothing is written).

  Args:
    run_dir: run directory with `predictions/` (docs/artifacts/predictions.md).
    config: the run's configuration (`tf_forget.config.tree.AuditConfig.to_json`, a JSON
      dict), stored as is in report.json; its `repair.repairs`, `gates` and `user` are read.
    dataset, dataset_name, dataset_options, train_attribute_shares: see `collect.load_run`.
    gallery_size: Taxicab CIE cards shown per variant family (a trained variant and its
      quantized children, each example once), and largest-KL examples per compressed
      variant (`divergence_examples`).
    variants, splits: the variants and splits to report (None: every predictions file).
    title: page title (default "tf_forget audit: <data set>", or with the user's model
      "tf_forget audit: model.keras on images/", `header.title`).
    human_study: `human_study_options.Options` (or a dict of its fields): the blind-annotation
    export
      of 000's human study and / or 000 Table 7 from a filled annotation file (None: neither).
    **measure_options: the core measures' options (`measure_settings.measure_options`: seed,
      alpha, center, correction, percentiles, over_indexing_percentile, subgroup_members,
      sample_size, confidence, imagenet_a_mask). The report's units run in the registry's
      order (`units.registry.UNITS`).

  Returns:
    `Report`.

  Raises:
    collect.CollectError: missing / misaligned predictions, unknown data set.
    noise_report.NoiseReportError, errors.ReadError: bad noise / encoding artifacts.
    human_study_sample.HumanStudyError: an annotation file or key that does not match the run.
    ValueError: bad measure options (from `tf_forget.stats`); an unsound registry of units
      (`units.registry.check`).
    TypeError: an unknown measure option.
  """
  run = collect.load_run(
    run_dir,
    dataset=dataset,
    dataset_name=dataset_name,
    dataset_options=dataset_options,
    train_attribute_shares=train_attribute_shares,
    variants=variants,
    splits=splits,
  )
  inputs = {
    "run": run,
    "run_dir": run_dir,
    "config": config or {},
    "options": {
      "gallery_size": gallery_size,
      "human_study": human_study,
      "measures": measure_options,
    },
  }
  m = registry.compute(**inputs)
  recommendation = m.values.get("recommendation")
  n = int(run.eval[names.DENSE].ids.size)
  doc = jsonable(
    {
      "schema_version": SCHEMA_VERSION,
      "config": config or {},
      "tools": tool_versions(),
      "dataset": _dataset_json(run, n),
      "settings": m.config,
      "variants": m.variants,
      "inputs": _inputs(run),
      "tables": {name: records(t) for name, t in sorted(m.tables.items())},
      "gallery": gallery_lib.without_images(m.values["gallery_cards"]),
      "recommendation": recommendation,
      "notes": m.notes,
      "files": {
        "html": "report.html",
        "tables": [f"tables/{name}.csv" for name in sorted(m.tables)],
      },
    }
  )
  csvs = {name: t.to_csv(index=False, lineterminator="\n") for name, t in m.tables.items()}
  members = ", ".join(f"{v} ({s['members']})" for v, s in m.variants.items())
  user = (config or {}).get("user")  # the user's model and files, in words
  intro = header.rows(run.dataset_name, run.dataset_options, run.eval_split, n, user) + [
    ("variants (members)", members),
    ("run directory", run_dir),
    ("schema", SCHEMA_VERSION),
  ]
  page = html.page(
    title or header.title(run.dataset_name, run.dataset_options, (user or {}).get("references")),
    intro,
    [(sec.id, sec.title, sec.nav, inner) for sec, inner in registry.render(m, **inputs)],
    css=gallery_view.CSS,
  )
  return Report(json=doc, tables=csvs, html=page, measures=m, export=m.values.get("export"))


def _write_files(report, directory):
  """Writes the report's tables, page and report.json under `directory` (`errors.WriteError`)."""
  filesystem.makedirs(os.path.join(directory, "tables"))
  for name, text in sorted(report.tables.items()):
    fileio.write_bytes(os.path.join(directory, "tables", f"{name}.csv"), text.encode("utf-8"))
  fileio.write_bytes(os.path.join(directory, "report.html"), report.html.encode("utf-8"))
  fileio.write_json(os.path.join(directory, "report.json"), report.json)


def save(report, out_dir, log=print):
  """Writes a built `Report` under `out_dir`, replacing a previous report whole.

  The new tables/, report.html and report.json are written to a staging directory
  `out_dir/.report.tmp-*`, then swapped in by renames, report.json last
  (`swap.swap_in`); what a killed earlier save left is finished or undone first. A
  blind-annotation export (`report.export`) is then written under its own directory, whole
  (`human_study_sheet.write`).

  Args:
    report: `Report`.
    out_dir: output directory (created if missing).
    log: callable(str) for one-line warnings (an old report that could not be removed: the
      new one stands).

  Raises:
    ReportError: `out_dir` is not a writable directory, or a write or rename failed (a full
      disk, a directory where report.html goes); the previous report, if any, is left as it
      was and nothing of this one.
  """
  if filesystem.exists(out_dir) and not filesystem.isdir(out_dir):
    raise ReportError(f"report output {out_dir} exists and is not a directory")
  try:
    notes = swap.clean_staging(out_dir, layout.REPORT_STAGING, layout.REPORT_ENTRIES)
    with swap.staging(out_dir, layout.REPORT_STAGING) as tmp:
      _write_files(report, tmp)
      notes += swap.swap_in(tmp, layout.REPORT_ENTRIES, record=True)
  except Exception as e:  # any I/O error; re-raised as one line
    raise ReportError(f"cannot write the report under {out_dir}: {errors.one_line(e)}") from e
  for note in notes:
    log(f"warning: {note}")
  if report.export is not None:  # the blind-annotation export, beside the report
    where, contents = report.export
    try:
      human_study_sheet.write(where, contents)
    except Exception as e:  # I/O; re-raised as one line
      raise ReportError(
        f"cannot write the annotation export under {where}: {errors.one_line(e)}"
      ) from e


def write_report(run_dir, out_dir, config, log=print, **options):
  """Builds the report of `run_dir` and writes it under `out_dir`.

  Writes `out_dir/report.json`, `out_dir/tables/<name>.csv` and `out_dir/report.html`
  (docs/artifacts/report.md).

  Args:
    run_dir: run directory with `predictions/`.
    out_dir: output directory (the audit's `--out`; may equal `run_dir`).
    config: the run configuration (JSON-ready dict) recorded in report.json.
    log: callable(str) for one-line warnings (see `save`).
    **options: keyword arguments of `build_report` (dataset, dataset_name,
      dataset_options, train_attribute_shares, gallery_size, title, human_study, seed,
      alpha, ...).

  Returns:
    The report.json dict.

  Raises:
    collect.CollectError, ReportError, ValueError: one-line errors; no file of this report is
      written (or left) when one is raised, and a previous report stays as it was.
  """
  report = build_report(run_dir, config, **options)
  save(report, out_dir, log)
  return report.json
