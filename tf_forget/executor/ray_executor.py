"""`RayExecutor`: runs the tasks as Ray core tasks, on a local Ray or on a Ray cluster.

Ray is optional: it is imported when the executor first connects (`pip install ray==2.60.0`).
Each `Task` becomes one Ray task (`worker.envelope` wrapped by `ray.remote`) with
`num_cpus`/`num_gpus` from the task, `max_retries` for lost workers (Ray reruns a task whose
worker process died; once they are used up the executor raises "task <key>: worker lost <n>
times") and `retry_exceptions=False` (a task's own exception is never retried). Tasks are
submitted biggest `cost` first while they fit the cluster's CPUs / GPUs as read at the start of
each `run` (so that no task starts after a failure; scheduler.py).

Where the workers find the code:
  * `address=None` starts a local Ray (`ray.init(address="local")`, shut down by `close()`).
    Its workers inherit the driver's environment and working directory (measured with Ray
    2.60: a driver run with `PYTHONPATH=.` from the checkout, or a Bazel py_test whose stub sets
    PYTHONPATH, imports fine), but not the entries the driver added to `sys.path` at run time
    (pytest's `pythonpath`, a script's `sys.path.insert`). The executor puts the checkout's root
    and the driver's `sys.path` directories outside the Python installation that the inherited
    PYTHONPATH and working directory do not cover into `runtime_env["env_vars"]["PYTHONPATH"]`.
    A runtime_env costs ~4 s once (Ray starts dedicated workers instead of its prestarted ones),
    so none is set when nothing is missing and `env` is empty.
  * `address="auto"` or "ray://host:port" connects to a running cluster (`close()` only
    disconnects). The paths of the driver mean nothing on the cluster's nodes: the project must
    be installed in the cluster's image, or shipped with the job, e.g.
    `RayExecutor("ray://head:10001", runtime_env={"py_modules": ["/src/tf_forget"]})` or
    `runtime_env={"working_dir": "/src/checkout"}`. Task arguments that are paths must be valid
    on the workers (a shared file system).
`env` is passed as `runtime_env["env_vars"]` (merged into the `runtime_env` argument's).

Connecting to a running cluster never hangs: `address.check_address` first opens a
TCP connection to its port (10 s at most, name lookup included), then `ray.init` runs in a
thread waited for at most `connect_timeout_s` (`bounded_init`): an unreachable or wrong address
is a one-line `ExecutorError` naming it, not ~10 minutes of Ray's retries. `ray.init` replaces
the driver's SIGTERM handler with its own; the executor puts a Python handler back.

Ray's INFO lines are kept down (`logging_level=WARNING`); worker output and task errors still
reach the driver (`log_to_driver=True`). A local Ray keeps its session files under a short
temporary directory /tmp/ray_XXXX (AF_UNIX socket paths are limited to 107 bytes, and Bazel's
TEST_TMPDIR is long), removed by `close()`. Ray 2.60 turns token authentication on for a local
Ray; where no token is configured the executor makes one in a private temporary file rather
than in ~/.ray (read-only in Bazel's sandbox): see `_ensure_local_token`.
"""

import atexit
import contextlib
import logging
import os
import re
import secrets
import shutil
import signal
import sys
import tempfile
import threading

from tf_forget.artifacts import errors
from tf_forget.executor import address as address_lib
from tf_forget.executor import executor_api
from tf_forget.executor import scheduler
from tf_forget.executor import worker

_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # Ray colours its task names
INSTALL = "ray is not installed: pip install ray==2.60.0"
# A local Ray enables token authentication (~/.ray/auth_token) and warns that it did, every time.
_AUTH_LOGGER = "ray._private.authentication.authentication_token_setup"
_AUTH_VARS = ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")
_LOST_ERRORS = ("WorkerCrashedError", "OutOfMemoryError", "NodeDiedError", "LocalRayletDiedError")
CONNECT_TIMEOUT_S = 120.0  # bound on ray.init for a running cluster


