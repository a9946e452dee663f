"""tf_forget as a library: run an audit, or read a finished one.

    from tf_forget import api

    config = api.AuditConfig(out="/tmp/run", data=api.Data(dataset="digits"),
                             user=api.UserModels(references=("model.keras",),
                                                 candidates=(("int8", ("int8.tflite",)),)))
    result = api.audit(config)              # validates everything first, then runs
    result.passed                           # False: a gate failed (the binary exits 3)
    result.verdict["variant"], result.verdict["why"]
    result.tables["verdict"]                # every report table as a pandas DataFrame
    api.load_report("/tmp/run")             # the same Result of a finished run
    api.render_report("/tmp/run")           # its report written again from its artifacts

The images a deployment sees go beside labelled data as
`UserModels(deployment_images="folder:frames")` (docs/spec.md §8.11; `result.tables["side_by_side"]`).

`AuditConfig` and its sections are `tf_forget.config.tree`'s (one configuration, to_json /
from_json, `validate`); `load_config` reads a configuration file or a run's `audit.json`. The
audit binary (`eval/audit.py`), the examples and the benchmarks use this module.
"""

import dataclasses
import io
import os
from typing import Mapping, Optional, Tuple

import pandas as pd

from tf_forget.artifacts import errors
from tf_forget.artifacts import fileio
from tf_forget.artifacts import filesystem
from tf_forget.artifacts import layout
from tf_forget.artifacts import names
from tf_forget.config import flag_values
from tf_forget.config import tree

# The configuration's classes, for callers of this module (their one home is `tree`).
AuditConfig = tree.AuditConfig
Data, Population, Pruning, Oneshot, Iterative = (
  tree.Data,
  tree.Population,
  tree.Pruning,
  tree.Oneshot,
  tree.Iterative,
)
Formats, Robustness, Noise, Deployment = tree.Formats, tree.Robustness, tree.Noise, tree.Deployment
Execution, Repair, UserModels = tree.Execution, tree.Repair, tree.UserModels
AuditError = tree.AuditError
load_config, save_config, with_overrides = tree.load, tree.save, tree.with_overrides


@dataclasses.dataclass(frozen=True)
class Result:
  """A finished audit.

  Attributes:
    run_dir: the run directory.
    passed: True when every gate holds for every variant (the binary's exit status 0, else 3).
    failed_variants: the variants a gate failed.
    verdict: the report's recommendation: `variant`, `file`, `why`, `rule`, `caveats` (and,
      with the user's files, what they forgot and why), or None when nothing is recommended.
    tables: every report table ({name: DataFrame}, as `tables/<name>.csv`).
    report: report.json as a dict.
    manifest: the deployment bundle's manifest.json as a dict.
    paths: {"report_html", "report_json", "tables", "bundle", "audit_json"}.
  """

  run_dir: str
  passed: bool
  failed_variants: Tuple[str, ...]
  verdict: Optional[dict]
  tables: Mapping[str, pd.DataFrame]
  report: dict
  manifest: dict
  paths: Mapping[str, str]


def _paths(run_dir):
  join = filesystem.join  # local paths and scheme:// URLs alike
  return {
    "report_html": join(run_dir, "report.html"),
    "report_json": layout.report_file(run_dir),
    "tables": join(run_dir, "tables"),
    "bundle": join(run_dir, layout.BUNDLE_DIR, layout.MANIFEST_FILE),
    "audit_json": layout.audit_file(run_dir),
  }


def _result(run_dir, report, manifest):
  paths = _paths(run_dir)
  tables = {}
  for name in sorted(report.get("tables") or {}):
    data = fileio.read_bytes(f"{paths['tables']}/{name}.csv")
    tables[name] = (
      pd.read_csv(io.BytesIO(data), dtype={c: str for c in names.NAME_COLUMNS})
      if data.strip()
      else pd.DataFrame()
    )
  failed = tuple(manifest.get("failed_variants") or ())
  return Result(
    run_dir=run_dir,
    passed=not failed,
    failed_variants=failed,
    verdict=report.get("recommendation"),
    tables=tables,
    report=report,
    manifest=manifest,
    paths=paths,
  )


def _text_paths(value):
  """The JSON value `value` with every `os.PathLike` in it as its str path."""
  if isinstance(value, os.PathLike):
    return os.fspath(value)
  if isinstance(value, dict):
    return {k: _text_paths(v) for k, v in value.items()}
  if isinstance(value, (list, tuple)):
    return [_text_paths(v) for v in value]
  return value


def _checked_config(config):
  """`config` (an `AuditConfig` or its JSON dict) with every field of its declared type: an
  `AuditConfig` built in Python (`AuditConfig(out=5)`) is read back through its JSON, which
  checks each value (`tree.AuditConfig.from_json`; a `pathlib.Path` is taken as its str)."""
  if isinstance(config, AuditConfig):
    return AuditConfig.from_json(_text_paths(config.to_json()))
  if isinstance(config, dict):
    return AuditConfig.from_json(config)
  raise TypeError(
    f"config must be an AuditConfig or its JSON dict, got "
    f"{type(config).__name__} {' '.join(repr(config).split())[:80]}"
  )


