"""`LocalExecutor`: a pool of spawned worker processes on this machine.

A `concurrent.futures.ProcessPoolExecutor` with the "spawn" start method (TensorFlow is not
fork-safe). The pool is created on the first `run` and its processes are reused by later tasks
and `run` calls (a worker pays TensorFlow's ~3-5 s import once). `start(preload)` creates it
before any run, its workers importing `preload` while the driver goes on (their stderr is then
forwarded: `forwarded_stderr`).

Scheduling: at most `workers` tasks run at once. A task occupies min(workers, ceil(num_cpus))
worker slots (a task with num_cpus=2 on 2 workers runs alone); `num_gpus` is ignored. This is a
simplification: the pool does not pin CPUs, it only limits how many tasks run concurrently.

Pool size: `workers` is capped at `WORKERS_PER_CORE` per core (`max_workers`; a process that
imports TensorFlow takes ~1 GB, and more of them than that only wait for a core), and a pool
starts no more processes than the run that starts it has tasks (`--workers=100` for 2 tasks:
2 processes). A later run with more tasks than the pool has processes replaces the idle pool
with a larger one, up to `workers`.

Lost workers: when a worker process dies (signal, OOM kill, `os._exit`) the pool is broken
(`BrokenProcessPool`) and every task in flight fails with it. The executor then rebuilds the
pool and resubmits those tasks. Each worker notes the key of its running task in a file named
by its pid (`worker.initialize`), and the pool terminates the surviving workers with SIGTERM,
so the task whose worker exited otherwise is the culprit: its loss counts against its
`max_retries`; the other tasks were collateral and are resubmitted for free. When the culprit
cannot be told apart (it died of SIGTERM too, or while idle), every task in flight counts a loss.

The workers die with the driver (lifeline.py): each asks Linux for SIGKILL when the
driver's main thread exits (`PR_SET_PDEATHSIG`; all of a pool's processes are spawned at once
by the thread creating the pool, asked for only if it is the main thread) and watches its parent
pid (any OS). So a `kill -9` or a SIGTERM of the driver leaves no worker training on. The state
directory `<tmp>/tf_forget_executor_<driver pid>_XXXX` is removed by `close()` and on an
interrupt, and by the next LocalExecutor to start a pool once its owner is dead.

Interrupts: the workers ignore SIGINT (Ctrl-C reaches the whole foreground process group; they
are spawned with SIGINT blocked until they ignore it). When `run` is interrupted in the driver
(KeyboardInterrupt, or a subclass raised by a signal handler) the executor terminates the
workers (SIGTERM, SIGKILL after 5 s), drops the pool and the state directory and re-raises; the
tasks that finished keep their artifacts, the running ones leave none (atomic writes), and
`progress()` says how many were done.

Affinity: while at least two tasks are in flight, a pool of as many workers as cores has each
worker pinned to its own core; a lone task's worker gets every core (`affinity.Spread`).

Closing: `close()` waits for running tasks; the workers of an idle pool are stopped with SIGTERM
rather than asked to exit, since every result is received and what is left is the interpreter's
teardown (~1.5 s for a worker that imported TensorFlow). A task's printed output is flushed
before its result is sent (`worker.envelope`), so nothing of it is lost.

`env`: environment variables set in each worker by the pool initializer, before the worker
imports any task module (by default workers inherit `os.environ`). Note that spawn imports the
driver's `__main__` module in each worker before the initializer runs: keep TensorFlow imports
out of a binary's module level (or set such variables in the driver's own environment).
"""

import concurrent.futures
from concurrent.futures import process as futures_process
import contextlib
import math
import multiprocessing
from multiprocessing import resource_tracker
import os
import shutil
import signal
import threading

from tf_forget.artifacts import errors
from tf_forget.executor import affinity
from tf_forget.executor import executor_api
from tf_forget.executor import forwarded_stderr
from tf_forget.executor import lifeline
from tf_forget.executor import scheduler
from tf_forget.executor import worker

_TERMINATE_WAIT_S = 5.0  # after SIGTERM, a worker gets this long before SIGKILL
WORKERS_PER_CORE = 4  # the most worker processes a pool holds per core (`max_workers`)


