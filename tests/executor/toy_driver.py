"""A driver process for the lifetime tests: a LocalExecutor running long toy tasks.

  python -m tests.executor.toy_driver <marker_dir> <mode>

Runs one quick task (so that the pool and multiprocessing's resource tracker exist), writes
<marker_dir>/driver.json ({"pid", "tracker_pid", "state_dir"}), then the stage "toys": two quick
tasks (cost 3, first) and two that sleep 10 minutes ("long 0", "long 1") on three workers (one
idle when they run); each task writes its
worker's pid to <marker_dir>/started-<name>. Modes:
  * "plain": nothing else (the test kills the driver);
  * "thread": `run` is called from a thread that is not the main thread;
  * "handler": a SIGTERM handler raises `Terminated` (a KeyboardInterrupt subclass), as the
    audit's does.
On a KeyboardInterrupt the driver prints "interrupted during <stage>, <done> of <total> units
done" and "state dir gone: <bool>" and exits with 3.
"""

import json
from multiprocessing import resource_tracker
import os
import signal
import sys
import threading

from tf_forget import executor

TOY = "tests.executor.toy_tasks"


class Terminated(KeyboardInterrupt):
  """SIGTERM, as the audit's handler raises it."""


def _on_sigterm(signum, frame):
  del signum, frame
  raise Terminated()


def _tasks(marker_dir):
  quick = [
    executor.Task(
      f"quick {i}", f"{TOY}:started", {"marker_dir": marker_dir, "name": f"quick {i}"}, cost=3
    )
    for i in range(2)
  ]
  long = [
    executor.Task(
      f"long {i}", f"{TOY}:started", {"marker_dir": marker_dir, "name": f"long {i}", "seconds": 600}
    )
    for i in range(2)
  ]
  return quick + long


def _drive(ex, marker_dir):
  ex.run([executor.Task("warm", f"{TOY}:square", {"x": 1})], stage="warm", log=lambda _: None)
  info = {
    "pid": os.getpid(),
    "state_dir": ex._state_dir,
    "tracker_pid": resource_tracker._resource_tracker._pid,
  }
  with open(os.path.join(marker_dir, "driver.json.tmp"), "w", encoding="utf-8") as f:
    json.dump(info, f)
  os.replace(os.path.join(marker_dir, "driver.json.tmp"), os.path.join(marker_dir, "driver.json"))
  try:
    ex.run(_tasks(marker_dir), stage="toys", log=lambda _: None)
  except KeyboardInterrupt:
    stage, done, total = ex.progress()
    print(f"interrupted during {stage}, {done} of {total} units done", flush=True)
    print(f"state dir gone: {not os.path.exists(info['state_dir'])}", flush=True)
    sys.exit(3)


def main(marker_dir, mode):
  if mode == "handler":
    signal.signal(signal.SIGTERM, _on_sigterm)
  with executor.LocalExecutor(workers=3, max_retries=0) as ex:
    if mode == "thread":
      thread = threading.Thread(target=_drive, args=(ex, marker_dir))
      thread.start()
      thread.join()
    else:
      _drive(ex, marker_dir)


if __name__ == "__main__":
  main(*sys.argv[1:])
