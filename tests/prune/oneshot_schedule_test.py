"""One-shot protocols and variant names (docs/spec.md §6.1-6.4, §1.1)."""

import pytest

from tf_forget.artifacts import names
from tf_forget.prune import oneshot_schedule
from tf_forget.train import presets


def test_resnet_schedule_is_the_released_one():
  # docs/spec.md §6.4: 10 epochs at 0.1, then 5 each at 1e-2, 1e-3, 1e-4; LeNet 15 at 0.01
  # (002 §6.1).
  p = oneshot_schedule.get("cifar_resnet_002")
  assert p.phases == ((10, 0.1), (5, 1e-2), (5, 1e-3), (5, 1e-4)) and p.epochs == 25
  assert p.batch_size == 128 and p.grad_batches == 1 and p.grad_batch_size == 128
  assert oneshot_schedule.get("lenet5_002").phases == ((15, 0.01),)
  # ε = 2λ of the parent's Keras l2(λ): the CIFAR ResNet parents' 0.0005 (002 §6.1).
  assert p.epsilon(presets.get("cifar_resnet_002").weight_decay) == pytest.approx(5e-4)
  assert oneshot_schedule.get("digits", eps=0.25).epsilon(1e-4) == 0.25


def test_every_preset_has_a_protocol():
  for name in presets.names():
    assert oneshot_schedule.get(name).name == name


@pytest.mark.parametrize(
  "overrides, message",
  [
    ({"phases": "3@x"}, "bad fine-tuning phase"),
    ({"phases": "0@0.1"}, "epochs >= 1"),
    ({"phases": ""}, "no fine-tuning phase"),
    ({"ratio_over": "some"}, "ratio_over"),
    ({"up_formula": "paper"}, "up_formula"),
    ({"validation_every": 1}, "validation_every"),
    ({"grad_batches": 0}, ">= 1"),
    ({"momentum2": 0.1}, "no field"),
  ],
)
def test_bad_overrides_are_one_line_errors(overrides, message):
  with pytest.raises(oneshot_schedule.OneshotScheduleError, match=message):
    oneshot_schedule.get("digits", **overrides)


def test_unknown_preset():
  with pytest.raises(
    oneshot_schedule.OneshotScheduleError, match="no one-shot fine-tuning protocol"
  ):
    oneshot_schedule.get("nope")


def test_phases_parse():
  assert oneshot_schedule.parse_phases("3@0.05, 2@5e-3") == ((3, 0.05), (2, 0.005))
  assert oneshot_schedule.get("digits", phases="1@0.1").phases == ((1, 0.1),)


@pytest.mark.parametrize(
  "name, canonical, sparsity, ratio, fraction",
  [
    ("oneshot_up_r10", "oneshot_up_r10", 0.9, 10.0, None),
    ("oneshot_mp_r2.50", "oneshot_mp_r2.5", 0.6, 2.5, None),
    ("oneshot_rp_t0.30", "oneshot_rp_t0.3", 0.3, None, 0.3),
    ("oneshot_gp_t.5", "oneshot_gp_t0.5", 0.5, None, 0.5),
  ],
)
def test_oneshot_names(name, canonical, sparsity, ratio, fraction):
  v = names.parse_trained(name)
  assert (v.name, v.ratio, v.fraction, v.method, v.parent) == (
    canonical,
    ratio,
    fraction,
    "oneshot",
    "dense",
  )
  assert v.sparsity == pytest.approx(sparsity) and v.pruned and v.oneshot
  assert names.parse_variant(f"{canonical}+full_int8").member_variant == canonical
  assert not names.parse_trained("prune_0.9").oneshot
  assert names.parse_trained("prune_0.9").parent is None


@pytest.mark.parametrize(
  "name, message",
  [
    ("oneshot_xx_r10", "unknown one-shot algorithm"),
    ("oneshot_mp_r1", "must be > 1"),
    ("oneshot_mp_t1", "must be in \\(0, 1\\)"),
    ("oneshot_mp_r", "unknown variant"),
    ("oneshot_mp_r-2", "unknown variant"),
  ],
)
def test_bad_oneshot_names(name, message):
  with pytest.raises(names.VariantError, match=message):
    names.parse_trained(name)


def test_oneshot_variants_are_algorithm_major():
  got = [v.name for v in names.oneshot_variants(["mp", "up"], [2, 10], [0.3])]
  assert got == [
    "oneshot_mp_r2",
    "oneshot_mp_r10",
    "oneshot_up_r2",
    "oneshot_up_r10",
    "oneshot_mp_t0.3",
    "oneshot_up_t0.3",
  ]
  with pytest.raises(names.VariantError, match="not both"):
    names.oneshot_name("mp", ratio=2, fraction=0.5)