def _callable(fn, name):
  if fn is not None and not callable(fn):
    raise TypeError(f"{name} must be callable, got {type(fn).__name__}")


def _run_dir(run_dir):
  """`run_dir` as a str path (TypeError for anything but a str or an `os.PathLike`)."""
  if isinstance(run_dir, os.PathLike):
    run_dir = os.fspath(run_dir)
  if not isinstance(run_dir, str):
    raise TypeError(
      f"run_dir must be a str or an os.PathLike, got {type(run_dir).__name__} "
      f"{' '.join(repr(run_dir).split())[:80]}"
    )
  return run_dir


def audit(config, log=print, on_locked=None, started=None):
  """Runs the audit of `config` (an `AuditConfig`) and returns its `Result`.

  Everything is checked before anything is written; a run directory made with the same
  configuration is resumed (its current artifacts reused).

  Args:
    config: an `AuditConfig` (or its JSON dict).
    log: callable(str) taking the progress lines.
    on_locked: optional callable(out), called once the run directory is locked.
    started: when the command started (`time.time()`); the wall time printed at the end
      counts from it (None: from this call).

  Raises:
    TypeError: `config` is no `AuditConfig` or dict, `log` / `on_locked` not callable.
    errors.Error subclasses with a one-line message: a field of the wrong type
      (`codec.ConfigError`), the checks of `tf_forget.pipeline.audit_lib.run_audit`.
  """
  from tf_forget.pipeline import executors

  config = _checked_config(config)
  _callable(log, "log")
  _callable(on_locked, "on_locked")
  # A first audit's pool starts before TensorFlow is imported here: its workers import theirs
  # meanwhile. The audit closes it (also when its validation refuses it).
  executor = executors.early_executor(config)
  try:
    from tf_forget.pipeline import audit_lib
  except BaseException:
    if executor is not None:
      executor.close()
    raise
  report, manifest = audit_lib.run_audit(
    config, log=log, on_locked=on_locked, started=started, executor=executor
  )
  return _result(config.out, report, manifest)


def plan(config, unit_costs=None):
  """The cost plan of `config` as text (nothing written, no data read:
  `tf_forget.pipeline.audit_plan`)."""
  from tf_forget.pipeline import audit_plan

  return audit_plan.plan_report(_checked_config(config), unit_costs)


def load_report(run_dir):
  """The `Result` of a finished run directory (its report.json, bundle and tables).

  Raises:
    TypeError: `run_dir` is no str or `os.PathLike`.
    errors.ReadError: no report or bundle there (the audit has not finished), one line.
  """
  run_dir = _run_dir(run_dir)
  report = fileio.read_json(_paths(run_dir)["report_json"], "report")
  manifest = fileio.read_json(_paths(run_dir)["bundle"], "deployment manifest")
  if not isinstance(report, dict) or not isinstance(manifest, dict):
    raise errors.ReadError(f"{run_dir} holds no tf_forget report")
  return _result(run_dir, report, manifest)


def render_report(run_dir, log=print, on_locked=None, trust_model_code=False, preprocess=None):
  """Writes a finished run's report again (report.json, report.html, tables/, the bundle)
  from its artifacts, and returns its `Result` (`tf-forget report RUN_DIR`).

  The run's own configuration (its audit.json, with `out` = `run_dir`, in this process) is
  audited again: every artifact is current, so only the report and the bundle are written; an
  artifact that is not (a file changed since) is remade as the audit would, with its redo
  line. The inputs the audit read (the user's files and data) must still be there.

  The run's file cannot let code run: a run made with `trust_model_code` or a
  `MODULE:FUNCTION` preprocess is written again only when the caller says so too
  (`trust_model_code=True`, the same `preprocess`), as the audit's `--config` is.

  Raises:
    errors.ReadError: `run_dir` holds no finished run (no audit.json, report or bundle).
    errors.Error subclasses of `audit`, one line.
  """
  run_dir = _run_dir(run_dir)
  load_report(run_dir)  # a finished run, or one line
  recorded = load_config(layout.audit_file(run_dir))
  said = {"trust_model_code": bool(trust_model_code), "preprocess": preprocess}
  flag_values.check_trust_said(
    recorded, said, {k for k, v in said.items() if v}, source=layout.audit_file(run_dir)
  )
  user = recorded.user
  if preprocess and (user is None or user.preprocess != preprocess):
    raise AuditError(
      f"{layout.audit_file(run_dir)} records preprocess="
      f"{user.preprocess if user else None}; --preprocess names {preprocess}: "
      "a report is written as its run was made"
    )
  config = with_overrides(
    recorded,
    {
      "out": run_dir,
      "execution.executor": "inline",
      "execution.workers": None,
      "execution.ray_address": None,
    },
  )
  return audit(config, log=log, on_locked=on_locked)