@contextlib.contextmanager
def _quiet(name):
  """Raises the logger `name` to ERROR while the block runs."""
  logger = logging.getLogger(name)
  level = logger.level
  logger.setLevel(logging.ERROR)
  try:
    yield
  finally:
    logger.setLevel(level)


class _DropMessage(logging.Filter):
  """Drops the records whose message starts with `prefix`."""

  def __init__(self, prefix):
    super().__init__()
    self.prefix = prefix

  def filter(self, record):
    return not record.getMessage().startswith(self.prefix)


@contextlib.contextmanager
def _keep_sigterm_handler():
  """Puts back a Python SIGTERM handler that `ray.init` replaces with `sys.exit`.

  `ray.init` in the main thread installs a SIGTERM handler raising SystemExit, which would
  silently replace the driver's own (the audit's raises a KeyboardInterrupt subclass). Only a
  handler set from Python is put back; with the default disposition Ray's handler stays (it lets
  Ray's atexit hook shut a local Ray down).
  """
  handler = signal.getsignal(signal.SIGTERM)
  try:
    yield
  finally:
    if (
      callable(handler)
      and threading.current_thread() is threading.main_thread()
      and signal.getsignal(signal.SIGTERM) is not handler
    ):
      signal.signal(signal.SIGTERM, handler)


def bounded_init(ray, timeout_s, **kwargs):
  """`ray.init(**kwargs)` in a daemon thread, waited for at most `timeout_s` seconds.

  `ray.init` on a port that is open but is no Ray cluster (or one that does not answer) retries
  for ~10 minutes; the thread is abandoned after `timeout_s`. Ray sets no SIGTERM
  handler from a thread (its warning saying so is dropped).

  Raises:
    TimeoutError: after `timeout_s` seconds; whatever `ray.init` raised.
  """
  box = {}

  def connect():
    try:
      ray.init(**kwargs)
    except BaseException as e:
      box["error"] = e

  logger = logging.getLogger("ray._private.worker")
  drop = _DropMessage("SIGTERM handler is not set")
  logger.addFilter(drop)
  try:
    thread = threading.Thread(target=connect, daemon=True, name="tf_forget-ray-init")
    thread.start()
    thread.join(timeout_s)
  finally:
    logger.removeFilter(drop)
  if thread.is_alive():
    raise TimeoutError(f"ray.init did not return within {timeout_s:g} s")
  if "error" in box:
    raise box["error"]


def _ensure_local_token():
  """Makes sure a local Ray finds an auth token without writing to $HOME.

  A local Ray 2.60 enables token authentication and, when no token is configured, writes one to
  ~/.ray/auth_token, which fails where $HOME is read-only (Bazel's test sandbox). If no token is
  configured (RAY_AUTH_MODE, RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH unset, no ~/.ray/auth_token),
  a random token is written to a private temporary file, and RAY_AUTH_TOKEN_PATH points to it
  for the rest of this process (every local Ray it starts uses the same token: Ray caches it).
  """
  if any(os.environ.get(name) for name in _AUTH_VARS):
    return
  if os.path.isfile(os.path.join(os.path.expanduser("~"), ".ray", "auth_token")):
    return
  directory = tempfile.mkdtemp(prefix="ray_token_")
  atexit.register(shutil.rmtree, directory, ignore_errors=True)
  path = os.path.join(directory, "auth_token")
  with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f:
    f.write(secrets.token_hex(32))
  os.environ["RAY_AUTH_TOKEN_PATH"] = path


def _import_ray():
  try:
    import ray
  except ImportError as e:
    raise executor_api.ExecutorError(INSTALL) from e
  return ray


