"""The audit command's body, shared by `eval/audit.py` and `tf-forget audit`.

`run(flag_values, name)` is what the command does once absl has parsed its flags
(`tf_forget.commands.audit_flags.define`): select Keras 2 and the CPU kernels before anything
imports TensorFlow, read the flags into one configuration (`--config=PATH` first), check it,
then print the cost plan (`--plan`) or run the audit (`tf_forget.api.audit`) and write the
Markdown summary (`--summary`, `$GITHUB_STEP_SUMMARY`: `tf_forget.report.summary_md`). Its
exit status: 0 when every gate passes, `GATE_FAILED` (3) when one fails, 1 on bad input (one
line, "<name>: error: ...", nothing written). `tf_forget.cli.app.run` adds the rest of the
rules (stray arguments, interrupts 130 / 143, TensorFlow's output to `<run>/logs/`).

`render(run_dir, ...)` is `tf-forget report RUN_DIR`: a finished run's report re-rendered
(`tf_forget.api.render_report`). `help_text(flag_values, doc)` is `--help`, section by section.

Both first ask `tf_forget.pipeline.finished_run` whether the run directory holds a finished run
of the same configuration that nothing changed since (`finished`): then nothing could be redone
and the report would be written again byte for byte, so the command prints the run's recorded
end and exits with its status, without importing TensorFlow.
"""

import os
import sys
import time

from absl import logging

from tf_forget.artifacts import errors
from tf_forget.artifacts import filesystem
from tf_forget.artifacts import user_output
from tf_forget.cli import app as cli_app
from tf_forget.cli import console
from tf_forget.cli import startup
from tf_forget.commands import audit_flags
from tf_forget.compat import cpu_kernels
from tf_forget.compat import keras2

GATE_FAILED = 3
STEP_SUMMARY = "GITHUB_STEP_SUMMARY"  # GitHub Actions: the step's summary file (Markdown)


def prepare():
  """Keras 2 and the portable CPU kernels, TensorFlow's C++ INFO / WARNING lines off: first
  thing, before anything imports TensorFlow (`tf_forget.compat`)."""
  keras2.enable()
  cpu_kernels.configure()
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
  logging.set_verbosity(logging.WARNING)


def summary_target(given, run_dir=None, environ=None):
  """The checked `user_output.Output` of the Markdown summary, or None: `--summary=PATH`
  (replaced; appended when it is the `$GITHUB_STEP_SUMMARY` file), else `$GITHUB_STEP_SUMMARY`
  (appended). A device or FIFO is opened here: `user_output.close` it when the command ends.

  Raises:
    errors.WriteError: the path cannot or must not be written (`user_output.check`: no
      directory, a directory, a FIFO nobody reads, inside tf_forget's folders of `run_dir`),
      checked before the audit runs.
  """
  environ = os.environ if environ is None else environ
  step = environ.get(STEP_SUMMARY) or None
  if not given and not step:
    return None
  path = filesystem.user_path(given or step)
  append = step is not None and path == filesystem.user_path(step)
  what = "--summary" if given else f"${STEP_SUMMARY}"
  return user_output.check(path, what, run_dir=run_dir, append=append)


def write_summary(result, target):
  """Writes `result`'s (an `api.Result`) Markdown summary to `target` (`summary_target`)."""
  from tf_forget.report import summary_md

  if target is None:
    return
  text = summary_md.render(
    result.report,
    result.tables.get("verdict"),
    result.tables.get("deployment"),
    result.manifest,
    result.paths["report_html"],
  )
  summary_md.write(target, text)


def _audit_with_summary(run_audit, target):
  """`run_audit()` (an `api.Result`), then its summary to `target`; `target` closed in any
  case."""
  try:
    result = run_audit()
    write_summary(result, target)
    return result
  finally:
    user_output.close(target)


