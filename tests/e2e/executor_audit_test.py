"""The same audit on every executor gives the same bytes and the same report.

One tiny audit (preset "tiny", 40 steps: 2 members of dense and prune_0.5, a full_int8
quantization of the dense members, two corrupted splits, two noise levels) runs three times into
three run directories: `--executor=inline` (in the driver), `--executor=local --workers=2`, and
`--executor=ray` on a local Ray started by the test (2 CPUs). Every member's `model.keras`,
every `.tflite` file (full_int8 included: same machine), every predictions file (top-1
digest per file and split, noise too) and report.json's numbers must be identical: a task is a
pure function of its arguments, and TensorFlow's threads come from the environment, not from
the number of workers (`tf_forget.compat.cpu_kernels`).
"""

import glob
import os

import pytest

from tests.e2e import run_digest
from tests.e2e import tiny_run
from tf_forget.config import tree
from tf_forget.pipeline import audit_lib
from tf_forget.pipeline import audit_plan
from tf_forget.train import presets

ALL_FORMATS = ("float32", "full_int8")
RUNS = (("inline", "inline", None), ("local_2", "local", 2), ("ray", "ray", 2))


def _config(out, executor, workers):
  return tree.AuditConfig(
    out=out,
    population=tree.Population(
      preset="tiny", members=2, variants=("dense", "prune_0.5"), steps=tiny_run.STEPS
    ),
    formats=tree.Formats(quantizations=("full_int8",), pruned_quantizations=()),
    deployment=tree.Deployment(encoding="plain"),
    robustness=tree.Robustness(corruptions=("gaussian_noise", "contrast"), severities=(3,)),
    noise=tree.Noise(levels=(0.0, 0.5), draws=2, examples=50),
    execution=tree.Execution(executor=executor, workers=workers),
  )


def _models(run):
  """{"members/<variant>/<k>/model.keras": sha256 of its architecture and weights}."""
  return {
    os.path.relpath(p, run): run_digest.model_content_sha(p)
    for p in sorted(glob.glob(os.path.join(run, "members", "*", "*", "model.keras")))
  }


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
  out = {}
  for name, executor, workers in RUNS:
    run = str(tmp_path_factory.mktemp(name) / "run")
    logs = []
    report, _ = audit_lib.run_audit(_config(run, executor, workers), log=logs.append)
    out[name] = {"run": run, "report": report, "logs": logs}
  return out


def test_every_executor_did_the_work_in_its_workers(runs):
  for name, executor, workers in RUNS:
    logs = "\n".join(runs[name]["logs"])
    assert "executor: " in logs, name
    if executor == "local":
      assert f"{workers} worker" in logs, (name, logs[:500])
    elif executor == "ray":
      assert "ray" in logs.lower(), name
    else:
      assert "executor: inline (driver process)" in logs, (name, logs[:500])
    assert "0 of 4 members already trained" in logs, name
    assert "[train] 4/4" in logs, name


@pytest.mark.parametrize("name", [r[0] for r in RUNS[1:]])
def test_same_members_files_predictions_and_report(runs, name):
  base, other = runs[RUNS[0][0]], runs[name]
  assert _models(other["run"]) == _models(base["run"])
  want = run_digest.digest(base["run"], base["report"], ALL_FORMATS)
  got = run_digest.digest(other["run"], other["report"], ALL_FORMATS)
  assert got["exports_sha256"] == want["exports_sha256"]
  assert got["predictions"] == want["predictions"]
  assert len(want["predictions"]) == 6 * 3 + 6  # 6 files x 3 splits, + noise per file
  assert got["report"] == want["report"]


def test_a_rerun_on_another_executor_reuses_everything(runs):
  run = runs["local_2"]["run"]
  before = {
    p: os.stat(p).st_mtime_ns for p in glob.glob(os.path.join(run, "**", "*.npz"), recursive=True)
  }
  logs = []
  audit_lib.run_audit(_config(run, "inline", None), log=logs.append)
  after = {p: os.stat(p).st_mtime_ns for p in before}
  assert after == before
  assert not [line for line in logs if "redo" in line], logs


def test_ram_paths_need_the_inline_executor():
  with pytest.raises(tree.AuditError, match="use --executor=inline"):
    audit_plan.plan(tree.AuditConfig(out="ram://run", execution=tree.Execution("local")))
  with pytest.raises(tree.AuditError, match="executor must be one of"):
    audit_plan.plan(tree.AuditConfig(out="/tmp/x", execution=tree.Execution("spark")))


@pytest.mark.parametrize("name", sorted(presets.names()))
def test_task_presets_round_trip_through_json(name):
  # A training task gets its member's protocol as JSON (tf_forget/pipeline/tasks.py); it must
  # rebuild exactly the driver's preset, or the member's config hash (and so its lineage) would
  # differ.
  for preset in (
    presets.get(name),
    presets.get(name, steps=presets.get(name).steps * 2, mixed_precision=True),
  ):
    assert presets.Preset.from_json(preset.to_json()) == preset
  with pytest.raises(presets.PresetError, match="unknown fields"):
    presets.Preset.from_json(dict(presets.get(name).to_json(), nosuch=1))
