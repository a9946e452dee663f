"""The presets' optimizer and LR schedule (tf_forget/train/schedule.py), and `Preset.to_json`.

Warm-up convention (schedule.py docstring, torchprune's `WarmupLR`): the LR of optimizer step s
(0-based) is piecewise(s) · min(s / W, 1), so step 0 has LR 0 and step W the nominal LR.
"""

import dataclasses
import hashlib
import json

import numpy as np
import pytest

from tf_forget.compat import keras2
from tf_forget.train import presets
from tf_forget.train import schedule

keras = keras2.keras()

# 100 steps, LR 0.2, ×0.1 at 50% and 75% (steps 50 and 75), warm-up over 10 steps.
WARM = presets.Preset(
  name="t",
  dataset="digits",
  model="small_cnn",
  steps=100,
  batch_size=4,
  learning_rate=0.2,
  lr_boundaries=(0.5, 0.75),
  lr_decay=0.1,
  warmup_steps=10,
)

# `to_json` keys of a preset with `nesterov` / `warmup_steps` at their defaults: the keys the
# existing members' config hashes contain.
OLD_KEYS = {
  "name",
  "dataset",
  "model",
  "steps",
  "batch_size",
  "learning_rate",
  "momentum",
  "lr_boundaries",
  "lr_decay",
  "weight_decay",
  "augmentation",
  "shift_pixels",
  "prune_begin",
  "prune_end",
  "prune_frequency",
  "sparsities",
  "members",
  "checkpoint_every",
  "model_options",
  "image_size",
  "pruning_schedule",
}
# sha256 of canonical JSON (sorted keys, no spaces; as `hashing.sha256_json`) of each existing
# preset's `to_json()`: the members' config hashes contain exactly these dicts, so they must not
# change.
OLD_HASHES = {
  "celeb_a_paper": "1e5aaf5042aafed9b99f2527077e995b1237602bc0895a5eb07626ecfa9f2675",
  "cifar10_paper": "eaa3566b950cd17483bfcf58ce994a4d0236bba76a7e03a76ff282d3e1cc1e56",
  "imagenet_paper": "bc7af0dd7829ed010240dbddf1178cc9b04627a7c787488e257bf7a1af463e74",
  "cifar_resnet_002": "40f782b243398ee0d369acb8ec3044cd57c96c8e60d61ab0c5ba490959b0bf74",
  "digits": "fc1020b21c0be78a7567acde128a0fda71aa23aa91f2a97301cb0b71d9d22837",
  "tiny": "4a83eb69a8a09cee8e9c6d9f56b260c6430b7e806b65424e33e184c5ff271d88",
}


def _lr(sched, step):
  return float(sched(np.int64(step)))


def _old_schedule(preset):
  """The plain Keras schedule the existing presets' members were trained with."""
  boundaries = preset.lr_boundary_steps()
  values = [preset.learning_rate * preset.lr_decay**i for i in range(len(boundaries) + 1)]
  return keras.optimizers.schedules.PiecewiseConstantDecay(boundaries, values)


def test_warmup_ramps_linearly_from_zero():
  sched = schedule.learning_rate(WARM)
  assert _lr(sched, 0) == 0.0  # step 0: LR 0 (torchprune's first batch)
  assert _lr(sched, 1) == pytest.approx(0.02, rel=1e-6)  # lr · 1 / 10
  assert _lr(sched, 5) == pytest.approx(0.1, rel=1e-6)
  assert _lr(sched, 9) == pytest.approx(0.18, rel=1e-6)
  assert _lr(sched, 10) == pytest.approx(0.2, rel=1e-6)  # nominal LR at the end of warm-up
  assert _lr(sched, 11) == pytest.approx(0.2, rel=1e-6)


def test_decays_at_the_boundaries_after_warmup():
  sched = schedule.learning_rate(WARM)
  # PiecewiseConstantDecay: the boundary step keeps the old value, the next one decays.
  assert _lr(sched, 50) == pytest.approx(0.2, rel=1e-6)
  assert _lr(sched, 51) == pytest.approx(0.02, rel=1e-6)
  assert _lr(sched, 75) == pytest.approx(0.02, rel=1e-6)
  assert _lr(sched, 76) == pytest.approx(0.002, rel=1e-6)
  assert _lr(sched, 10_000) == pytest.approx(0.002, rel=1e-6)


def test_steps_override_moves_the_boundaries_not_the_warmup():
  sched = schedule.learning_rate(WARM, steps=200)
  assert sched.boundaries == [100, 150] and sched.warmup_steps == 10
  assert _lr(sched, 76) == pytest.approx(0.2, rel=1e-6)
  assert _lr(sched, 101) == pytest.approx(0.02, rel=1e-6)


@pytest.mark.parametrize("name", sorted(n for n in OLD_HASHES if presets.get(n).lr_boundaries))
def test_without_warmup_the_schedule_is_the_old_one(name):
  preset = presets.get(name)
  assert preset.warmup_steps == 0 and preset.nesterov
  new, old = schedule.learning_rate(preset), _old_schedule(preset)
  assert type(new) is type(old)
  assert new.get_config() == old.get_config()
  probe = sorted(
    {0, 1, preset.steps - 1, preset.steps}
    | {b + d for b in preset.lr_boundary_steps() for d in (-1, 0, 1)}
  )
  assert [_lr(new, s) for s in probe] == [_lr(old, s) for s in probe]


def test_no_boundaries_is_a_constant_lr():
  # lenet5_002 has no LR decay. `_old_schedule`'s PiecewiseConstantDecay([], [lr]) fails at its
  # first call, i.e. at the first training step, so no member can depend on it; the LR is a
  # constant.
  preset = presets.get("lenet5_002")
  with pytest.raises(IndexError):
    _old_schedule(preset)(np.int64(0))
  assert schedule.learning_rate(preset) == 0.01
  warm = schedule.learning_rate(dataclasses.replace(preset, warmup_steps=4))
  assert [_lr(warm, s) for s in (0, 2, 4, 10**6)] == pytest.approx([0, 0.005, 0.01, 0.01])