def finished(config, summary, name):
  """The exit status of a finished run of `config` that nothing changed since, its recorded end
  printed and its summary written (`finished_run.unchanged`); None if there is no such run."""
  from tf_forget.pipeline import finished_run

  doc = finished_run.unchanged(config)
  if doc is None:
    return None
  out = config.out
  checked = len(doc["inputs"]) + len(doc["run"])
  print(
    f"{name}: {out} is a finished run of this configuration, and nothing it was made from "
    f"has changed since ({checked:,} files and folders checked, none read): it stands as written"
  )
  for line in doc["lines"]:
    print(line)
  target = summary_target(summary, run_dir=out)
  try:
    if target is not None:
      from tf_forget import api

      write_summary(api.load_report(out), target)
  finally:
    user_output.close(target)
  print(
    f"\nreport: {os.path.join(out, 'report.html')}\n"
    f"bundle: {os.path.join(out, 'deploy', 'manifest.json')}\n"
    f"wall time: {time.time() - startup.STARTED:.0f} s (from the command's start)"
  )
  return 0 if doc["passed"] else GATE_FAILED


def run(flag_values, name="audit"):
  """The audit command (module docstring) over the parsed `flag_values`; returns its status.

  Raises:
    SystemExit: "<name>: error: <one line>" on bad input, or `GATE_FAILED` (a status the
      binaries' in-process tests read from `SystemExit`).
  """
  prepare()
  fv = flag_values
  from tf_forget.config import flag_values as flag_values_lib
  from tf_forget.config import tree

  try:
    config_path = fv["config"].value
    base = tree.load(filesystem.user_path(config_path)) if config_path else None
    config = flag_values_lib.config_from_flags(*audit_flags.values(fv), base=base)
    flag_values_lib.check(config)
    if not fv["plan"].value:
      code = finished(config, fv["summary"].value, name)
      if code is not None:
        return _exit(code)
    # TensorFlow is imported once the flags are known good: a bad flag is one line at once.
    from tf_forget import api

    if fv["plan"].value:
      if fv["summary"].value:
        raise errors.Error("--summary is not for --plan (the plan writes nothing)")
      print(api.plan(config, filesystem.user_path(fv["unit_costs"].value)))
      return 0
    target = summary_target(fv["summary"].value, run_dir=config.out)
    result = _audit_with_summary(
      lambda: api.audit(config, on_locked=console.attach, started=startup.STARTED), target
    )
  except errors.Error as e:  # bad input or artifact: one line, exit 1 (a bug keeps its traceback)
    sys.exit(f"{name}: error: {errors.one_line(e, 1000)}")
  if not result.passed:
    sys.exit(GATE_FAILED)
  return 0


def render(run_dir, summary=None, name="report", trust_model_code=False, preprocess=None):
  """`tf-forget report RUN_DIR`: re-renders a finished run's report (`api.render_report`);
  returns 0, or `GATE_FAILED` when a gate fails (as the audit did). `trust_model_code` and
  `preprocess` say on the command line what the run's audit.json may not allow alone.

  Raises:
    SystemExit: "<name>: error: <one line>": no finished run there, or its inputs are gone.
  """
  prepare()
  try:
    run_dir = filesystem.user_path(run_dir)
    if not trust_model_code and not preprocess:
      code = _finished_report(run_dir, summary, name)
      if code is not None:
        return _exit(code)
    from tf_forget import api

    target = summary_target(summary, run_dir=run_dir)
    result = _audit_with_summary(
      lambda: api.render_report(
        run_dir, on_locked=console.attach, trust_model_code=trust_model_code, preprocess=preprocess
      ),
      target,
    )
  except errors.Error as e:
    sys.exit(f"{name}: error: {errors.one_line(e, 1000)}")
  if not result.passed:
    sys.exit(GATE_FAILED)
  return 0


def _finished_report(run_dir, summary, name):
  """`finished` for `tf-forget report RUN_DIR`: the configuration its audit.json records, as
  `api.render_report` audits it again (None: no such run, or no audit.json)."""
  from tf_forget.artifacts import layout
  from tf_forget.config import tree

  path = layout.audit_file(run_dir)
  try:
    config = tree.with_overrides(tree.load(path), {"out": run_dir})
  except errors.Error:  # no finished run there: `api.render_report` says so
    return None
  return finished(config, summary, name)


def _exit(code):
  """`code` as `run` and `render` end: 0 returned, `GATE_FAILED` raised."""
  if code:
    sys.exit(code)
  return 0


def help_text(flag_values, doc):
  """`--help`: `doc`, then `audit_flags.HELP_SECTIONS` with each flag's help and default
  (`cli_app.sectioned_help`: a flag of the audit in no section fails loudly)."""
  return cli_app.sectioned_help(doc, audit_flags.HELP_SECTIONS, flag_values, audit_flags.__name__)
