"""A first audit's process pool starts before the audit validates (`executors.early_executor`).

Only where the audit will run on that pool whatever its validation finds — the local executor,
with --workers or for a trained population, into a local run directory without audit.json — is
the pool started at once; every other configuration gets None and the audit makes its executor
once validated (`executors.make_executor`).
"""

import os

import pytest

from tf_forget.artifacts import layout
from tf_forget.config import tree
from tf_forget.executor import local
from tf_forget.pipeline import executors


def _config(out, executor="local", workers=1, user=False):
  return tree.AuditConfig(
    out=str(out),
    user=tree.UserModels(references=("model.keras",)) if user else None,
    execution=tree.Execution(executor=executor, workers=workers),
  )


@pytest.mark.parametrize(
  "executor,workers,user",
  [("local", 1, False), ("local", None, False), ("local", 1, True)],
)
def test_a_first_audit_on_a_pool_starts_it_at_once(tmp_path, executor, workers, user):
  started = executors.early_executor(_config(tmp_path / "run", executor, workers, user))
  try:
    assert isinstance(started, local.LocalExecutor)
    assert started._pool is not None  # the processes are up before any task
  finally:
    started.close()
  assert not (tmp_path / "run").exists(), "nothing is written before the validation"


@pytest.mark.parametrize(
  "executor,workers,user",
  [
    ("inline", None, False),  # this process
    ("local", 0, False),  # --workers=0: this process
    ("local", None, True),  # the user's files: the estimate decides, after the validation
  ],
)
def test_no_pool_where_the_validation_decides_the_executor(tmp_path, executor, workers, user):
  assert executors.early_executor(_config(tmp_path / "run", executor, workers, user)) is None


def test_no_pool_for_a_run_directory_that_holds_an_audit(tmp_path):
  """A re-run (or `tf-forget report`) may find every artifact current: no work for a pool."""
  run = tmp_path / "run"
  os.makedirs(run)
  with open(layout.audit_file(str(run)), "w", encoding="utf-8") as f:
    f.write("{}")
  assert executors.early_executor(_config(run)) is None


def test_no_pool_for_a_run_directory_behind_a_url():
  assert executors.early_executor(_config("ram://early/run")) is None
