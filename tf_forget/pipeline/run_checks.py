"""The run directory's checks, after the plan and before anything is written: plan steps
(`tf_forget.pipeline.plan_steps`) that `audit_lib.run_audit` runs once.

In order, a refusal naming the first problem:

1. `outputs`: the blind-annotation export lands outside tf_forget's folders of the run
   directory and can be written;
2. `human_study`: the annotations or key files of `--human_study_*` exist and have their
   columns (`tf_forget.report.human_study`);
3. `attach`: the user's data files are hashed, every image checked (`data_identity`);
4. `identity`: what the run directory is made with (`run_identity.audit_identity`);
5. `url_reachable`: a `scheme://` `--out` answers a write probe in time;
6. `ours`: `--out` holds a record tf_forget wrote, or nothing (`run_lock.check_ours`);
7. `recorded`: its `audit.json` records the same identity (`run_identity.check_audit_file`);
8. `users_files`: the folders the audit replaces hold only files their listing names;
9. `run_dir`: a trained population's `run.json` agrees (`population.check_run_dir`);
10. `check_executor`: the executor can be made (`executors.check_executor`);
11. `input_scaling`: the user's model sees images at the scale it was trained on (it runs the
    model: late, `tf_forget.evaluate.input_scaling`); it makes `caveats`, the sentences of a
    check that did not refuse but is unsure (`audit_lib.run_audit` prints them and records
    them in `audit.json`);
12. `writable`: `--out` can be written (it is created if it does not exist: last).
"""

import os
import threading

from tf_forget.artifacts import errors
from tf_forget.artifacts import fileio
from tf_forget.artifacts import filesystem
from tf_forget.artifacts import layout
from tf_forget.artifacts import run_lock
from tf_forget.artifacts import swap
from tf_forget.artifacts import user_output
from tf_forget.config import tree
from tf_forget.data import dataset_api
from tf_forget.evaluate import deploy
from tf_forget.evaluate import input_scaling as input_scaling_lib
from tf_forget.pipeline import data_identity
from tf_forget.pipeline import executors
from tf_forget.pipeline import plan_steps
from tf_forget.pipeline import run_identity
from tf_forget.report import human_study as human_study_lib
from tf_forget.train import population

# How long a `scheme://` --out may take to answer the write probe before the audit gives up.
URL_CHECK_TIMEOUT_S = 60.0


def _check_out(out, timeout_s=URL_CHECK_TIMEOUT_S):
  """Checks that `out` can be written, within `timeout_s` for a `scheme://` path.

  Raises:
    AuditError: "cannot write to <out>: <reason>", or an unreachable bucket (one line).
  """
  outcome = {}

  def probe():
    try:
      fileio.check_writable(out)
    except errors.Error as e:
      outcome["error"] = e

  if not filesystem.is_url(out):
    probe()
  else:
    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive():
      raise tree.AuditError(
        f"cannot reach {out} within {timeout_s:.0f} s: check the "
        "bucket name, the network and the credentials"
      )
  if "error" in outcome:
    raise tree.AuditError(errors.one_line(outcome["error"], 1000)) from outcome["error"]


# What the audit replaces whole in the run directory: (swap label, entries) of the report and
# of the bundle.
SWAPPED = ((layout.REPORT_STAGING, layout.REPORT_ENTRIES), (deploy.BUNDLE, (deploy.BUNDLE,)))


def users_files(out):
  """Step: refuses a run directory whose report or bundle folders hold files tf_forget did not
  write there: replacing `deploy/` or `tables/` whole would delete them. Files there
  with no listing of the swap (`swap.listing`) beside them are not known to be tf_forget's.

  Raises:
    AuditError: one line naming the files (at most 5).
  """
  if not filesystem.exists(out):
    return
  found, unlisted = [], []
  try:
    for label, entries in SWAPPED:
      files = swap.foreign_files(out, label, entries)
      found += files
      if files and not filesystem.exists(swap.listing(out, label)):
        unlisted.append(os.path.basename(swap.listing(out, label)))
  except errors.Error as e:
    raise tree.AuditError(errors.one_line(e, 300)) from e
  if found:
    shown = ", ".join(found[:5]) + (f" and {len(found) - 5} more" if len(found) > 5 else "")
    why = f"; no {' or '.join(unlisted)} records them as tf_forget's" if unlisted else ""
    raise tree.AuditError(
      f"{out} holds files tf_forget did not write in the folders it replaces ({shown}{why}): "
      "move them out of the run directory (a re-run replaces those folders whole)"
    )