def project_paths():
  """The directories the driver imports from that a local Ray worker would not know.

  The root of this checkout (the directory holding `tf_forget/`), then the driver's `sys.path`
  entries that are directories outside the Python installation (sys.prefix, base_prefix),
  except those a worker inherits (the working directory and the PYTHONPATH entries) and
  package directories (holding `__init__.py`): Python puts a script's own directory first on
  `sys.path` (`eval/` for `eval/audit.py` under `bazel run`), and as a worker's PYTHONPATH it
  could shadow the standard library (a module there named like a standard one hides it, and
  the worker's interpreter cannot start).
  """
  root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
  prefixes = tuple(
    os.path.realpath(p) + os.sep for p in {sys.prefix, sys.base_prefix, sys.exec_prefix}
  )
  inherited = {
    os.path.abspath(p or os.curdir) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
  }
  inherited.add(os.path.abspath(os.curdir))
  paths = []
  for entry in [root, *sys.path]:
    path = os.path.abspath(entry or os.curdir)
    if (
      path not in inherited
      and os.path.isdir(path)
      and not os.path.exists(os.path.join(path, "__init__.py"))
      and not (os.path.realpath(path) + os.sep).startswith(prefixes)
    ):
      paths.append(path)
  return list(dict.fromkeys(paths))


