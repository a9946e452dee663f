"""Robust training (003 §6, appendix E.1; docs/spec.md §6.8): a corruption drawn per training
image."""

import dataclasses
import hashlib
import json

from absl.testing import flagsaver
import numpy as np
import pytest

from tests import audit_main
from tests import import_check
from tf_forget.config import tree
from tf_forget.corruptions import robust_training
from tf_forget.data import registry
from tf_forget.pipeline import audit_plan
from tf_forget.pipeline import run_identity
from tf_forget.train import inputs
from tf_forget.train import presets

ROBUST = robust_training.ROBUST_TRAIN_CORRUPTIONS
# sha256 of json.dumps(to_json(), sort_keys=True), computed with presets.py before the robust
# training fields existed: members trained before keep their config hashes.
TO_JSON_SHA256 = {
  "digits": "fcd8bd160f6162e09bad01fcc5e7e8745987ad07dfb65942b7a71c15bc9c0492",
  "tiny": "5197e274a179677133367789ae45440e0c39e7cb64a38c3d8fff00cc402fe29c",
  "cifar10_paper": "0bfb2583883d6350a98fb1a89488e37726552f4afac9f653091077719fd1c2fc",
  "resnet20_003": "a04120d2c20de28626f0a0222e9b52aa4995bdda8434e86d793d51ad71bea13a",
}
CHI2_8DOF_P001 = 26.12  # chi-square critical value, 8 degrees of freedom, p = 0.001


def _robust(**overrides):
  return presets.get("tiny", train_corruptions=ROBUST, **overrides)


def _batches(preset, seed, start_step, count):
  stream = inputs.train_stream(registry.get("digits"), preset, seed, start_step=start_step)
  out = [(x.numpy(), y.numpy()) for x, y in stream.take(count)]
  del stream
  return out


def _assert_same(a, b):
  assert len(a) == len(b)
  for (xa, ya), (xb, yb) in zip(a, b):
    np.testing.assert_array_equal(xa, xb)
    np.testing.assert_array_equal(ya, yb)


def test_stream_is_deterministic_and_resumes():
  full = _batches(_robust(), 7, 0, 10)
  _assert_same(full, _batches(_robust(), 7, 0, 10))
  _assert_same(full[6:], _batches(_robust(), 7, 6, 4))
  other = _batches(_robust(), 8, 0, 1)
  assert not np.array_equal(full[0][0], other[0][0])


def _translations(image, pixels):
  """`image` [H, W, C] translated by every (dy, dx) in [-pixels, pixels]^2, zero-filled."""
  h, w = image.shape[:2]
  padded = np.pad(image, ((pixels, pixels), (pixels, pixels), (0, 0)))
  return [
    padded[dy : dy + h, dx : dx + w] for dy in range(2 * pixels + 1) for dx in range(2 * pixels + 1)
  ]


def test_stream_corrupts_each_image_with_its_drawn_corruption_before_augmenting():
  seed, count = 3, 4
  clean = _batches(presets.get("tiny", augmentation="none"), seed, 0, count)
  robust = _batches(_robust(augmentation="none"), seed, 0, count)
  plain_shift = _batches(presets.get("tiny"), seed, 0, count)
  robust_shift = _batches(_robust(), seed, 0, count)
  batch = presets.get("tiny").batch_size
  pixels = presets.get("tiny").shift_pixels
  drawn, changed = [], []
  for b in range(count):
    np.testing.assert_array_equal(clean[b][1], robust[b][1])  # the same shuffle
    for j in range(batch):
      position = b * batch + j
      index, _ = robust_training.draw(len(ROBUST), seed, position)
      drawn.append(index)
      image = clean[b][0][j].astype(np.uint8)
      expected = robust_training.corrupt(image, position, ROBUST, 3, seed)
      np.testing.assert_array_equal(robust[b][0][j], expected.astype(np.float32))
      changed.append(not np.array_equal(robust[b][0][j], clean[b][0][j]))
      if ROBUST[index] == "none":  # unchanged, and augmented exactly as the plain stream
        np.testing.assert_array_equal(robust[b][0][j], clean[b][0][j])
        np.testing.assert_array_equal(robust_shift[b][0][j], plain_shift[b][0][j])
      # Shifted by the plain stream's shift of this position *after* the corruption.
      shifts = [
        k
        for k, t in enumerate(_translations(clean[b][0][j], pixels))
        if np.array_equal(t, plain_shift[b][0][j])
      ]
      assert shifts
      moved = _translations(expected.astype(np.float32), pixels)
      assert any(np.array_equal(robust_shift[b][0][j], moved[k]) for k in shifts), position
  drawn, changed = np.asarray(drawn), np.asarray(changed)
  assert 0 < (drawn == 0).sum() < len(drawn) / 4
  assert changed[drawn != 0].mean() > 0.9  # the stream differs from the plain one


def test_draws_are_roughly_uniform_over_the_nine_options():
  for seed in (0, 1857119331):
    choices = [robust_training.draw(len(ROBUST), seed, p)[0] for p in range(900)]
    counts = np.bincount(choices, minlength=len(ROBUST))
    chi2 = float(((counts - 100.0) ** 2 / 100.0).sum())
    assert chi2 < CHI2_8DOF_P001, counts
  a = [robust_training.draw(9, 0, p) for p in range(50)]
  b = [robust_training.draw(9, 1, p) for p in range(50)]
  assert [x for x, _ in a] != [x for x, _ in b]
  assert len({int(s) for _, s in a}) == 50  # every image gets its own corruption seed


