"""The audit's library function (`eval/audit.py` is the thin binary over it).

`run_audit(config)` runs the pipeline for one data set — the stages told once, in order, with
what each reads and writes, in docs/architecture.md ("The stages, in order") — each stage
resumable and skipping what is already on disk. Every number in the report comes from running
the exported `.tflite` files.

The stages that make members and files run on an executor (`config.execution`; `tf_forget.pipeline.stages`): "inline"
in this process, "local" on a process pool of `workers`, "ray" as Ray core tasks. Each unit of work
is a task (`tf_forget.pipeline.tasks`) whose artifacts are the same bytes on every executor; the
executor is not part of the run's identity, so a run may be continued on another one.

Defaults come from the data set's protocol (`tf_forget.data.protocols`, one entry per data set):
preset, post-training formats, corruptions and severities, robustness members, noise protocol.
`audit_plan.plan_report` prints what an audit will cost (counts per stage,
`tf_forget/pipeline/costs.py`) without the data.

Validation first (the plan's steps, `tf_forget.pipeline.plan_steps`): `run_audit` checks
everything — data set, preset and overrides, model name, steps, variants, formats, corruptions,
noise protocol, the run directory's existing `audit.json` and `run.json`, and that `out` is writable
— before it writes anything. Then it writes `<out>/audit.json` (`audit_identity`: the config fields
that determine artifacts; `caveats`: what a check found without refusing, also printed). A re-run
with an equal config reuses every artifact that is still current (each records the hashes of its
inputs; `tf_forget.artifacts.lineage`), and says why it redoes the others; a different config is
refused with one line naming the differing fields. The report holds only the variants and splits
this config asks for.
"""

import concurrent.futures
import os
import time

from tf_forget.artifacts import errors
from tf_forget.artifacts import run_lock
from tf_forget.data import held_files
from tf_forget.data import registry as data_registry
from tf_forget.executor import collector
from tf_forget.executor import inline
from tf_forget.pipeline import audit_plan
from tf_forget.pipeline import data_identity
from tf_forget.pipeline import executors
from tf_forget.pipeline import final_stages
from tf_forget.pipeline import finished_run
from tf_forget.pipeline import plan_steps
from tf_forget.pipeline import run_checks
from tf_forget.pipeline import run_identity
from tf_forget.pipeline import stages


def _validate(config):
  """Every check of `run_audit` that writes nothing: the plan (`audit_plan.plan`), then the run
  directory's checks (`run_checks.STEPS`); returns (plan, identity, the user's data files
  hashed: `data_identity.attach`, the checks' caveats: sentences)."""
  made = plan_steps.run(run_checks.STEPS, config, planned=audit_plan.plan(config))
  return made["plan"], made["identity"], made["hashed"], made["caveats"]


def run_audit(config, log=print, on_locked=None, started=None, executor=None):
  """Runs the audit and returns (report dict, manifest dict).

  Validates everything first, then takes the run directory's lock (`run_lock`: one writer per
  run directory), then writes. The lock is released when the audit ends (also on an
  error or an interrupt; the kernel drops it if the process is killed).

  Args:
    config: a `tf_forget.config.tree.AuditConfig`.
    log: callable(str) for the progress lines.
    on_locked: optional callable(out) called once the run directory is locked and before the
      first artifact is written (the binary moves its log file there).
    started: when the command started (`time.time()`): the wall time printed at the end
      counts from it, start-up and validation included (None: from this call).
    executor: a first audit's process pool started before this module was imported
      (`executors.early_executor`), run on and closed by the audit; None: the audit makes its
      executor once validated.

  Raises:
    errors.Error subclasses with a one-line message: bad data set, preset, model, variant,
    format, corruption, noise protocol, gate, executor address, a run directory made with
    another config or in use by another command, a non-empty directory that is not a run
    directory, or an output directory that cannot be written. Nothing is written before every
    check has passed.
  """
  started = time.time() if started is None else started
  try:
    snapshot = finished_run.take(config)  # before anything is read
    # The data listed and checked once, for every step and task; its bytes as hashed, for the
    # tasks of this process that decode it; the caller's objects out of the collector's walks.
    with data_registry.reuse(), held_files.holding(), collector.frozen():
      return _validated_run(config, log, on_locked, started, snapshot, executor)
  finally:
    if executor is not None:  # also when the validation refused the audit
      executor.close()