class RayExecutor(scheduler.PooledExecutor):
  """Runs tasks as Ray core tasks; Ray retries the tasks whose worker died."""

  name = "ray"

  def __init__(
    self,
    address=None,
    max_retries=2,
    env=None,
    num_cpus=None,
    runtime_env=None,
    connect_timeout_s=CONNECT_TIMEOUT_S,
  ):
    """A Ray executor (Ray starts or is connected to on the first `run` / `describe`).

    Args:
      address: None to start a local Ray; "auto", "host:port" or "ray://host:port" for a
        running cluster (checked with `address.check_address` before `ray.init`).
      max_retries: how many times Ray reruns a task whose worker died.
      env: {name: value} environment variables of the workers.
      num_cpus: CPUs of a local Ray (default: all); not allowed with `address`.
      runtime_env: a Ray runtime_env dict merged with ours (py_modules, working_dir, ...).
      connect_timeout_s: seconds `ray.init` may take to connect to a running cluster.

    Raises:
      ExecutorError: bad arguments.
    """
    super().__init__(max_retries)
    if address is not None and (not isinstance(address, str) or not address):
      raise executor_api.ExecutorError(
        f"ray address must be 'auto' or 'ray://host:port', got {address!r}"
      )
    if address is not None and num_cpus is not None:
      raise executor_api.ExecutorError("num_cpus is for a local Ray only (address=None)")
    if num_cpus is not None and (
      isinstance(num_cpus, bool) or not isinstance(num_cpus, int) or num_cpus < 1
    ):
      raise executor_api.ExecutorError(f"ray num_cpus must be an integer >= 1, got {num_cpus!r}")
    if (
      isinstance(connect_timeout_s, bool)
      or not isinstance(connect_timeout_s, (int, float))
      or not connect_timeout_s > 0
    ):
      raise executor_api.ExecutorError(
        f"connect_timeout_s must be a number > 0, got {connect_timeout_s!r}"
      )
    for name, value in (("env", env), ("runtime_env", runtime_env)):
      if value is not None and not isinstance(value, dict):
        raise executor_api.ExecutorError(f"{name} must be a dict, got {value!r:.100}")
    self.address = address
    self.num_cpus = num_cpus
    self.connect_timeout_s = connect_timeout_s
    self._env = {str(k): str(v) for k, v in (env or {}).items()}
    self._user_runtime_env = dict(runtime_env or {})
    self._ray = None
    self._remote = None
    self._owned = False
    self._temp_dir = None
    self._keys = {}  # ObjectRef -> task key
    self._task_options = {}

  def runtime_env(self):
    """The runtime_env given to `ray.init`: the argument's, plus env vars and local PYTHONPATH."""
    runtime_env = dict(self._user_runtime_env)
    env_vars = dict(runtime_env.get("env_vars") or {})
    env_vars.update(self._env)
    paths = project_paths() if self.address is None else []
    if paths:
      inherited = env_vars.get("PYTHONPATH") or os.environ.get("PYTHONPATH")
      env_vars["PYTHONPATH"] = os.pathsep.join(paths + ([inherited] if inherited else []))
    if env_vars:
      runtime_env["env_vars"] = env_vars
    return runtime_env

  def _connect(self):
    if self._ray is not None:
      return self._ray
    ray = _import_ray()
    options = dict(
      logging_level=logging.WARNING, log_to_driver=True, runtime_env=self.runtime_env() or None
    )
    try:
      if ray.is_initialized():
        self._owned = None  # someone else's connection: used, never shut down; our runtime_env
        self._task_options["runtime_env"] = options["runtime_env"]  # goes with each task
      elif self.address is None:
        self._temp_dir = tempfile.mkdtemp(
          prefix="ray_", dir="/tmp" if os.path.isdir("/tmp") else None
        )
        _ensure_local_token()
        with _quiet(_AUTH_LOGGER), _keep_sigterm_handler():
          ray.init(
            address="local",
            num_cpus=self.num_cpus,
            include_dashboard=False,
            _temp_dir=self._temp_dir,
            **options,
          )
        self._owned = True
      else:
        address_lib.check_address(self.name, self.address)
        bounded_init(ray, self.connect_timeout_s, address=self.address, **options)
        self._owned = False
    except executor_api.ExecutorError:
      raise
    except Exception as e:
      self._cleanup_temp_dir()
      where = self.address or "a local Ray"
      raise executor_api.ExecutorError(
        f"cannot start or connect to {where}: {errors.one_line(e, 200)}"
      )
    self._ray = ray
    self._remote = ray.remote(worker.envelope)
    return ray

  def _resources(self):
    resources = self._connect().cluster_resources()
    return {"CPU": float(resources.get("CPU", 0)), "GPU": float(resources.get("GPU", 0))}

  @property
  def workers(self):
    """CPUs of the cluster: how many one-CPU tasks run at once (chunking of stages)."""
    return max(1, int(self._resources()["CPU"]))

  @property
  def num_gpus(self):
    """GPUs of the cluster: a TensorFlow task asks for one where there are any."""
    return self._resources()["GPU"]

  def describe(self):
    resources = self._resources()
    try:
      where = self._ray.get_runtime_context().gcs_address
    except Exception:
      where = None
    where = where or self.address or "local"
    if self.address is None:
      where += " (local)"
    return f"ray at {where}, {resources['CPU']:g} CPUs, {resources['GPU']:g} GPUs"

  def _capacity(self):
    return self._resources()

  def _need(self, task):
    return {"CPU": float(task.num_cpus), "GPU": float(task.num_gpus)}

  def _submit(self, task):
    options = dict(
      num_cpus=task.num_cpus,
      num_gpus=task.num_gpus,
      max_retries=self.max_retries,
      retry_exceptions=False,
      name=task.key,
      **self._task_options,
    )
    ref = self._remote.options(**options).remote(task.key, task.fn, dict(task.kwargs))
    self._keys[ref] = task.key
    return ref

  def _wait(self, handles):
    ray = self._ray
    ready, _ = ray.wait(handles, num_returns=1)
    lost = tuple(
      getattr(ray.exceptions, name) for name in _LOST_ERRORS if hasattr(ray.exceptions, name)
    )
    outcomes = []
    for ref in ready:
      key = self._keys.pop(ref, "?")
      try:
        outcomes.append((ref, scheduler.from_envelope(ray.get(ref))))
      except lost:
        outcomes.append((ref, scheduler.Outcome(scheduler.EXHAUSTED)))
      except ray.exceptions.RayError as e:
        message = errors.one_line(_ANSI.sub("", str(e)))
        error = executor_api.task_error(key, type(e).__name__, message)
        outcomes.append((ref, scheduler.Outcome(scheduler.FAILED, error=error)))
    return outcomes

  def _abort(self, handles):
    for ref in handles:
      try:
        self._ray.cancel(ref, force=True)
      except Exception:
        pass

  def _cleanup_temp_dir(self):
    if self._temp_dir is not None:
      shutil.rmtree(self._temp_dir, ignore_errors=True)
      self._temp_dir = None

  def close(self):
    """Shuts a local Ray down, or disconnects from a cluster (not one someone else connected)."""
    ray, self._ray = self._ray, None
    self._task_options = {}
    if ray is not None and self._owned is not None:
      ray.shutdown()
    self._cleanup_temp_dir()
