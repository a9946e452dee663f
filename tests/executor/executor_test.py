"""The executor interface: Task checks, the registry, progress lines, InlineExecutor, imports."""

import sys

import pytest

from tests import import_check
from tests.executor import contract
from tests.executor import toy_tasks
from tf_forget import executor
from tf_forget.executor import executor_api
from tf_forget.executor import progress
from tf_forget.executor import ray_executor
from tf_forget.executor import worker

# --- Task -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
  "kwargs, message",
  [
    (dict(key="", fn="m:f"), "task key must be a non-empty string"),
    (dict(key="k", fn="m.f"), "task k: fn must be 'package.module:function'"),
    (dict(key="k", fn="m:f", kwargs={"x": {1, 2}}), "task k: kwargs are not JSON-able"),
    (dict(key="k", fn="m:f", kwargs={"x": float("nan")}), "task k: kwargs are not JSON-able"),
    (dict(key="k", fn="m:f", kwargs={1: 2}), "task k: kwargs must be a mapping with string keys"),
    (dict(key="k", fn="m:f", num_cpus=-1), "task k: num_cpus must be a number >= 0"),
    (dict(key="k", fn="m:f", cost=0), "task k: cost must be > 0"),
    (dict(key="k", fn="m:f", affinity=None), "task k: affinity must be a string"),
  ],
)
def test_bad_tasks_are_one_line_errors(kwargs, message):
  with pytest.raises(executor.ExecutorError) as info:
    executor.Task(**kwargs)
  assert str(info.value).startswith(message)
  assert "\n" not in str(info.value)


def test_task_kwargs_are_copied():
  kwargs = {"x": 1}
  task = executor.Task("k", "m:f", kwargs)
  kwargs["x"] = 2
  assert task.kwargs == {"x": 1}


def test_duplicate_keys_are_refused():
  with pytest.raises(executor.ExecutorError, match="^duplicate task key 'k'$"):
    executor.InlineExecutor().run([executor.Task("k", "m:f"), executor.Task("k", "m:g")])


def test_resolve_takes_dotted_attributes():
  assert worker.resolve("os.path:join") is __import__("os").path.join
  assert worker.resolve("tests.executor.toy_tasks:ToyError.__name__") == "ToyError"


# --- registry -------------------------------------------------------------------------------


def test_unknown_executor_is_a_one_line_error():
  with pytest.raises(executor.ExecutorError) as info:
    executor.make("dask")
  assert str(info.value) == "unknown executor 'dask' (known: inline, local, ray)"


@pytest.mark.parametrize(
  "kwargs, message",
  [
    (dict(name="local", workers=-1), "workers must be an integer >= 0, got -1"),
    (dict(name="local", workers=1.5), "workers must be an integer >= 0, got 1.5"),
    (dict(name="local", address="auto"), "an address is for the ray executor only"),
    (dict(name="ray", workers=0), "the ray executor needs workers >= 1"),
    (dict(name="ray", workers=2, address="auto"), "workers sets the CPUs of a local Ray"),
    (dict(name="local", max_retries=-1), "max_retries must be an integer >= 0"),
  ],
)
def test_bad_arguments_are_one_line_errors(kwargs, message):
  with pytest.raises(executor.ExecutorError, match="^" + message):
    executor.make(**kwargs)


def test_make_builds_each_executor():
  assert set(executor.EXECUTORS) == {"inline", "local", "ray"}
  assert isinstance(executor.make("inline"), executor.InlineExecutor)
  assert isinstance(executor.make("local", workers=0), executor.InlineExecutor)
  local = executor.make("local", workers=3, max_retries=1, env={"A": "1"})
  assert isinstance(local, executor.LocalExecutor)
  assert (local.workers, local.max_retries) == (3, 1)
  assert local.describe() == "local process pool, 3 workers"
  ray_ex = executor.make("ray", workers=2)
  assert isinstance(ray_ex, executor.RayExecutor)
  assert (ray_ex.address, ray_ex.num_cpus) == (None, 2)
  assert executor.make("ray", address="auto").address == "auto"


def test_ray_not_installed_is_a_one_line_error(monkeypatch):
  monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
  with pytest.raises(
    executor.ExecutorError, match=r"^ray is not installed: pip install ray==2\.60\.0$"
  ):
    ray_executor.RayExecutor().describe()


def test_ray_runtime_env_merges_the_callers():
  ex = ray_executor.RayExecutor(
    address="auto", env={"B": 2}, runtime_env={"py_modules": ["/src/x"], "env_vars": {"A": "1"}}
  )
  assert ex.runtime_env() == {"py_modules": ["/src/x"], "env_vars": {"A": "1", "B": "2"}}