def human_study(human_study):
  """Step: a missing annotations or key file, a bad column (`human_study_lib.check_options`)."""
  if human_study is not None:
    human_study_lib.check_options(human_study)


def outputs(out, human_study):
  """Step: the blind-annotation export (`--annotation_export`) lands outside tf_forget's own
  folders and files of the run directory (`user_output.check_outside`: a re-run replaces
  `deploy/` and `tables/` whole) and can be written (a probe; nothing is left)."""
  where = human_study.export_dir if human_study is not None else None
  if where is None:
    return
  user_output.check_outside(out, where, "--annotation_export")
  if not filesystem.is_url(where):
    try:
      fileio.remove_created(fileio.check_writable(where))
    except errors.WriteError as e:
      raise errors.WriteError(f"--annotation_export: {errors.one_line(e)}") from e


def attach(out, data, planned):
  """Step: the plan with the user's data content recorded, and the hashed files
  (`data_identity.attach`; `--max_image_pixels` of the `tree.Data` section)."""
  plan, hashed = data_identity.attach(planned, out, data.max_image_pixels)
  return {"plan": plan, "hashed": hashed}


def identity(plan):
  """Step: what the run directory is made with (`run_identity.audit_identity`)."""
  return {"identity": run_identity.audit_identity(plan)}


def url_reachable(out):
  """Step: an unreachable bucket is one line, before anything is read."""
  if filesystem.is_url(out):
    _check_out(out)


def ours(out):
  """Step: `out` holds a record tf_forget wrote there, or nothing (`run_lock.check_ours`)."""
  run_lock.check_ours(out)


def recorded(out, identity):
  """Step: `<out>/audit.json`, if any, records the same identity."""
  run_identity.check_audit_file(out, identity)


def run_dir(plan):
  """Step: a population's `run.json` agrees; an audit of the user's models trains nothing."""
  if plan.user is None:
    population.check_run_dir(plan.population)


NO_SCALING_CHECK = (
  "the input scaling check was not run: it needs labels, and the audited images have none; "
  "make sure --preprocess is what your model was trained with"
)


def input_scaling(plan):
  """Step: the user's model sees images at its scale (it runs the model); makes `caveats`, the
  check's caveat as a tuple of one sentence, or ()."""
  caveat = None
  if plan.user is not None and dataset_api.unlabelled(plan.dataset.spec.options):
    caveat = NO_SCALING_CHECK  # it scores the preprocessings on the labels
  elif plan.user is not None and plan.user.input_scaling_check:
    caveat = input_scaling_lib.check(plan.user, plan.population.kind, plan.dataset)
  return {"caveats": (caveat,) if caveat else ()}


def writable(out):
  """Step: a local `out` can be written; it is created if it does not exist (last)."""
  if not filesystem.is_url(out):
    _check_out(out)


Step = plan_steps.Step
STEPS = (
  Step(outputs, reads=("out", "human_study")),
  Step(human_study, reads=("human_study",)),
  Step(attach, reads=("out", "data"), needs=("planned",), makes=("plan", "hashed")),
  Step(identity, needs=("plan",), makes=("identity",)),
  Step(url_reachable, reads=("out",)),
  Step(ours, reads=("out",)),
  Step(recorded, reads=("out",), needs=("identity",)),
  Step(users_files, reads=("out",)),
  Step(run_dir, needs=("plan",)),
  Step(executors.check_executor, reads=("execution",)),
  Step(input_scaling, needs=("plan",), makes=("caveats",)),
  Step(writable, reads=("out",)),
)
