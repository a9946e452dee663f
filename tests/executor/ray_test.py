"""RayExecutor on a local Ray (one start for the whole file): the same contract as the pool."""

import os
import subprocess
import sys

import pytest

from tests.executor import contract
from tf_forget import executor
from tf_forget.executor import ray_executor

_PROBE = "executor_path_probe"


@pytest.fixture(scope="module")
def ray_ex(tmp_path_factory):
  # A module importable only through a sys.path entry the driver adds at run time (not in
  # PYTHONPATH, not the working directory): the executor must ship it to the workers.
  extra = tmp_path_factory.mktemp("extra_path")
  (extra / f"{_PROBE}.py").write_text("def where():\n  return __file__\n")
  sys.path.append(str(extra))
  try:
    with ray_executor.RayExecutor(address=None, num_cpus=2, env={"TF_FORGET_TOY": "ray"}) as ex:
      yield ex
  finally:
    sys.path.remove(str(extra))


def test_describe(ray_ex):
  assert ray_ex.name == "ray"
  description = ray_ex.describe()
  assert description.startswith("ray at ") and description.endswith(" (local), 2 CPUs, 0 GPUs")


def test_same_results_as_inline(ray_ex):
  assert os.getpid() not in contract.check_same_results_as_inline(ray_ex)


def test_two_tasks_run_at_once(ray_ex, tmp_path):
  contract.check_two_at_once(ray_ex, tmp_path)


def test_error_class_survives_and_no_task_starts_after_it(ray_ex, tmp_path):
  contract.check_error_class_survives_and_stops(ray_ex, tmp_path)


def test_other_errors_name_the_task(ray_ex):
  contract.check_other_errors_name_the_task(ray_ex)


def test_progress_lines(ray_ex):
  contract.check_progress_lines(ray_ex)


def test_env_and_the_drivers_paths_reach_the_workers(ray_ex):
  tasks = [
    contract.toy("env", "env_value", name="TF_FORGET_TOY"),
    executor.Task("probe", f"{_PROBE}:where", {}),
  ]
  got = ray_ex.run(tasks, log=lambda _: None)
  assert got["env"] == "ray"
  assert os.path.basename(got["probe"]) == f"{_PROBE}.py"


def test_only_the_missing_paths_are_shipped(monkeypatch, tmp_path):
  inherited, added, package = tmp_path / "inherited", tmp_path / "added", tmp_path / "eval"
  for d in (inherited, added, package):
    d.mkdir()
  # A script's own directory, first on sys.path (`bazel run //eval:audit`): a package whose
  # `encodings.py` would hide the standard library's in a worker started with it on PYTHONPATH.
  (package / "__init__.py").write_text("")
  (package / "encodings.py").write_text("")
  monkeypatch.setenv("PYTHONPATH", str(inherited))
  monkeypatch.setattr(
    sys,
    "path",
    [
      str(package),
      str(inherited),
      str(added),
      os.getcwd(),
      "",
      os.path.dirname(os.__file__),
      str(tmp_path / "missing"),
    ],
  )
  paths = ray_executor.project_paths()
  assert str(added) in paths
  assert not {str(inherited), os.getcwd(), os.path.dirname(os.__file__)} & set(paths)
  assert str(tmp_path / "missing") not in paths
  assert str(package) not in paths


def test_a_driver_connects_to_a_running_cluster_by_address(ray_ex, monkeypatch):
  # The fixture's local Ray is a running cluster: its GCS port passes check_address, and a second
  # driver connects with ray.init in a thread (bounded_init) and runs tasks on it.
  gcs = ray_ex._ray.get_runtime_context().gcs_address
  assert executor.check_address("ray", gcs) == gcs
  monkeypatch.setenv("RAY_ADDRESS", gcs)
  assert executor.check_address("ray", "auto") == gcs
  monkeypatch.delenv("RAY_ADDRESS")
  code = (
    "from tf_forget.executor import ray_executor\n"
    "from tests.executor import contract\n"
    f"with ray_executor.RayExecutor(address={gcs!r}) as ex:\n"
    "  print(sorted(v['square'] for v in ex.run(contract.squares(3), log=print).values()))\n"
  )
  root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
  done = subprocess.run(
    [sys.executable, "-c", code],
    cwd=root,
    capture_output=True,
    text=True,
    timeout=300,
    env=dict(os.environ, PYTHONPATH=root),
    check=False,
  )
  assert done.returncode == 0, done.stderr
  assert done.stdout.splitlines()[0] == f"[tasks] 3 tasks on ray at {gcs}, 2 CPUs, 0 GPUs"
  assert done.stdout.splitlines()[-1] == "[0, 1, 4]"


# Last: the worker kills make Ray start new workers, which slows the tests after them.
def test_lost_worker_is_retried(ray_ex, tmp_path):
  contract.check_lost_worker_is_retried(ray_ex, tmp_path)


def test_always_lost_worker_fails_after_max_retries(ray_ex, tmp_path):
  contract.check_always_lost_worker_fails(ray_ex, tmp_path, max_retries=2)
