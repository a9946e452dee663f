"""The stage contract and its one driver (`tf_forget.pipeline.driver.run_stage`).

A toy stage (one text file per unit, a stage-wide sum written by `finish`) runs on the inline
executor and on a local process pool: every check is asked once per run, only the units with a
stale artifact are submitted, a stale artifact that exists gets one "redo <what>: <why>" line,
and `finish` sees the tasks' results. Then the same kind of stage is added to a real (tiny)
audit as one more entry of its stage list, and runs between evaluation and the report.
"""

import collections
import hashlib
import os

import pytest

from tf_forget import executor as executor_lib
from tf_forget.artifacts import errors
from tf_forget.artifacts import fileio
from tf_forget.artifacts import lineage
from tf_forget.config import tree
from tf_forget.pipeline import audit_lib
from tf_forget.pipeline import driver
from tf_forget.pipeline import stages as stages_lib

TASK = "tests.pipeline.driver_test:write_value"


def write_value(path, value):
  """The toy task: writes `value` to `path` (atomically); returns it."""
  fileio.write_bytes(path, f"{value}\n".encode())
  return {"value": value}


def _toy_status(path, value):
  if not os.path.exists(path):
    return lineage.MISSING
  with open(path, encoding="utf-8") as f:
    text = f.read()
  if text == "unreadable\n":
    raise errors.ReadError(f"{path} is unreadable")
  if text != f"{value}\n":
    return lineage.Status(False, f"it holds {text.strip()!r}, not {value}")
  return lineage.Status(True, "current")


class ToyStage(driver.Stage):
  """Unit i writes <dir>/<i>.txt holding i * i; finish writes the sum of what was made."""

  name = "toy"
  noun = "toy files already made"

  def __init__(self, directory, n=3):
    self.directory, self.n = directory, n
    self.asked = collections.Counter()

  def _path(self, i):
    return os.path.join(self.directory, f"{i}.txt")

  def _status(self, i):
    self.asked[i] += 1
    return _toy_status(self._path(i), i * i)

  def units(self, ctx):
    return [
      driver.Unit(
        checks=[driver.Check(f"toy/{i}", lambda i=i: self._status(i), i)],
        task=lambda items, i=i: driver.task(f"toy {i}", TASK, path=self._path(i), value=i * i),
      )
      for i in range(self.n)
    ]

  def finish(self, ctx, results):
    fileio.write_bytes(os.path.join(self.directory, "made.txt"), f"{sorted(results)}\n".encode())
    return results


def _run(stage, executor):
  lines = []
  results = driver.run_stage(stage, None, executor, lines.append)
  return results, lines


@pytest.mark.parametrize("name, workers", [("inline", None), ("local", 1)])
def test_only_stale_units_run_and_every_check_is_asked_once(tmp_path, name, workers):
  stage = ToyStage(str(tmp_path))
  with executor_lib.make(name, workers=workers) as executor:
    results, lines = _run(stage, executor)
    assert results == {f"toy {i}": {"value": i * i} for i in range(3)}
    assert "  0 of 3 toy files already made" in lines
    assert stage.asked == {0: 1, 1: 1, 2: 1}
    assert (tmp_path / "made.txt").read_text() == "['toy 0', 'toy 1', 'toy 2']\n"

    (tmp_path / "1.txt").write_text("7\n")  # stale: another value
    (tmp_path / "2.txt").write_text("unreadable\n")  # its status raises: stale, no redo line
    results, lines = _run(stage, executor)
  assert sorted(results) == ["toy 1", "toy 2"]
  assert "  redo toy/1: it holds '7', not 1" in lines
  assert not any("toy/2" in line for line in lines)
  assert "  1 of 3 toy files already made" in lines
  assert stage.asked == {0: 2, 1: 2, 2: 2}
  assert (tmp_path / "2.txt").read_text() == "4\n"


def test_nothing_stale_submits_nothing(tmp_path):
  stage = ToyStage(str(tmp_path), n=2)
  with executor_lib.make("inline") as executor:
    _run(stage, executor)
    results, lines = _run(stage, executor)
  assert results == {}
  assert lines == ["  2 of 2 toy files already made"]


class DigestStage(driver.Stage):
  """A stage added to the audit: the sha256 of every clean-split predictions file."""

  name = "digest"
  noun = "digests already made"

  def _paths(self, ctx):
    split = ctx.dataset.spec.eval_split
    return {
      (v, k): os.path.join(ctx.run_dir, "predictions", v, str(k), f"{split}.npz")
      for v in ctx.plain_variants
      for k in range(ctx.plan.population.members)
    }

  def units(self, ctx):
    units = []
    for (v, k), path in sorted(self._paths(ctx).items()):
      out = os.path.join(ctx.run_dir, "digest", v, f"{k}.txt")
      value = hashlib.sha256(fileio.read_bytes(path)).hexdigest()
      units.append(
        driver.Unit(
          checks=[driver.Check(f"digest {v}/{k}", lambda o=out, x=value: _toy_status(o, x))],
          task=lambda _, o=out, x=value, v=v, k=k: driver.task(
            f"digest {v}/{k}", TASK, path=o, value=x
          ),
        )
      )
    return units


def test_a_stage_added_to_the_audit_runs_and_is_reused(tmp_path, monkeypatch):
  listed = stages_lib.audit_stages
  monkeypatch.setattr(
    stages_lib, "audit_stages", lambda plan: listed(plan) + [("digests", [DigestStage()])]
  )
  config = tree.AuditConfig(
    out=str(tmp_path / "run"),
    population=tree.Population(preset="tiny", members=2, variants=("dense",), steps=40),
    formats=tree.Formats(quantizations=(), pruned_quantizations=()),
    deployment=tree.Deployment(encoding="plain"),
    robustness=tree.Robustness(corruptions=()),
    noise=tree.Noise(levels=()),
    execution=tree.Execution(executor="inline"),
  )
  logs = []
  audit_lib.run_audit(config, log=logs.append)
  assert any(line.startswith("== 4/7 digests") for line in logs), logs
  assert "[digest] 2 tasks on inline (driver process)" in logs
  digests = sorted(os.listdir(tmp_path / "run" / "digest" / "dense"))
  assert digests == ["0.txt", "1.txt"]
  logs = []
  audit_lib.run_audit(config, log=logs.append)
  assert "  2 of 2 digests already made" in logs
  assert not any(line.lstrip().startswith("redo") for line in logs), logs
