"""The executor an audit runs on: checked, chosen, and (a first audit's pool) started early.

`check_executor` refuses executor options that cannot work, before anything is written;
`make_executor` makes the executor of the `--executor` / `--workers` options (`tf_forget.executor`),
running an audit of the user's files whose estimated work is small in this process
(`SMALL_WORK_S`); `early_executor` starts a first audit's process pool before this process imports
TensorFlow, so that its workers import theirs meanwhile (`tf_forget.api.audit`).

Light: no TensorFlow, nothing of the pipeline's stages.
"""

import os

from tf_forget import executor as executor_lib
from tf_forget.artifacts import filesystem
from tf_forget.artifacts import layout
from tf_forget.pipeline import driver

# Environment a Ray worker needs before it imports TensorFlow (a local pool inherits it).
WORKER_ENV = (
  "TF_USE_LEGACY_KERAS",
  "TF_ENABLE_ONEDNN_OPTS",
  "ONEDNN_MAX_CPU_ISA",
  "TF_NUM_INTRAOP_THREADS",
  "TF_NUM_INTEROP_THREADS",
  "TF_CPP_MIN_LOG_LEVEL",
  "TF_DETERMINISTIC_OPS",
)


# Seconds the audit's validation waits for a Ray cluster's port, then for its gRPC handshake.
CONNECT_CHECK_S = 5.0


def check_executor(execution):
  """Checks, before anything is written, the executor options (a `tree.Execution`) and that
  the executor can be reached (`executor_lib.make` would refuse them after
  audit.json is written; a port that is no Ray cluster would keep `ray.init` waiting for two
  minutes).

  Raises:
    executor_lib.ExecutorError: --workers with --executor=inline, --workers=0 or --workers
      with --ray_address for --executor=ray, an unreachable Ray address or one that does not
      answer as Ray (one line, within `2 * CONNECT_CHECK_S` seconds).
  """
  workers, address = execution.workers, execution.ray_address
  if execution.executor == "inline" and workers:
    raise executor_lib.ExecutorError(
      f"--workers={workers} is for --executor=local (processes) or ray; --executor=inline "
      "runs everything in this process: drop one of them"
    )
  if execution.executor == "ray" and workers == 0:
    raise executor_lib.ExecutorError(
      "--executor=ray needs --workers >= 1 (or none: every CPU); --workers=0 means inline"
    )
  if execution.executor == "ray" and address and workers is not None:
    raise executor_lib.ExecutorError(
      f"--workers sets the CPUs of a Ray started here; the cluster at --ray_address="
      f"{address} has its own: drop --workers"
    )
  if execution.executor == "ray" and address:
    executor_lib.check_address(
      "ray", address, timeout_s=CONNECT_CHECK_S, handshake_s=CONNECT_CHECK_S
    )


# Below this estimate of one worker's time (`tf_forget.pipeline.user_costs`), an audit of the user's
# files runs in this process unless --workers is given: a pool's workers each import TensorFlow and
# the task modules first (~6-10 s each on 2 cores), more than they would save
# (`benchmarks/tutorial_audit_bench.py`: 44 s with a pool of 2, 30 s in this process, same bytes).
SMALL_WORK_S = 60.0


def make_executor(execution, log, estimated_seconds=None):
  """The executor of `execution` (`tree.Execution`) ("inline" runs the tasks in this process).

  Args:
    estimated_seconds: the plan's estimate of one worker's time, or None; below `SMALL_WORK_S`
      the default local pool (no --workers) becomes this process.
  """
  name = execution.executor
  if (
    name == "local"
    and execution.workers is None
    and estimated_seconds is not None
    and estimated_seconds < SMALL_WORK_S
  ):
    name = "inline"
    log(
      f"executor: this process (the work is estimated at {estimated_seconds:.0f} s, under "
      f"{SMALL_WORK_S:.0f} s: a pool's start-up would cost more than it saves; --workers=N "
      "for a pool)"
    )
  executor = executor_lib.make(
    name,
    workers=execution.workers if name != "inline" else None,
    address=execution.ray_address,
    env=worker_env(),
  )
  if name == execution.executor:
    log(f"executor: {executor.describe()}")
  return executor


def worker_env():
  return {k: os.environ[k] for k in WORKER_ENV if k in os.environ}


def early_executor(config):
  """A first audit's process pool, started at once (`LocalExecutor.start`: its workers import
  the task modules while this process validates), or None.

  Only where `make_executor` will make that pool whatever the validation finds: the local
  executor with --workers, or for a trained population (an audit of the user's files decides
  by its estimate), into a local run directory without audit.json (a first audit: every stage
  has work; a re-run may have none). The audit uses and closes it
  (`tf_forget.pipeline.audit_lib.run_audit`), also when its validation refuses it.
  """
  execution = config.execution
  if execution.executor != "local" or execution.ray_address is not None:
    return None
  if config.user is not None and execution.workers is None:
    return None
  if filesystem.is_url(config.out) or os.path.exists(layout.audit_file(config.out)):
    return None
  try:
    executor = executor_lib.make("local", workers=execution.workers, env=worker_env())
  except executor_lib.ExecutorError:
    return None  # the validation says why
  if not isinstance(executor, executor_lib.LocalExecutor):
    return None
  executor.start(preload=driver.TASK_MODULES)
  return executor
