"""A full disk or read-only directory at the first checkpoint: one line, exit 1, then resume.

Runs the train_population command in-process (its absl flags, `tests/command_main.py`)
with `tf.train.CheckpointManager.save` patched to fail the way a full disk does (OSError ENOSPC, or
TensorFlow's ResourceExhaustedError); CI runs as root, so chmod cannot make a directory
read-only here: PermissionError is injected the same way. After "freeing space" the same
command finishes the member.
"""

import errno
import json

import pytest
import tensorflow as tf

from tests import binary_main
from tests import command_main
from tf_forget.commands import train_population_command

FLAGS = dict(preset="tiny", variants=["dense"], members=1)
MAIN = command_main.main_of(train_population_command)


def _main(run_dir):
  return binary_main.run_main(MAIN, "train_population", run_dir=str(run_dir), **FLAGS)


@pytest.mark.parametrize(
  "error, reason",
  [
    (OSError(errno.ENOSPC, "No space left on device"), "No space left on device"),
    (
      tf.errors.ResourceExhaustedError(None, None, "No space left on device"),
      "No space left on device",
    ),
    (PermissionError(errno.EACCES, "Permission denied"), "Permission denied"),
  ],
)
def test_first_checkpoint_fails_then_resume_finishes(tmp_path, monkeypatch, error, reason):
  run = tmp_path / "run"
  calls = []

  def full(self, *args, **kwargs):
    calls.append(kwargs.get("checkpoint_number"))
    raise error

  with monkeypatch.context() as m:
    m.setattr(tf.train.CheckpointManager, "save", full)
    code = _main(run)
  assert calls == [1]  # the first checkpoint
  ckpt = run / "members" / "dense" / "0" / "checkpoints"
  assert code == f"train_population: error: cannot write {ckpt}: {reason}"
  assert not (run / "members" / "dense" / "0" / "metadata.json").exists()
  assert _main(run) == 0
  meta = json.loads((run / "members" / "dense" / "0" / "metadata.json").read_text())
  assert meta["steps"] == 60 and not ckpt.exists()


def test_a_full_disk_when_saving_the_model_is_one_line(tmp_path, monkeypatch):
  from tf_forget.compat import keras2

  def full(self, *args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")

  with monkeypatch.context() as m:
    m.setattr(keras2.keras().Model, "save", full)
    code = _main(tmp_path / "run")
  assert code.startswith("train_population: error: cannot write ")
  assert code.endswith("model.keras: No space left on device") and "\n" not in code
  assert _main(tmp_path / "run") == 0