def test_none_leaves_images_unchanged_and_batches_do_not_matter():
  images = registry.get("digits").take("train", 24).images
  positions = np.arange(100, 124)
  np.testing.assert_array_equal(
    robust_training.corrupt_batch(images, positions, ("none",), 3, 5), images
  )
  batched = robust_training.corrupt_batch(images, positions, ROBUST, 3, 5)
  for i, position in enumerate(positions):
    np.testing.assert_array_equal(
      batched[i], robust_training.corrupt(images[i], position, ROBUST, 3, 5)
    )
  assert not np.array_equal(batched, images)


@pytest.mark.parametrize(
  "overrides, match",
  [
    (dict(train_corruptions=("none", "fog_of_war")), "unknown train corruption 'fog_of_war'"),
    (dict(train_corruptions=("snow", "snow")), "train corruption 'snow' is repeated"),
    (dict(train_corruptions=("snow",), train_corruption_severity=6), "severity must be"),
  ],
)
def test_bad_train_corruptions_are_one_line_preset_errors(overrides, match):
  with pytest.raises(presets.PresetError, match=match) as e:
    presets.get("tiny", **overrides)
  assert "\n" not in str(e.value) and "'tiny'" in str(e.value)


def test_the_corruption_side_imports_no_tensorflow():
  # The train stage imports it (tf_forget.train.inputs); it must stay pure numpy, and the
  # corruption kernels load only where a corruption is named or applied.
  foreign = import_check.foreign_modules(
    "from tf_forget.corruptions import robust_training", "tf_forget.corruptions"
  )
  assert foreign == "tf_forget.artifacts,tf_forget.artifacts.errors"
  foreign = import_check.foreign_modules(
    "from tf_forget.corruptions import robust_training\nrobust_training.check(['none', 'snow'], 3)",
    "tf_forget.corruptions",
  )
  assert foreign == (
    "tf_forget.artifacts,tf_forget.artifacts.errors,tf_forget.artifacts.names,"
    "tf_forget.artifacts.tflite_formats"
  )


def test_stream_rejects_unknown_corruptions_without_presets_get():
  preset = dataclasses.replace(presets.get("tiny"), train_corruptions=("blizzard",))
  with pytest.raises(robust_training.CorruptionError, match="unknown train corruption"):
    inputs.train_stream(registry.get("digits"), preset, 0)


def test_to_json_of_existing_presets_is_unchanged():
  for name in presets.names():
    d = presets.get(name).to_json()
    assert "train_corruptions" not in d and "train_corruption_severity" not in d, name
  for name, digest in TO_JSON_SHA256.items():
    text = json.dumps(presets.get(name).to_json(), sort_keys=True)
    assert hashlib.sha256(text.encode()).hexdigest() == digest, name
  d = _robust().to_json()
  assert d["train_corruptions"] == ROBUST and d["train_corruption_severity"] == 3


@pytest.mark.parametrize(
  "preset",
  [
    _robust(),
    _robust(train_corruption_severity=5),
    presets.get("tiny", train_corruption_severity=4),
    presets.get("digits"),
    presets.get("resnet20_003", train_corruptions=["none", "snow"]),
  ],
)
def test_preset_round_trips_through_json(preset):
  assert isinstance(preset.train_corruptions, tuple)
  restored = presets.Preset.from_json(json.loads(json.dumps(preset.to_json())))
  assert restored == preset and isinstance(restored.train_corruptions, tuple)


def test_audit_robust_training_sets_train_and_test_corruptions(tmp_path):
  config = tree.AuditConfig(
    out=str(tmp_path / "run"), population=tree.Population(robust_training=True)
  )
  p = audit_plan.plan(config, check_data=False)
  assert p.population.preset.train_corruptions == ROBUST
  assert p.population.preset.train_corruption_severity == 3
  assert p.corrupted == tuple(f"{c}@3" for c in robust_training.ROBUST_TEST_CORRUPTIONS)
  assert run_identity.audit_identity(p)["preset_params"]["train_corruptions"] == list(ROBUST)
  assert config.to_json()["population"]["robust_training"] is True
  given = audit_plan.plan(
    dataclasses.replace(config, robustness=tree.Robustness(corruptions=("fog",), severities=(2,))),
    check_data=False,
  )
  assert given.corrupted == ("fog@2",) and given.population.preset.train_corruptions == ROBUST
  plain_config = tree.AuditConfig(out=str(tmp_path / "plain"))
  plain = audit_plan.plan(plain_config, check_data=False)
  assert plain.population.preset.train_corruptions == ()
  assert plain_config.to_json()["population"]["robust_training"] is False
  assert "train_corruptions" not in run_identity.audit_identity(plain)["preset_params"]
  assert not (tmp_path / "run").exists()


def test_audit_flag_plans_the_test_distribution(tmp_path, capsys):
  out = tmp_path / "run"
  with flagsaver.flagsaver(plan=True, robust_training=True, dataset="digits", out=str(out)):
    assert audit_main.main(["audit"]) == 0
  text = capsys.readouterr().out
  assert f"{len(robust_training.ROBUST_TEST_CORRUPTIONS)} splits x 500" in text
  assert not out.exists()
