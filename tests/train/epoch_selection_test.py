"""A parent keeps the epoch with the lowest validation loss, and a resumed run chooses the same."""

import os

import numpy as np
import pytest

from tf_forget.data import registry
from tf_forget.train import epoch_selection
from tf_forget.train import member as member_lib
from tf_forget.train import member_config
from tf_forget.train import member_files
from tf_forget.train import presets


def _config(**overrides):
  overrides.setdefault("validation_every", 10)
  return member_config.MemberConfig(
    dataset="digits",
    model="small_cnn",
    variant="dense",
    k=0,
    preset=presets.get("tiny", **overrides),
  )


def _val_loss(directory):
  dataset = registry.get("digits")
  _, val, _, _ = epoch_selection.holdout(dataset, 10)
  model = member_files.load_model(directory)
  return epoch_selection.data_loss(model, epoch_selection.batches(dataset, val))


def test_holdout_counts_and_records():
  dataset = registry.get("digits")
  train, val, n_train, n_val = epoch_selection.holdout(dataset, 10)
  assert (n_train, n_val) == (1167, 130)  # 1,297 train records: positions 0, 10, ..., 1290
  assert sum(1 for _ in val) == n_val and sum(1 for _ in train) == n_train
  labels = np.concatenate([y for _, y in epoch_selection.batches(dataset, val)])
  np.testing.assert_array_equal(labels, dataset.load("train").labels[::10])


def test_preset_field_is_recorded_only_when_set():
  assert "validation_every" not in presets.get("tiny").to_json()
  assert presets.get("tiny", validation_every=10).to_json()["validation_every"] == 10
  assert presets.get("lenet5_002").validation_every == 10
  with pytest.raises(presets.PresetError, match="validation_every"):
    presets.get("tiny", validation_every=1)


def test_dense_member_keeps_the_lowest_validation_loss_chunk(tmp_path):
  meta = member_lib.train_member(_config(steps=80), str(tmp_path))
  sel = meta["epoch_selection"]
  assert len(sel["validation_data_loss"]) == 4  # 80 steps in chunks of 20
  assert sel["best_epoch"] == int(np.argmin(sel["validation_data_loss"])) + 1
  assert (sel["train_examples"], sel["validation_examples"]) == (1167, 130)
  # The saved model is the chosen chunk's weights: its loss on the held-out records is the min.
  assert _val_loss(str(tmp_path)) == pytest.approx(min(sel["validation_data_loss"]), abs=1e-5)
  assert sorted(os.listdir(tmp_path)) == ["metadata.json", "model.keras"]


def test_resumed_selection_equals_uninterrupted(tmp_path):
  full = member_lib.train_member(_config(steps=80), str(tmp_path / "full"))
  cut = str(tmp_path / "cut")
  assert member_lib.train_member(_config(steps=80), cut, stop_after_chunks=2) is None
  resumed = member_lib.train_member(_config(steps=80), cut)
  assert resumed["resumed_from_step"] == 40
  assert resumed["epoch_selection"] == full["epoch_selection"]
  for a, b in zip(
    member_files.load_model(str(tmp_path / "full")).get_weights(),
    member_files.load_model(cut).get_weights(),
  ):
    np.testing.assert_array_equal(a, b)


def _tiny_model(scale):
  """A linear digits model whose loss grows with `scale` (weights = scale × a fixed pattern)."""
  from tf_forget.compat import keras2

  keras = keras2.keras()
  model = keras.Sequential([keras.layers.Flatten(input_shape=(8, 8, 1)), keras.layers.Dense(10)])
  model.set_weights(
    [
      np.full((64, 10), scale, np.float32) * np.eye(64, 10, dtype=np.float32),
      np.zeros(10, np.float32),
    ]
  )
  return model


def test_a_kill_between_the_checkpoint_and_its_score_is_caught_up(tmp_path):
  dataset = registry.get("digits")
  _, val, _, _ = epoch_selection.holdout(dataset, 10)
  batches = epoch_selection.batches(dataset, val)
  losses = {s: epoch_selection.data_loss(_tiny_model(s), batches) for s in (0.0, 0.01, 1.0)}
  assert losses[0.0] == pytest.approx(np.log(10))  # uniform logits: log 10 by hand
  first = epoch_selection.ResumableBestEpoch(batches, str(tmp_path))
  first.score(_tiny_model(0.01), 1)
  first.score(_tiny_model(1.0), 2)  # worse: the record keeps epoch 1
  # Chunk 3 was checkpointed, then the process died before scoring it.
  resumed = epoch_selection.ResumableBestEpoch(batches, str(tmp_path))
  assert resumed.best_epoch == 1 and len(resumed.losses) == 2
  best_model = _tiny_model(0.0)
  resumed.catch_up(best_model, 3)
  assert resumed.losses == pytest.approx([losses[0.01], losses[1.0], losses[0.0]])
  assert resumed.best_epoch == (3 if losses[0.0] < losses[0.01] else 1)
  # Only the record's weights file is left, and restoring it gives its loss back.
  files = sorted(f for f in os.listdir(tmp_path) if f.endswith(".h5"))
  assert files == [f"best_epoch_{resumed.best_epoch}.h5"]
  target = _tiny_model(0.5)
  record = resumed.restore_best(target)
  assert record["best_epoch"] == resumed.best_epoch
  assert epoch_selection.data_loss(target, batches) == pytest.approx(min(resumed.losses))
