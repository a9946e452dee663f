"""`cifar10` and `cifar100`: 000's CIFAR-10 protocol; 002's and 003's CIFAR-10 presets.

Audit protocol (000, docs/spec.md §2.3, §3.6): 000's three post-training formats, the registered
corruption suite at severities 1-5 (003 §5 CIFAR10-C), l-inf noise, corrupted splits and noise
on the first 5 members (`schema`); tfds' split sizes (50,000 train, 10,000 test, 32x32).
`cifar100` takes the CIFAR-10 protocol (the papers train no CIFAR-100 model of their own
protocol: 002 uses it, with its own ResNets).

Published suites of `cifar10` (`--robustness=published`): the published CIFAR-10-C (tfds
`cifar10_corrupted`, Hendrycks & Dietterich 2019; 003 §5) as its `<corruption>@<severity>`
splits — 10,000 test images per (corruption, severity), in test order — plus CIFAR-10.1 v6
(Recht et al. 2018; 003 Table 11; 2,000 images) as split `cifar10_1`. Suites are named by their
key in `tf_forget.corruptions.tfds_suites.SUITES` (this module imports nothing of them).

Presets:
* `cifar10_paper` (000 §2.4, appendix B; docs/spec.md §2.1-2.2): WRN-28-10, 80,000 steps, batch 128;
  the papers give no pruning schedule: docs/spec.md §2.2's proportions, begin 10% (8,000), end 90%
  (72,000), frequency (end - begin)/16 = 4,000. Weight decay, momentum, the step-decay LR
  schedule and the augmentation values are our documented choices (standard for WRN).
* `cifar_resnet_002`: 002 §6.1's parents (30 models, pruned after training by
  `tf_forget.prune`): CIFAR ResNets 60 epochs, batch 128, "a decreasing LR schedule" (ours: 0.1,
  ×0.1 at 50% and 75%), weight decay 0.0005 in the optimizer — ε = 5e-4, i.e. Keras l2(λ =
  2.5e-4) (docs/spec.md §6.1); 60 × 390 = 23,400 steps. 002 keeps the epoch with the lowest
  validation loss while training the parents; ours train for the fixed number of steps.
* 003's CIFAR-10 parents (appendix B, Table 3; docs/spec.md §6.5): `resnet20_003`, `resnet56_003`,
  `resnet110_003`, `vgg16_003`, `densenet22_003`, `wrn16_8_003` — Table 3's epochs, batch size,
  LR, decay, momentum, Nesterov flag, weight decay and 5-epoch linear warm-up, converted to
  steps (`_table_3`, the comment above `TRAININGS`); 3 members each (003 repeats every
  experiment 3 times).

After training, every preset here takes the ResNet one-shot schedule (docs/spec.md §6.4; the
released one of `cifar_resnet_002`) and the torchprune keep ratios (`schema`).
"""

from tf_forget.data.protocols import schema

TRAIN_SIZE = 50_000
WARMUP_EPOCHS_003 = 5  # 003 Table 3, every CIFAR-10 network
_SPLITS = {"train": TRAIN_SIZE, "test": 10_000}

PUBLISHED = schema.Published(
  corrupted="cifar10_corrupted",
  extra=(schema.PublishedSplit("cifar10_1", "cifar10_1", "test", 2000),),
)

PROTOCOLS = (
  schema.AuditProtocol(
    dataset="cifar10",
    preset="cifar10_paper",
    split_sizes=_SPLITS,
    image_shape=(32, 32, 3),
    published=PUBLISHED,
  ),
  schema.AuditProtocol(
    dataset="cifar100", preset="cifar10_paper", split_sizes=_SPLITS, image_shape=(32, 32, 3)
  ),
)


def _table_3(
  model, *, epochs, batch_size, learning_rate, decay_epochs, lr_decay, nesterov, weight_decay
):
  """A 003 Table 3 CIFAR-10 protocol given in epochs, as `Preset` fields in steps.

  Args:
    model: model registry name.
    epochs: training epochs.
    batch_size: examples per step.
    learning_rate: nominal LR (reached at the end of the warm-up).
    decay_epochs: the epochs at which the LR is multiplied by `lr_decay`.
    lr_decay: step-decay factor.
    nesterov: Nesterov momentum.
    weight_decay: Keras l2 λ (half of Table 3's SGD weight decay ε).

  Returns:
    {field: value} of a `Preset` of epochs × floor(50,000 / batch_size) steps, checkpointed
    every epoch.
  """
  steps_per_epoch = TRAIN_SIZE // batch_size
  return dict(
    model=model,
    steps=epochs * steps_per_epoch,
    batch_size=batch_size,
    learning_rate=learning_rate,
    momentum=0.9,
    lr_boundaries=tuple(e / epochs for e in decay_epochs),
    lr_decay=lr_decay,
    weight_decay=weight_decay,
    augmentation="crop_flip",
    shift_pixels=4,
    sparsities=(),
    members=3,
    checkpoint_every=steps_per_epoch,
    nesterov=nesterov,
    warmup_steps=WARMUP_EPOCHS_003 * steps_per_epoch,
  )