def _validated_run(config, log, on_locked, started, snapshot, executor=None):
  """`run_audit` once the finished run's snapshot is taken (`executor`: one started early)."""
  p, identity, hashed, caveats = _validate(config)
  lock = run_lock.acquire(config.out, "audit")
  try:
    if lock.note:
      log(lock.note)
    # Again: another command may have written it between the check and the lock.
    run_identity.check_audit_file(config.out, identity)
    # The run's record first (`run_lock.check_ours` knows the directory by it), then the log.
    run_identity.write_audit_file(config.out, identity, config, caveats)
    if on_locked is not None:
      on_locked(config.out)
    report, manifest = _run_locked(config, p, log, hashed, caveats, started, executor)
    _record(snapshot, hashed, caveats, report, manifest)
    return report, manifest
  finally:
    lock.release()


def _record(snapshot, hashed, caveats, report, manifest):
  """The finished run's record (`finished_run`): its end as printed, minus the wall time."""
  from tf_forget.report import summary_terminal

  lines = [f"warning: {caveat}" for caveat in caveats]
  summary_terminal.print_summary(report, manifest, lines.append)
  passed = not manifest.get("failed_variants")
  finished_run.record(snapshot, hashed, lines, passed)


def _decode_ahead(dataset, executor):
  """The audited split's decoding started in a thread when the tasks run in this process
  (`UserDataset.decode_ahead`: a first audit of the files just hashed): it runs while the
  stages before the evaluation do. Its Future, or None."""
  if not isinstance(executor, inline.InlineExecutor) or not hasattr(dataset, "decode_ahead"):
    return None
  return dataset.decode_ahead(dataset.spec.eval_split)


def _run_locked(config, p, log, hashed=(), caveats=(), started=None, executor=None):
  """The audit's stages, once the run directory is locked and its audit.json written (see
  `run_audit`); the validation's `caveats` are printed first, one line each; `started` is
  when the command started (None: now); `executor`: the pool started early
  (`executors.early_executor`), or None: made here."""
  started = time.time() if started is None else started
  for caveat in caveats:
    log(f"warning: {caveat}")
  for line in data_identity.lines(hashed):
    log(line)
  data_identity.write(config.out, hashed)
  t_start = time.time()
  # An audit of the user's files: one worker's estimated time (`user_plan`), for the ETA.
  seconds = p.estimate.seconds if p.estimate is not None else None
  if executor is None:
    executor = executors.make_executor(config.execution, log, seconds)
  else:
    log(f"executor: {executor.describe()}")
  ahead = _decode_ahead(p.dataset, executor)
  try:
    try:
      log(audit_plan.describe(p, config.execution, workers=getattr(executor, "workers", None)))
    except errors.Error as e:  # the plan informs: a missing size or cost file stops nothing
      log(f"(no cost plan: {errors.one_line(e, 300)})")
    made, final = stages.audit_stages(p), final_stages.sections()
    ctx = stages.context(
      p,
      config.out,
      config.deployment.num_threads,
      executor,
      log,
      final_stages.Final(config.deployment, config.gates, config.to_json(), config.human_study),
    )
    stages.run_sections(made, ctx, executor, t_start, log, total=len(made) + len(final))
  finally:
    executor.close()
    if ahead is not None:  # no thread outlives the audit, also one that ends early
      concurrent.futures.wait([ahead])
  # In this process, the pool closed: the encodings time files on a quiet CPU.
  stages.run_sections(final, ctx, None, t_start, log, first=len(made) + 1)
  report = ctx.results[final_stages.ReportStage.name]
  manifest = ctx.results[final_stages.BundleStage.name]
  log(
    f"\nreport: {os.path.join(config.out, 'report.html')}\n"
    f"bundle: {os.path.join(config.out, 'deploy', 'manifest.json')}\n"
    f"wall time: {time.time() - started:.0f} s (from the command's start)"
  )
  return report, manifest