# --- progress -------------------------------------------------------------------------------


class _Clock:
  def __init__(self):
    self.now = 100.0

  def __call__(self):
    return self.now


def test_progress_eta_is_weighted_by_cost():
  tasks = [executor.Task("big", "m:f", cost=3), executor.Task("small", "m:f", cost=1)]
  lines, clock = [], _Clock()
  p = progress.Progress("train", tasks, lines.append, clock=clock)
  p.start("somewhere")
  clock.now += 30.0  # 3 cost units in 30 s: the last unit needs 10 s more
  p.done(tasks[0])
  clock.now += 10.0
  p.done(tasks[1])
  assert lines == [
    "[train] 2 tasks on somewhere",
    "  [train] 1/2 ETA 10 s (big)",
    "  [train] 2/2 ETA 0 s (small)",
  ]


def test_progress_logs_every_tenth_and_the_end():
  tasks = [executor.Task(f"t{i}", "m:f") for i in range(25)]
  lines = []
  p = progress.Progress("s", tasks, lines.append, clock=_Clock())
  for task in tasks:
    p.done(task)
  assert [line.split()[1] for line in lines] == [
    "3/25",
    "5/25",
    "8/25",
    "10/25",
    "13/25",
    "15/25",
    "18/25",
    "20/25",
    "23/25",
    "25/25",
  ]


# --- InlineExecutor ------------------------------------------------------------------------


def test_inline_runs_in_this_process_in_order(tmp_path):
  ex = executor.InlineExecutor()
  assert ex.name == "inline"
  got = ex.run(contract.squares(4), log=lambda _: None)
  assert {v["pid"] for v in got.values()} == {__import__("os").getpid()}
  assert ex.run([], log=lambda _: None) == {}


def test_inline_errors(tmp_path):
  ex = executor.InlineExecutor()
  with pytest.raises(toy_tasks.ToyError, match="^boom$"):
    ex.run(
      [contract.toy("f", "fail", marker_dir=str(tmp_path), name="f", message="boom")],
      log=lambda _: None,
    )
  with pytest.raises(executor.ExecutorError, match=r"^task t: FileNotFoundError: .*/nowhere/"):
    ex.run([contract.toy("t", "touch", path="/nowhere/x")], log=lambda _: None)
  with pytest.raises(executor.ExecutorError) as info:
    ex.run([contract.toy("divide", "divide", x=1, y=0)], log=lambda _: None)
  assert str(info.value) == "task divide: ZeroDivisionError: division by zero"
  assert isinstance(info.value.__cause__, ZeroDivisionError)


def test_progress_says_how_far_an_interrupted_run_got():
  ex = executor.InlineExecutor()
  assert ex.progress() is None
  tasks = [
    contract.toy("one", "square", x=1),
    contract.toy("two", "square", x=2),
    contract.toy("stop", "interrupt"),
    contract.toy("four", "square", x=4),
  ]
  with pytest.raises(KeyboardInterrupt):
    ex.run(tasks, stage="train", log=lambda _: None)
  assert ex.progress() == executor.RunProgress("train", 2, 4)
  assert ex.progress() == ("train", 2, 4)  # a plain tuple too
  ex.run(contract.squares(3), stage="export", log=lambda _: None)
  assert ex.progress() == ("export", 3, 3)


def test_inline_progress_lines():
  contract.check_progress_lines(executor.InlineExecutor())


def test_failure_envelope_keeps_errors_and_wraps_the_rest():
  ok = worker.envelope("k", "tests.executor.toy_tasks:fail_unpicklable", {})
  assert (ok["ok"], ok["is_error"], ok["pickled"]) == (False, True, None)
  err = executor_api.failure_from_envelope("k", ok)
  assert type(err) is executor.ExecutorError
  assert str(err) == "task k: the toy failed because its error cannot be unpickled"
  assert "UnpicklableError" in str(err.__cause__)


# --- imports ----------------------------------------------------------------------------------


def test_the_package_imports_no_tensorflow_and_nothing_of_the_pipeline():
  foreign = import_check.foreign_modules(
    "import tf_forget.executor\nimport tf_forget.executor.worker", "tf_forget.executor"
  )
  # errors, and the stage-status leaf an interrupted command reads (standard library only).
  assert foreign == (
    "tf_forget.artifacts,tf_forget.artifacts.errors,tf_forget.cli,tf_forget.cli.status"
  )
