"""The scaled-down protocol: `digits` and `digits_biased`, presets `digits` and `tiny`.

The scaled-down protocol (offline-sized audits; `mnist` and `fashion_mnist` take it too,
`mnist_protocol.py`): a small CNN, severity 3 only (003 §5's level) to keep the default audit short,
every second l-inf noise level with 10 draws (~1 min of the default audit), corrupted splits
and noise on every member (`None`; the default K is 5 anyway), and 000's post-training formats.

Split sizes: `tf_forget.data.digits` yields sklearn's 1,797 8x8 images, a balanced test split of
50 per class (docs/spec.md §2.7) and the rest as train; `digits_biased` the same images.

Presets:
* `digits` (the embedded default; small CNN, 600 steps of 64 — about 30 epochs of the 1,297
  training digits, ~10 s a member on 2 cores; dense members reach ~98.6% test accuracy. At 1,200
  steps the members converge so far that 90% pruning forgets almost nothing on digits (2 PIEs
  out of 500 with 5 members); at 600 the audit shows 000's phenomena: #PIE grows with sparsity,
  dense accuracy on PIEs far below overall, quantization less disparate than pruning);
* `tiny` (tests; seconds).

Their schedules after training:
* one-shot (~2 s a member on 2 cores): `digits` 3 epochs at 0.05 (the parent's initial LR, as
  the ResNet schedule restarts at the parent's 0.1), then 2 each at 5e-3 and 5e-4, batch 64;
  `tiny` 2 epochs at 0.01, batch 32;
* prune-retrain: a constant keep fraction α per cycle (`tf_forget.prune.iterative_schedule`):
  `digits` α = 0.5 over 6 cycles (keep 50% … 1.6%: six retrainings reach 98.4% sparsity, where
  the small CNN's curve bends), warm-up 5 epochs; `tiny` α = 0.5 over 2 cycles, warm-up 0.5
  epochs (its whole training is 1.5 epochs).
"""

from tf_forget.data.protocols import schema

# The scaled-down protocols' noise: every second level, 10 draws.
FAST_EPS = schema.PAPER_EPS[::2]
FAST_DRAWS = 10
_SPLITS = {"train": 1297, "test": 500}


def scaled_down(dataset, split_sizes, image_shape):
  """The `AuditProtocol` of `dataset` under the scaled-down protocol (module docstring).

  Args:
    dataset: data registry name.
    split_sizes: examples per split, as the loader yields them.
    image_shape: (H, W, C) of the model input.
  """
  return schema.AuditProtocol(
    dataset=dataset,
    preset="digits",
    severities=(3,),
    robustness_members=None,
    noise_eps=FAST_EPS,
    noise_draws=FAST_DRAWS,
    split_sizes=split_sizes,
    image_shape=image_shape,
  )


PROTOCOLS = (
  scaled_down("digits", _SPLITS, (8, 8, 1)),
  scaled_down("digits_biased", _SPLITS, (8, 8, 1)),
)

TRAININGS = (
  schema.TrainingProtocol(
    name="digits",
    dataset="digits",
    preset=dict(
      model="small_cnn",
      steps=600,
      batch_size=64,
      learning_rate=0.05,
      weight_decay=1e-4,
      augmentation="shift",
      shift_pixels=1,
      sparsities=(0.5, 0.9),
      members=5,
      checkpoint_every=300,
    ),
    oneshot=dict(phases=((3, 0.05), (2, 5e-3), (2, 5e-4)), batch_size=64),
    iterative=dict(alpha=0.5, cycles=6, warmup_epochs=5),
  ),
  schema.TrainingProtocol(
    name="tiny",
    dataset="digits",
    preset=dict(
      model="small_cnn",
      steps=60,
      batch_size=32,
      learning_rate=0.05,
      weight_decay=1e-4,
      augmentation="shift",
      shift_pixels=1,
      prune_begin=10,
      prune_end=40,
      prune_frequency=10,
      sparsities=(0.5,),
      members=2,
      checkpoint_every=20,
    ),
    oneshot=dict(phases=((2, 0.01),), batch_size=32, grad_batch_size=32),
    iterative=dict(alpha=0.5, cycles=2, warmup_epochs=0.5),
  ),
)