_TABLE_3_RESNET = dict(
  epochs=182,
  batch_size=128,
  learning_rate=0.1,
  decay_epochs=(91, 136),
  lr_decay=0.1,
  nesterov=False,
  weight_decay=5e-5,
)


def _cifar10(name, preset):
  """A CIFAR-10 `TrainingProtocol` with the ResNet one-shot schedule (docs/spec.md §6.4)."""
  return schema.TrainingProtocol(
    name=name, dataset="cifar10", preset=preset, oneshot=dict(phases=schema.RESNET_FINETUNE)
  )


TRAININGS = (
  _cifar10(
    "cifar10_paper",
    dict(
      model="wrn_28_10",
      steps=80_000,
      batch_size=128,
      learning_rate=0.1,
      weight_decay=5e-4,
      augmentation="crop_flip",
      shift_pixels=4,
      members=30,
      checkpoint_every=2000,
    ),
  ),
  _cifar10(
    "cifar_resnet_002",
    dict(
      model="cifar_resnet56",
      steps=23_400,
      batch_size=128,
      learning_rate=0.1,
      weight_decay=2.5e-4,
      augmentation="crop_flip",
      shift_pixels=4,
      sparsities=(),
      members=30,
      checkpoint_every=390,
    ),
  ),
  # 003 (Liebenwein et al., "Lost in Pruning") appendix B.1, Table 3: the CIFAR-10 networks'
  # training hyperparameters (retraining reuses them), as released in torchprune
  # (`src/experiment/experiment/param/training/cifar/{resnet,vgg,densenet,wrn}.yaml`; its
  # `paper/lost/param/cifar/vgg16.yaml` retrains VGG16 for 150 epochs, not 300).
  # Conversions (`_table_3`):
  # * steps: an epoch is floor(50,000 / batch) steps (CIFAR-10's train split, the remainder
  #   dropped as in `cifar_resnet_002`): batch 128 -> 390, 256 -> 195, 64 -> 781. ResNets
  #   182 × 390 = 70,980; VGG16 300 × 195 = 58,500; DenseNet22 300 × 781 = 234,300;
  #   WRN-16-8 200 × 390 = 78,000. `checkpoint_every` is one epoch.
  # * LR decay epochs -> `lr_boundaries` as fractions of the epochs (so of the steps):
  #   ResNets ×0.1 at 91, 136 of 182 (steps 35,490, 53,040); VGG16 ×0.5 every 30 epochs,
  #   i.e. at 30, 60, ..., 270 of 300 (nine boundaries, steps 5,850 k for k = 1..9);
  #   DenseNet22 ×0.1 at 150, 225 of 300 (117,150, 175,725); WRN-16-8 ×0.2 at 60, 120, 160 of
  #   200 (23,400, 46,800, 62,400) — Table 3 prints "0.2@{60, ...}", the released wrn.yaml
  #   (and Zagoruyko & Komodakis 2016) give the three milestones.
  # * warm-up: 5 epochs -> `warmup_steps` 1,950 (batch 128), 975 (VGG16), 3,905 (DenseNet22);
  #   LR ramps linearly from 0 (`tf_forget.train.schedule`). (torchprune's released vgg.yaml
  #   and densenet.yaml warm up for 10 epochs; Table 3 prints 5 for all four: we follow it.)
  # * weight decay: Table 3's values are PyTorch SGD `weight_decay`, i.e. ε (docs/spec.md §6.1),
  #   so the Keras l2 λ = ε / 2: 5e-4 -> 2.5e-4 (VGG16, WRN-16-8), 1e-4 -> 5e-5 (ResNets,
  #   DenseNet22). (PyTorch decays every parameter, BN γ, β and biases too; the zoo's l2 is on
  #   conv / dense kernels only.)
  # * Nesterov: off for the ResNets and VGG16, on for DenseNet22 and WRN-16-8; momentum 0.9.
  # * augmentation: torchprune's CIFAR training transform, Pad(4) + RandomCrop(32) +
  #   RandomHorizontalFlip = "crop_flip" with 4 pixels.
  *(
    _cifar10(name, _table_3(model, **table_3))
    for name, model, table_3 in (
      ("resnet20_003", "cifar_resnet20", _TABLE_3_RESNET),
      ("resnet56_003", "cifar_resnet56", _TABLE_3_RESNET),
      ("resnet110_003", "cifar_resnet110", _TABLE_3_RESNET),
      (
        "vgg16_003",
        "vgg16",
        dict(
          epochs=300,
          batch_size=256,
          learning_rate=0.05,
          decay_epochs=range(30, 300, 30),
          lr_decay=0.5,
          nesterov=False,
          weight_decay=2.5e-4,
        ),
      ),
      (
        "densenet22_003",
        "densenet22",
        dict(
          epochs=300,
          batch_size=64,
          learning_rate=0.1,
          decay_epochs=(150, 225),
          lr_decay=0.1,
          nesterov=True,
          weight_decay=5e-5,
        ),
      ),
      (
        "wrn16_8_003",
        "wrn_16_8",
        dict(
          epochs=200,
          batch_size=128,
          learning_rate=0.1,
          decay_epochs=(60, 120, 160),
          lr_decay=0.2,
          nesterov=True,
          weight_decay=2.5e-4,
        ),
      ),
    )
  ),
)
