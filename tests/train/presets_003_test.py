"""003's CIFAR-10 presets against Table 3 (appendix B.1), epochs converted to steps by hand.

An epoch is floor(50,000 / batch) steps: batch 128 -> 390, 256 -> 195, 64 -> 781. Table 3's SGD
weight decay ε is Keras l2 λ = ε / 2 (docs/spec.md §6.1).
"""

import pytest

from tf_forget.models import model_registry
from tf_forget.train import presets
from tf_forget.train import schedule

# name: (model, steps, batch, epoch steps, LR, decay, boundary steps, nesterov, λ, warm-up)
TABLE_3 = {
  # ResNet20/56/110: 182 epochs × 390 = 70,980; ×0.1 at epochs 91, 136 -> 35,490, 53,040.
  "resnet20_003": (
    "cifar_resnet20",
    70_980,
    128,
    390,
    0.1,
    0.1,
    [35_490, 53_040],
    False,
    5e-5,
    1_950,
  ),
  "resnet56_003": (
    "cifar_resnet56",
    70_980,
    128,
    390,
    0.1,
    0.1,
    [35_490, 53_040],
    False,
    5e-5,
    1_950,
  ),
  "resnet110_003": (
    "cifar_resnet110",
    70_980,
    128,
    390,
    0.1,
    0.1,
    [35_490, 53_040],
    False,
    5e-5,
    1_950,
  ),
  # VGG16: 300 × 195 = 58,500; ×0.5 every 30 epochs -> 30 × 195 = 5,850 k, k = 1..9.
  "vgg16_003": (
    "vgg16",
    58_500,
    256,
    195,
    0.05,
    0.5,
    [5_850, 11_700, 17_550, 23_400, 29_250, 35_100, 40_950, 46_800, 52_650],
    False,
    2.5e-4,
    975,
  ),
  # DenseNet22: 300 × 781 = 234,300; ×0.1 at 150, 225 -> 117,150, 175,725; warm-up 3,905.
  "densenet22_003": (
    "densenet22",
    234_300,
    64,
    781,
    0.1,
    0.1,
    [117_150, 175_725],
    True,
    5e-5,
    3_905,
  ),
  # WRN-16-8: 200 × 390 = 78,000; ×0.2 at 60, 120, 160 -> 23,400, 46,800, 62,400.
  "wrn16_8_003": (
    "wrn_16_8",
    78_000,
    128,
    390,
    0.1,
    0.2,
    [23_400, 46_800, 62_400],
    True,
    2.5e-4,
    1_950,
  ),
}


def test_all_six_presets_exist():
  assert {n for n in presets.names() if n.endswith("_003")} == set(TABLE_3)


@pytest.mark.parametrize("name", sorted(TABLE_3))
def test_epochs_to_steps(name):
  model, steps, batch, epoch, lr, decay, boundaries, nesterov, wd, warmup = TABLE_3[name]
  p = presets.get(name)
  assert p.name == name and p.dataset == "cifar10" and p.model == model
  assert model in model_registry.MODELS
  assert (p.steps, p.batch_size, p.checkpoint_every) == (steps, batch, epoch)
  assert p.steps % p.checkpoint_every == 0  # the trainer requires whole chunks
  assert p.learning_rate == lr and p.lr_decay == decay and p.momentum == 0.9
  assert p.lr_boundary_steps() == boundaries
  assert p.nesterov is nesterov
  assert p.weight_decay == pytest.approx(wd, rel=1e-12)
  assert p.warmup_steps == warmup == 5 * epoch
  assert (p.augmentation, p.shift_pixels) == ("crop_flip", 4)
  assert p.sparsities == () and p.members == 3
  d = p.to_json()
  assert d["warmup_steps"] == warmup
  assert ("nesterov" in d) is (not nesterov)


@pytest.mark.parametrize("name", sorted(TABLE_3))
def test_schedule_of_the_preset(name):
  _, _, _, _, lr, decay, boundaries, _, _, warmup = TABLE_3[name]
  sched = schedule.learning_rate(presets.get(name))

  def at(step):
    return float(sched(step))

  assert at(0) == 0.0
  assert at(warmup // 2) == pytest.approx(lr * (warmup // 2) / warmup, rel=1e-6)
  assert at(warmup) == pytest.approx(lr, rel=1e-6)
  for i, b in enumerate(boundaries):
    assert at(b) == pytest.approx(lr * decay**i, rel=1e-5)
    assert at(b + 1) == pytest.approx(lr * decay ** (i + 1), rel=1e-5)
