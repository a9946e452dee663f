"""`imagenet2012`: 000's ImageNet protocol (Hooker et al., *What Do Compressed Deep Neural
Networks Forget?*).

Audit protocol (000, docs/spec.md §2.3, §3.6): 000's three post-training formats, the registered
corruption suite at severities 1-5 (000 §4 ImageNet-C), l-inf noise, corrupted splits and noise
on the first 5 members (`schema`); reported on the `validation` split; tfds' split sizes
(1,281,167 train, 50,000 validation) at 224x224.

Published suites (`--robustness=published`): tfds' `imagenet2012_corrupted` — tfds'
*regeneration* of ImageNet-C from the validation set, not the published files; 50,000 images
per (corruption, severity) — plus ImageNet-A (000 Table 8, docs/spec.md §3.6; 7,500 images, 1000-way
labels) as split `imagenet_a`. Suites are named by their key in
`tf_forget.corruptions.tfds_suites.SUITES`.

Preset `imagenet_paper` (000 §2.4, appendix B; docs/spec.md §2.1-2.2): ResNet-50, 32,000 steps,
batch 1024 as 000 prints. 000's text says this is "approximately 90 epochs", which would need a
batch of about 4,096 (90 × 1.28M / 32,000 ≈ 3,600): the two numbers disagree; we keep the printed
batch (docs/spec.md §2.1). Pruning 3,200 → 28,800 every 1,600 steps. Weight decay, momentum, the
step-decay LR schedule and the augmentation values are not given by the paper: the values here are
our documented choices (standard for ResNet-50). After training: the ResNet one-shot schedule and
the torchprune keep ratios (`schema`).
"""

from tf_forget.data.protocols import schema

PUBLISHED = schema.Published(
  corrupted="imagenet2012_corrupted",
  extra=(schema.PublishedSplit("imagenet_a", "imagenet_a", "test", 7500),),
  note="corrupted splits from tfds' imagenet2012_corrupted: tfds' regeneration of ImageNet-C "
  "from the validation set, not the published ImageNet-C files",
)

PROTOCOLS = (
  schema.AuditProtocol(
    dataset="imagenet2012",
    preset="imagenet_paper",
    eval_split="validation",
    split_sizes={"train": 1_281_167, "validation": 50_000},
    image_shape=(224, 224, 3),
    published=PUBLISHED,
  ),
)

TRAININGS = (
  schema.TrainingProtocol(
    name="imagenet_paper",
    dataset="imagenet2012",
    preset=dict(
      model="resnet50",
      steps=32_000,
      batch_size=1024,
      learning_rate=0.4,
      weight_decay=5e-5,
      lr_boundaries=(1 / 3, 2 / 3, 8 / 9),
      augmentation="crop_flip",
      shift_pixels=16,
      members=30,
      checkpoint_every=1000,
    ),
    oneshot=dict(phases=schema.RESNET_FINETUNE),
  ),
)
