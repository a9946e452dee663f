"""`celeb_a`: 004's protocol (Hooker, Moorosi et al., *Characterising Bias in Compressed Models*).

* formats of dense members: dynamic_int8 and full_int8 only (004: "two types of post-training
  quantization"; docs/spec.md §2.3).
* no corruption and no l-inf noise: 004 reports on the clean test split only.
* split sizes: tfds' published counts (162,770 train, 19,867 validation, 19,962 test) of
  218x178 images.

Preset `celeb_a_paper` (004 §2, docs/spec.md §2.1-2.2): ResNet-18, 10,000 steps, batch 256; pruning
begins at step 1,000, ends at 9,000, every 500 steps; sparsities {0.3, 0.5, 0.7, 0.9, 0.95,
0.99}. Weight decay, momentum, the step-decay LR schedule and the augmentation values are not
given by the paper: the values here are our documented choices (standard for ResNet-18). After
training: the ResNet one-shot schedule and the torchprune keep ratios (`schema`).
"""

from tf_forget.data.protocols import schema

QUANTIZATIONS = ("dynamic_int8", "full_int8")  # 004, docs/spec.md §2.3
SPARSITIES = (0.3, 0.5, 0.7, 0.9, 0.95, 0.99)  # 004

PROTOCOLS = (
  schema.AuditProtocol(
    dataset="celeb_a",
    preset="celeb_a_paper",
    quantizations=QUANTIZATIONS,
    corruptions=(),
    noise_eps=(),
    split_sizes={"train": 162_770, "validation": 19_867, "test": 19_962},
    image_shape=(218, 178, 3),
  ),
)

TRAININGS = (
  schema.TrainingProtocol(
    name="celeb_a_paper",
    dataset="celeb_a",
    preset=dict(
      model="resnet18",
      steps=10_000,
      batch_size=256,
      learning_rate=0.1,
      weight_decay=1e-4,
      augmentation="crop_flip",
      shift_pixels=8,
      prune_begin=1000,
      prune_end=9000,
      prune_frequency=500,
      sparsities=SPARSITIES,
      members=30,
      checkpoint_every=500,
    ),
    oneshot=dict(phases=schema.RESNET_FINETUNE),
  ),
)
