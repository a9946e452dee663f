"""A task for the fault-injection tests: `tf_forget.pipeline.tasks.train_member`, recording its
process id.

Each attempt writes `<pid_dir>/<pid>.pid` before it starts, so a test can kill the worker
that is training (and count the attempts) from outside, as a lost machine would.
"""

import os

from tf_forget.pipeline import tasks


def train_member_recording_pid(pid_dir, **kwargs):
  """Writes this worker's pid into `pid_dir`, then trains the member (`tasks.train_member`)."""
  with open(os.path.join(pid_dir, f"{os.getpid()}.pid"), "w") as f:
    f.write(str(os.getpid()))
  return tasks.train_member(**kwargs)
