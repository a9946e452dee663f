"""Members trained on a process's shared step are byte for byte the members trained alone; a
member's steps run ten a call with the weights of one a call."""

import dataclasses
import os
import zipfile

import pytest

from tf_forget.train import member as member_lib
from tf_forget.train import member_config
from tf_forget.train import member_files
from tf_forget.train import presets
from tf_forget.train import shared_step


def _config(variant, k):
  return member_config.MemberConfig(
    dataset="digits", model="small_cnn", variant=variant, k=k, preset=presets.get("tiny")
  )


def _contents(directory, resumed=False):
  """The member's model.keras entries (but its metadata.json, which holds the save date) and
  its metadata.json (but the wall time, the sha256 of those dated bytes and, for a `resumed`
  member, the step it resumed from)."""
  with zipfile.ZipFile(os.path.join(directory, member_files.MODEL_FILE)) as archive:
    files = {n: archive.read(n) for n in archive.namelist() if n != "metadata.json"}
  meta = dict(member_files.read_metadata(directory))
  for name in ("wall_time_s", "model_sha256") + (("resumed_from_step",) if resumed else ()):
    meta.pop(name)
  return files, meta


@pytest.fixture()
def adopted(monkeypatch):
  """The results of `Trainer.adopt`, in call order; the process starts without a trainer."""
  shared_step.clear()
  results = []
  adopt = shared_step.Trainer.adopt

  def counting(self, model, optimizer):
    results.append(adopt(self, model, optimizer))
    return results[-1]

  monkeypatch.setattr(shared_step.Trainer, "adopt", counting)
  yield results
  shared_step.clear()


def test_members_on_one_step_are_the_members_trained_alone(tmp_path, adopted):
  members = [("prune_0.5", 0), ("prune_0.5", 1), ("dense", 0), ("dense", 1)]
  traces = []
  for variant, k in members:
    member_lib.train_member(_config(variant, k), str(tmp_path / "shared" / f"{variant}_{k}"))
    traces.append(
      shared_step._CACHE["trainer"].model.train_function.experimental_get_tracing_count()
    )
  assert adopted == [True] * len(members)
  # The second member of a configuration traces nothing: it runs the first one's step.
  assert traces[1] == traces[0] and traces[3] == traces[2]
  for variant, k in members:
    alone = str(tmp_path / "alone" / f"{variant}_{k}")
    member_lib.train_member(_config(variant, k), alone, share_step=False)
    assert _contents(str(tmp_path / "shared" / f"{variant}_{k}")) == _contents(alone)


def test_a_member_resumed_on_the_shared_step_is_the_member_trained_alone(tmp_path, adopted):
  cut = str(tmp_path / "cut")
  member_lib.train_member(_config("prune_0.5", 0), str(tmp_path / "first"))
  assert member_lib.train_member(_config("prune_0.5", 1), cut, stop_after_chunks=1) is None
  member_lib.train_member(_config("prune_0.5", 1), cut)
  assert adopted == [True, True, True]
  alone = str(tmp_path / "alone")
  member_lib.train_member(_config("prune_0.5", 1), alone, share_step=False)
  assert member_files.read_metadata(cut)["resumed_from_step"] == 20
  assert _contents(cut, resumed=True) == _contents(alone, resumed=True)


def test_key_is_the_identity_without_k_and_seed():
  assert shared_step.key(_config("dense", 0)) == shared_step.key(_config("dense", 3))
  assert shared_step.key(_config("dense", 0)) != shared_step.key(_config("prune_0.5", 0))


@pytest.mark.parametrize("variant", ["dense", "prune_0.5"])
def test_a_member_runs_several_steps_a_call_with_the_weights_of_one(tmp_path, adopted, variant):
  # 15 steps a chunk: the last call of each is cut to 5 (Keras truncates it at the epoch end);
  # the pruning masks are updated every 10 steps of `tiny` (tfmot counts the steps in the graph).
  preset = presets.get("tiny", steps=60, checkpoint_every=15)
  config = dataclasses.replace(_config(variant, 0), preset=preset)
  member_lib.train_member(config, str(tmp_path / "ten"))
  trainer = shared_step._CACHE["trainer"].model
  assert int(trainer._steps_per_execution.numpy()) == member_lib.STEPS_PER_EXECUTION > 1
  shared_step.clear()
  with pytest.MonkeyPatch.context() as patch:
    patch.setattr(member_lib, "STEPS_PER_EXECUTION", 1)
    member_lib.train_member(config, str(tmp_path / "one"))
    assert int(shared_step._CACHE["trainer"].model._steps_per_execution.numpy()) == 1
  assert _contents(str(tmp_path / "ten")) == _contents(str(tmp_path / "one"))
