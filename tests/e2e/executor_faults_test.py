"""Fault injection — a lost worker mid-member, and a killed driver.

1. The worker process training a member is killed (SIGKILL) after the member's first
   checkpoint: the executor retries the task on a fresh worker, which resumes from that
   checkpoint, and the member's `model.keras` is byte-identical to an uninterrupted inline run
   (on the local process pool). Ray's part is tested apart, each where it is cheap: Ray
   retries a lost worker (`tests/executor/ray_test.py`, toy tasks), and a whole audit on Ray
   gives the same members and files (`executor_audit_test.py`); the resumed member is the
   task's doing, not the executor's.
2. The audit driver (`eval/audit.py --executor=local --workers=2`) is killed with its workers
   after some members are finished: the re-run trains only the unfinished members (the
   finished ones' files are not touched) and completes the report.
"""

import glob
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from tests.e2e import run_digest
from tf_forget import executor as executor_lib
from tf_forget.artifacts import fileio
from tf_forget.artifacts import layout
from tf_forget.executor import executor_api
from tf_forget.pipeline import executors
from tf_forget.pipeline import tasks
from tf_forget.train import member_config
from tf_forget.train import member_files
from tf_forget.train import presets

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _member():
  # 300 steps, a checkpoint every 20: the kill lands early in a ~10 s training.
  return member_config.MemberConfig(
    dataset="digits",
    model="small_cnn",
    variant="prune_0.5",
    k=0,
    preset=presets.get("tiny", steps=300),
  )


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
  run = str(tmp_path_factory.mktemp("inline") / "run")
  tasks.train_member(run_dir=run, **tasks.member_kwargs(_member()))
  return run_digest.model_content_sha(layout.member_model(run, "prune_0.5", 0))


def _wait_for(predicate, what, timeout=180):
  deadline = time.time() + timeout
  while time.time() < deadline:
    if predicate():
      return
    time.sleep(0.1)
  raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.parametrize("name", ["local"])
def test_worker_killed_mid_member_is_retried_identically(tmp_path, uninterrupted, name):
  run, pid_dir = str(tmp_path / "run"), tmp_path / "pids"
  pid_dir.mkdir()
  task = executor_api.Task(
    key="train prune_0.5/0",
    fn="tests.e2e.fault_tasks:train_member_recording_pid",
    kwargs=dict(pid_dir=str(pid_dir), run_dir=run, **tasks.member_kwargs(_member())),
  )
  env = executors.worker_env()
  result, failure = {}, []
  with executor_lib.make(name, workers=1 if name == "local" else 2, env=env) as executor:

    def drive():
      try:
        result.update(executor.run([task], stage="train", log=lambda line: None))
      except Exception as e:  # reported below
        failure.append(e)

    thread = threading.Thread(target=drive)
    thread.start()
    state = os.path.join(member_files.member_dir(run, "prune_0.5", 0), "checkpoints", "checkpoint")
    _wait_for(lambda: os.path.exists(state), "the first checkpoint")
    pids = list(pid_dir.iterdir())
    assert len(pids) == 1
    os.kill(int(pids[0].read_text()), signal.SIGKILL)
    thread.join(timeout=300)
  assert not failure, failure
  assert len(list(pid_dir.iterdir())) == 2, "the task was not retried on a new worker"
  meta = member_files.read_metadata(member_files.member_dir(run, "prune_0.5", 0))
  assert meta["resumed_from_step"] >= 20, "the retry did not resume from the checkpoint"
  assert result[task.key]["model_sha256"] == meta["model_sha256"]
  assert run_digest.model_content_sha(layout.member_model(run, "prune_0.5", 0)) == uninterrupted


def _audit(out, extra=()):
  cmd = [
    sys.executable,
    os.path.join(ROOT, "eval", "audit.py"),
    "--dataset=digits",
    f"--out={out}",
    "--preset=tiny",
    "--members=3",
    "--variants=dense,prune_0.5",
    "--steps=200",
    "--quantizations=",
    "--pruned_quantizations=none",
    "--corruptions=none",
    "--noise_levels=none",
    "--deploy_encoding=plain",
    "--executor=local",
    "--workers=2",
    *extra,
  ]
  return cmd, dict(os.environ, PYTHONPATH=ROOT)


def test_killed_driver_redoes_only_unfinished_work(tmp_path):
  out = str(tmp_path / "run")
  cmd, env = _audit(out)
  proc = subprocess.Popen(
    cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
  )
  pattern = os.path.join(out, "members", "*", "*", "metadata.json")
  try:
    _wait_for(lambda: len(glob.glob(pattern)) >= 2, "two finished members")
  finally:
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
  finished = {p: os.stat(p).st_mtime_ns for p in glob.glob(pattern)}
  models = {p: fileio.read_json(p, "member")["model_sha256"] for p in finished}
  assert 2 <= len(finished) < 6, "the kill came too late to leave unfinished members"
  done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
  assert done.returncode == 0, done.stderr[-3000:]
  assert f"{len(finished)} of 6 members already trained" in done.stdout, done.stdout[:3000]
  assert f"[train] {6 - len(finished)}/{6 - len(finished)}" in done.stdout, done.stdout[:3000]
  for path, mtime in finished.items():  # finished members were not touched
    assert os.stat(path).st_mtime_ns == mtime, path
    assert fileio.read_json(path, "member")["model_sha256"] == models[path]
  assert len(glob.glob(pattern)) == 6
  assert os.path.exists(os.path.join(out, "report.json"))