@contextlib.contextmanager
def _sigint_blocked():
  """Blocks SIGINT in this thread while the block runs (spawned workers inherit the mask).

  A worker spawned with SIGINT blocked cannot die of a Ctrl-C (with a KeyboardInterrupt
  traceback) before its initializer ignores SIGINT (`worker.ignore_sigint`). The driver loses
  nothing: a SIGINT stays pending until the block ends (or another thread takes it).
  """
  if not hasattr(signal, "pthread_sigmask"):
    yield
    return
  previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
  try:
    yield
  finally:
    signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def check_workers(workers, minimum=1):
  """`workers` (None: os.cpu_count()) as an int >= `minimum`; ExecutorError otherwise."""
  if workers is None:
    return max(os.cpu_count() or 1, minimum)
  if isinstance(workers, bool) or not isinstance(workers, int) or workers < minimum:
    raise executor_api.ExecutorError(f"workers must be an integer >= {minimum}, got {workers!r}")
  return workers


def max_workers():
  """The most worker processes this machine's pools hold: `WORKERS_PER_CORE` per core."""
  return WORKERS_PER_CORE * (os.cpu_count() or 1)


class LocalExecutor(scheduler.PooledExecutor):
  """Runs tasks in a reused pool of `workers` spawned processes; retries lost workers."""

  name = "local"

  def __init__(self, workers=None, max_retries=2, env=None):
    """A local process pool (the processes start with the first task).

    Args:
      workers: number of worker processes (default `os.cpu_count()`; at most `max_workers()`,
        and no more than a run has tasks: module docstring).
      max_retries: how many times a task whose worker died runs again.
      env: {name: value} environment variables set in each worker.

    Raises:
      ExecutorError: bad `workers`, `max_retries` or `env`.
    """
    super().__init__(max_retries)
    self.asked = check_workers(workers)
    self.workers = min(self.asked, max_workers())
    self._wanted = self.workers  # processes the current run can use (`_run`)
    self._pool_size = 0
    if env is not None and not isinstance(env, dict):
      raise executor_api.ExecutorError(
        f"env must be a dict of environment variables, got {env!r:.100}"
      )
    self._env = {str(k): str(v) for k, v in (env or {}).items()}
    self._pool = None
    self._state_dir = None
    self._in_flight = set()  # futures submitted and not yet seen done (`_running`)
    self._spread = None  # the pool's `affinity.Spread`
    self._preload = ()  # modules a worker imports as it starts (`start`)
    self._stderr = None  # the `forwarded_stderr.Pipe` of a pool started early (`start`)

  def describe(self):
    capped = (
      f" ({self.asked} asked: at most {WORKERS_PER_CORE} per core)"
      if self.asked > self.workers
      else ""
    )
    return f"local process pool, {self.workers} worker{'' if self.workers == 1 else 's'}{capped}"

  def _run(self, tasks, progress):
    """Sizes the pool to the run (module docstring), then runs `tasks` (`scheduler`)."""
    self._wanted = min(self.workers, len(tasks))
    if self._pool is not None and self._pool_size < self._wanted:
      pool, self._pool = self._pool, None  # replaced by a larger one
      self._shut(pool)
    return super()._run(tasks, progress)

  def _capacity(self):
    return {"slots": self.workers}

  def _need(self, task):
    return {"slots": min(self.workers, max(1, math.ceil(task.num_cpus)))}

  def start(self, preload=()):
    """Starts the pool's `workers` processes now, before any run, each importing the modules
    `preload` as it starts (a first audit's workers import TensorFlow while the driver
    validates). Their stderr is forwarded to wherever the driver's is when they write
    (`forwarded_stderr`): the command moves its log into the run directory meanwhile. A pool
    already started is kept."""
    if self._pool is not None:
      return
    self._preload = tuple(preload)
    self._wanted = self.workers
    # The resource tracker that spawning starts once per process would hold the pipe for good.
    resource_tracker.ensure_running()
    self._stderr = forwarded_stderr.Pipe()
    with self._stderr:
      self._get_pool()

  def _get_pool(self):
    if self._pool is None:
      if self._state_dir is None:
        lifeline.remove_stale_state_dirs()
        self._state_dir = lifeline.make_state_dir()
      on_main_thread = threading.current_thread() is threading.main_thread()
      self._pool_size = self._wanted
      self._pool = concurrent.futures.ProcessPoolExecutor(
        max_workers=self._pool_size,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=worker.initialize,
        initargs=(self._env, self._state_dir, os.getpid(), on_main_thread, self._preload),
      )
      launch = getattr(self._pool, "_launch_processes", None)  # CPython >= 3.9
      if launch is not None:
        with _sigint_blocked():
          launch()  # all of them now, from this thread: see lifeline.py on PR_SET_PDEATHSIG
      processes = (getattr(self._pool, "_processes", None) or {}).values()
      self._spread = affinity.Spread([p.pid for p in processes], affinity.driver_cores())
    return self._pool

  def _submit(self, task):
    try:
      future = self._get_pool().submit(worker.envelope, task.key, task.fn, dict(task.kwargs))
      future.never_ran = False
      self._in_flight.add(future)
      self._spread.update(self._running())
    except futures_process.BrokenProcessPool as e:  # a worker died while idle, since the last wait
      future = concurrent.futures.Future()
      future.set_exception(e)
      future.never_ran = True
    future.task_key = task.key
    return future

  def _running(self):
    """How many submitted tasks have not finished (`_in_flight` pruned of the finished)."""
    self._in_flight = {f for f in self._in_flight if not f.done()}
    return len(self._in_flight)

  def _wait(self, handles):
    done, _ = concurrent.futures.wait(handles, return_when=concurrent.futures.FIRST_COMPLETED)
    if self._spread is not None:
      self._spread.update(self._running())
    if any(isinstance(f.exception(), futures_process.BrokenProcessPool) for f in done):
      culprits = self._reset_broken_pool()
      done = handles  # the broken pool has set every future of the pool
      in_flight = {
        f.task_key for f in handles if isinstance(f.exception(), futures_process.BrokenProcessPool)
      }
      if not culprits & in_flight:
        culprits = in_flight
    else:
      culprits = set()
    outcomes = []
    for future in done:
      error = future.exception()
      if error is None:
        outcomes.append((future, scheduler.from_envelope(future.result())))
      elif isinstance(error, futures_process.BrokenProcessPool):
        lost = future.task_key in culprits and not future.never_ran
        status = scheduler.LOST if lost else scheduler.COLLATERAL
        outcomes.append((future, scheduler.Outcome(status)))
      else:  # the envelope could not be sent or received (it cannot be the task's exception)
        outcomes.append(
          (
            future,
            scheduler.Outcome(
              scheduler.FAILED,
              error=executor_api.task_error(
                future.task_key, type(error).__name__, errors.one_line(error)
              ),
            ),
          )
        )
    return outcomes

  def _reset_broken_pool(self):
    """Shuts the broken pool down; returns the keys of the tasks whose worker exited by itself."""
    pool, self._pool = self._pool, None
    processes = dict(getattr(pool, "_processes", None) or {})
    pool.shutdown(wait=True, cancel_futures=True)
    culprits = set()
    for pid, process in processes.items():
      process.join(timeout=10)
      if process.exitcode not in (None, 0, -signal.SIGTERM):
        culprits.add(worker.running_key(self._state_dir, pid))
    culprits.discard("")
    return culprits

  def _abort(self, handles):
    """Stops the workers at once (the driver was interrupted); a later run starts a new pool.

    The running tasks are lost (their artifacts are written atomically: nothing partial stays);
    the state directory is removed.
    """
    pool, self._pool = self._pool, None
    if pool is not None:
      _stop_workers(pool)
    self._remove_state_dir()

  def _remove_state_dir(self):
    if self._state_dir is not None:
      shutil.rmtree(self._state_dir, ignore_errors=True)
      self._state_dir = None

  def close(self):
    """Shuts the pool down and removes the state directory.

    Running tasks are waited for. An idle pool's workers are stopped at once (`_shut`):
    every result is received, so a worker has nothing left to do but its interpreter's teardown
    (~1.5 s after TensorFlow tasks).
    """
    pool, self._pool = self._pool, None
    if pool is not None:
      self._shut(pool)
    self._remove_state_dir()
    if self._stderr is not None:  # the workers have exited: what they wrote last is copied
      self._stderr.join(timeout=_TERMINATE_WAIT_S)
      self._stderr = None

  def _shut(self, pool):
    """Shuts `pool` down: its workers stopped at once when idle, else its running tasks awaited."""
    if self._running():
      pool.shutdown(wait=True, cancel_futures=True)
    else:
      _stop_workers(pool)


def _stop_workers(pool):
  """Stops `pool`'s workers with SIGTERM (SIGKILL after `_TERMINATE_WAIT_S`) and shuts it down."""
  processes = list((getattr(pool, "_processes", None) or {}).values())
  for process in processes:
    process.terminate()
  for process in processes:
    process.join(timeout=_TERMINATE_WAIT_S)
    if process.exitcode is None:
      process.kill()
  pool.shutdown(wait=True, cancel_futures=True)
