"""A module a pool's workers import as they start (`LocalExecutor.start`): each notes its pid
in a file of the directory `TF_FORGET_PRELOAD_DIR` names."""

import os

from tests.executor import toy_tasks

toy_tasks.touch(os.path.join(os.environ["TF_FORGET_PRELOAD_DIR"], f"preloaded-{os.getpid()}"))