def _schedule_config(opt):
  return opt.get_config()["learning_rate"]


def test_optimizer_flags():
  opt = schedule.optimizer(WARM)
  assert opt.nesterov is True and float(opt.momentum) == pytest.approx(0.9)
  assert _schedule_config(opt)["class_name"] == "WarmupPiecewiseConstant"
  plain = schedule.optimizer(
    dataclasses.replace(WARM, nesterov=False, momentum=0.8, warmup_steps=0)
  )
  assert plain.nesterov is False and float(plain.momentum) == pytest.approx(0.8)
  assert _schedule_config(plain)["class_name"] == "PiecewiseConstantDecay"


def test_old_presets_train_exactly_as_before():
  # Three SGD steps with a Keras SGD on `_old_schedule` and with schedule.optimizer: same weights.
  preset = dataclasses.replace(presets.get("tiny"), steps=4)
  rng = np.random.default_rng(0)
  x = rng.uniform(0, 255, (12, 4, 4, 1)).astype(np.float32)
  y = rng.integers(0, 3, 12)

  def train(make_optimizer):
    keras.utils.set_random_seed(1)
    model = keras.Sequential(
      [keras.Input((4, 4, 1)), keras.layers.Flatten(), keras.layers.Dense(3)]
    )
    model.compile(
      optimizer=make_optimizer(), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    )
    model.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)
    return model.get_weights()

  old = train(
    lambda: keras.optimizers.SGD(
      learning_rate=_old_schedule(preset), momentum=preset.momentum, nesterov=True
    )
  )
  new = train(lambda: schedule.optimizer(preset))
  assert all(np.array_equal(a, b) for a, b in zip(old, new))


def test_warmup_changes_training_and_first_step_is_a_no_op():
  preset = dataclasses.replace(presets.get("tiny"), warmup_steps=3)
  x = np.random.default_rng(0).uniform(0, 255, (4, 4, 4, 1)).astype(np.float32)
  y = np.array([0, 1, 2, 0])
  keras.utils.set_random_seed(1)
  model = keras.Sequential([keras.Input((4, 4, 1)), keras.layers.Flatten(), keras.layers.Dense(3)])
  before = model.get_weights()
  model.compile(
    optimizer=schedule.optimizer(preset),
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
  )
  model.fit(x, y, batch_size=4, epochs=1, verbose=0)  # one step, at LR 0
  assert all(np.array_equal(a, b) for a, b in zip(before, model.get_weights()))
  model.fit(x, y, batch_size=4, epochs=1, verbose=0)  # step 1, at LR 0.05 / 3
  assert not all(np.array_equal(a, b) for a, b in zip(before, model.get_weights()))


def test_schedule_serializes():
  sched = schedule.learning_rate(WARM)
  config = sched.get_config()
  assert config == {
    "boundaries": [50, 75],
    "values": pytest.approx([0.2, 0.02, 0.002]),
    "warmup_steps": 10,
    "name": None,
  }
  again = keras.optimizers.schedules.deserialize(
    json.loads(json.dumps(keras.optimizers.schedules.serialize(sched)))
  )
  assert isinstance(again, schedule.WarmupPiecewiseConstant)
  assert [_lr(again, s) for s in (0, 3, 10, 60, 80)] == [_lr(sched, s) for s in (0, 3, 10, 60, 80)]
  opt = keras.optimizers.deserialize(
    json.loads(json.dumps(keras.optimizers.serialize(schedule.optimizer(WARM))))
  )
  assert _schedule_config(opt) == _schedule_config(schedule.optimizer(WARM))
  assert opt.nesterov is True


@pytest.mark.parametrize("kwargs", [dict(warmup_steps=0), dict(values=[0.1])])
def test_bad_schedule_raises(kwargs):
  args = dict(boundaries=[5], values=[0.1, 0.01], warmup_steps=2)
  args.update(kwargs)
  with pytest.raises(ValueError):
    schedule.WarmupPiecewiseConstant(**args)


@pytest.mark.parametrize("name", sorted(OLD_HASHES))
def test_existing_presets_to_json_unchanged(name):
  d = presets.get(name).to_json()
  assert set(d) == OLD_KEYS  # no nesterov / warmup_steps (nor mixed_precision) at defaults
  text = json.dumps(
    json.loads(json.dumps(d)), sort_keys=True, separators=(",", ":"), allow_nan=True
  )
  assert hashlib.sha256(text.encode("utf-8")).hexdigest() == OLD_HASHES[name]


def test_new_fields_recorded_only_off_default():
  # lenet5_002 keeps its lowest-validation-loss epoch (002 §6.1): its config says so, so members
  # trained without the selection are not current for it.
  lenet = presets.get("lenet5_002").to_json()
  assert set(lenet) == OLD_KEYS | {"validation_every"} and lenet["validation_every"] == 10
  assert (lenet["steps"], lenet["checkpoint_every"]) == (30 * 421, 421)
  d = presets.get("tiny", nesterov=False, warmup_steps=5).to_json()
  assert d["nesterov"] is False and d["warmup_steps"] == 5
  assert "nesterov" not in presets.get("tiny", nesterov=True).to_json()
  assert "warmup_steps" not in presets.get("tiny", warmup_steps=0).to_json()


@pytest.mark.parametrize("warmup", [-1, 61])
def test_warmup_must_fit_in_the_steps(warmup):
  with pytest.raises(presets.PresetError, match="warmup_steps"):
    presets.get("tiny", warmup_steps=warmup)
