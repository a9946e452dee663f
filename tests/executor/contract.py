"""The behaviour every executor must show, as checks shared by the executors' test files.

Each `check_*` takes an executor (and a fresh temporary directory) and fails for real if the
executor breaks the contract of tf_forget/executor/executor_api.py.
"""

import os
import re

import pytest

from tests.executor import toy_tasks
from tf_forget import executor
from tf_forget.executor import executor_api

TOY = "tests.executor.toy_tasks"


def toy(key, function, /, cost=1.0, **kwargs):
  return executor.Task(key, f"{TOY}:{function}", kwargs, cost=cost)


def squares(n):
  return [toy(f"square {i}", "square", cost=1 + i % 3, x=i) for i in range(n)]


def _quiet(_):
  pass


def _started(marker_dir):
  return sorted(n[len("started-") :] for n in os.listdir(marker_dir) if n.startswith("started-"))


def check_same_results_as_inline(ex):
  tasks = squares(7)
  expected = executor.InlineExecutor().run(tasks, log=_quiet)
  got = ex.run(tasks, log=_quiet)
  assert list(got) == [t.key for t in tasks]  # keyed by task, in the caller's order
  assert {k: v["square"] for k, v in got.items()} == {k: v["square"] for k, v in expected.items()}
  assert {k: v["square"] for k, v in got.items()} == {f"square {i}": i * i for i in range(7)}
  return {v["pid"] for v in got.values()}


def check_two_at_once(ex, tmp):
  tasks = [
    toy("a", "meet", marker_dir=str(tmp), me="a", peer="b", timeout=30.0),
    toy("b", "meet", marker_dir=str(tmp), me="b", peer="a", timeout=30.0),
  ]
  assert ex.run(tasks, log=_quiet) == {"a": True, "b": True}


def check_error_class_survives_and_stops(ex, tmp):
  # Biggest first: "fail" and "slow" start together; "fail" raises at once; the small tasks
  # must never start, and the error comes back as its own class with its own message.
  tasks = [toy(f"small {i}", "started", marker_dir=str(tmp), name=f"small {i}") for i in range(4)]
  tasks.insert(2, toy("slow", "started", cost=5, marker_dir=str(tmp), name="slow", seconds=1.0))
  tasks.insert(
    3, toy("fail", "fail", cost=10, marker_dir=str(tmp), name="fail", message="the toy failed")
  )
  lines = []
  with pytest.raises(toy_tasks.ToyError) as info:
    ex.run(tasks, stage="toys", log=lines.append)
  assert type(info.value) is toy_tasks.ToyError
  assert str(info.value) == "the toy failed"
  assert isinstance(info.value.__cause__, executor_api.RemoteTraceback)
  assert "toy_tasks.py" in str(info.value.__cause__)
  assert set(_started(tmp)) <= {"fail", "slow"}
  assert "fail" in _started(tmp)
  assert any(line.startswith("  [toys] fail failed: ToyError: the toy failed") for line in lines)
  # The executor still works after a failed run.
  assert ex.run([toy("again", "square", x=3)], log=_quiet)["again"]["square"] == 9


def check_other_errors_name_the_task(ex):
  with pytest.raises(executor.ExecutorError) as info:
    ex.run([toy("divide", "divide", x=1, y=0)], log=_quiet)
  assert str(info.value) == "task divide: ZeroDivisionError: division by zero"
  assert "ZeroDivisionError" in str(info.value.__cause__)
  with pytest.raises(
    executor.ExecutorError,
    match=r"^task odd: the toy failed because its error "
    r"cannot be unpickled$",
  ):
    ex.run([toy("odd", "fail_unpicklable")], log=_quiet)
  with pytest.raises(
    executor.ExecutorError,
    match=r"^task set: TypeError: the task returned a "
    r"value that is not JSON-able",
  ):
    ex.run([toy("set", "not_json")], log=_quiet)


def check_lost_worker_is_retried(ex, tmp):
  marker = os.path.join(tmp, "died once")
  tasks = [toy("phoenix", "die_once", marker=marker, value="back"), *squares(3)]
  got = ex.run(tasks, log=_quiet)
  assert os.path.exists(marker)
  assert got["phoenix"] == "back"
  assert [got[f"square {i}"]["square"] for i in range(3)] == [0, 1, 4]


def check_always_lost_worker_fails(ex, tmp, max_retries):
  tasks = [toy("doomed", "always_die", marker_dir=str(tmp), name="doomed")]
  with pytest.raises(
    executor.ExecutorError, match=rf"^task doomed: worker lost {max_retries + 1} times$"
  ):
    ex.run(tasks, log=_quiet)
  attempts = [n for n in os.listdir(tmp) if n.startswith("attempt-doomed-")]
  assert len(attempts) == max_retries + 1


_LINE = re.compile(r"^  \[sq\] (\d+)/20 ETA (\d+) s \(square (\d+)\)$")


def check_progress_lines(ex):
  lines = []
  ex.run(squares(20), stage="sq", log=lines.append)
  assert lines[0] == f"[sq] 20 tasks on {ex.describe()}"
  matches = [_LINE.match(line) for line in lines[1:]]
  assert all(matches), lines
  done = [int(m.group(1)) for m in matches]
  assert done == [2, 4, 6, 8, 10, 12, 14, 16, 18, 20]  # every ~10%, and the end
  assert matches[-1].group(2) == "0"
