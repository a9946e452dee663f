"""An audit of the user's files whose estimated work is small runs in this process.

`executors.make_executor` with the default local pool (no --workers): below `SMALL_WORK_S` of one
worker's estimated time it makes the inline executor and says why in one line; an explicit
--workers, another executor, no estimate (a population audit) or a large estimate keep what
was asked. Only then does the audit decode its images ahead, in a thread of this process, while
the stages before the evaluation run (`audit_lib._decode_ahead`).
"""

import pytest

from tf_forget.config import tree
from tf_forget.pipeline import audit_lib
from tf_forget.pipeline import executors


def _config(executor="local", workers=None):
  return tree.Execution(executor=executor, workers=workers)


@pytest.mark.parametrize(
  "config,seconds,kind",
  [
    (_config(), 10.0, "InlineExecutor"),
    (_config(), executors.SMALL_WORK_S - 0.1, "InlineExecutor"),
    (_config(), executors.SMALL_WORK_S, "LocalExecutor"),
    (_config(), None, "LocalExecutor"),
    (_config(workers=2), 10.0, "LocalExecutor"),
    (_config("inline"), 1000.0, "InlineExecutor"),
  ],
)
def test_the_default_pool_becomes_this_process_only_for_small_work(config, seconds, kind):
  lines = []
  executor = executors.make_executor(config, lines.append, seconds)
  try:
    assert type(executor).__name__ == kind
    assert len(lines) == 1 and lines[0].startswith("executor: ")
    if config.executor == "local" and kind == "InlineExecutor":
      assert lines[0].startswith("executor: this process (the work is estimated at ")
      assert "--workers=N for a pool" in lines[0]
  finally:
    executor.close()


class _Dataset:
  """A user data set's face to `audit_lib._decode_ahead`: its eval split, `decode_ahead`."""

  def __init__(self):
    self.spec, self.asked = type("Spec", (), {"eval_split": "test"})(), []

  def decode_ahead(self, split):
    self.asked.append(split)
    return "future"


@pytest.mark.parametrize(
  "config,seconds,ahead", [(_config(), 10.0, True), (_config(), None, False)]
)
def test_the_images_are_decoded_ahead_only_for_tasks_in_this_process(config, seconds, ahead):
  dataset = _Dataset()
  executor = executors.make_executor(config, lambda line: None, seconds)
  try:
    found = audit_lib._decode_ahead(dataset, executor)
  finally:
    executor.close()
  assert (found, dataset.asked) == (("future", ["test"]) if ahead else (None, []))
  assert audit_lib._decode_ahead(object(), executor) is None  # a registered data set
