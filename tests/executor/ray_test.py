"""RayExecutor on a local Ray (one start for the whole file): the same contract as the pool."""

import os

import pytest

from tests.executor import contract
from tf_forget.executor import ray_executor


@pytest.fixture(scope="module")
def ray_ex():
  with ray_executor.RayExecutor(address=None, num_cpus=2, env={"TF_FORGET_TOY": "ray"}) as ex:
    yield ex


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


def test_lost_worker_is_retried(ray_ex, tmp_path):
  contract.check_lost_worker_is_retried(ray_ex, tmp_path)


def test_always_lost_worker_fails_after_max_retries(ray_ex, tmp_path):
  contract.check_always_lost_worker_fails(ray_ex, tmp_path, max_retries=2)


def test_progress_lines(ray_ex):
  contract.check_progress_lines(ray_ex)


def test_env_and_project_path_reach_the_workers(ray_ex):
  # The workers run in Ray's session directory, yet import tests.executor.toy_tasks: the
  # executor ships the driver's paths in runtime_env PYTHONPATH.
  got = ray_ex.run([contract.toy("env", "env_value", name="TF_FORGET_TOY"),
                    contract.toy("cwd", "cwd")], log=lambda _: None)
  assert got["env"] == "ray"
  paths = ray_ex.runtime_env()["env_vars"]["PYTHONPATH"].split(os.pathsep)
  assert os.path.dirname(os.path.dirname(os.path.dirname(contract.__file__))) in paths
