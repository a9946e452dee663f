"""`mnist` and `fashion_mnist`: the scaled-down protocol; 002's LeNet-5 preset `lenet5_002`.

The papers train no MNIST model of 000's protocol: both data sets are audited under the scaled-down
`digits` protocol (`digits_protocol.py`), with tfds' published split sizes (60,000 train, 10,000
test; 28x28 grey images).

`lenet5_002`: 002 §6.1's parents (30 models, pruned after training by `tf_forget.prune`),
LeNet-5 on MNIST / Fashion-MNIST, SGD 30 epochs, batch 128, LR 0.01, no weight decay stated (so
ε = 0 and UP ranks as GP there). Every 10th train record is held out (6,000; never the test
split, docs/spec.md §6.4) and the parent keeps the epoch with the lowest loss on them, as 002
does: an epoch is a pass over the other 54,000 records, 421 steps of 128 (the remainder
dropped), so 30 epochs are 12,630 steps, a checkpoint and a validation score after each.
One-shot fine-tuning: 15 epochs at LR 0.01, batch 128 (002 §6.1: "fine-tuned for another 15
epochs"), on the same 54,000 records with the same hold-out; prune-retrain: the torchprune keep
ratios. The reproduction of 002's MNIST tables: docs/reproductions/002_mnist.md.
"""

from tf_forget.data.protocols import digits_protocol
from tf_forget.data.protocols import schema

_SPLITS = {"train": 60_000, "test": 10_000}

PROTOCOLS = (
  digits_protocol.scaled_down("mnist", _SPLITS, (28, 28, 1)),
  digits_protocol.scaled_down("fashion_mnist", _SPLITS, (28, 28, 1)),
)

TRAININGS = (
  schema.TrainingProtocol(
    name="lenet5_002",
    dataset="mnist",
    preset=dict(
      model="lenet5",
      steps=12_630,
      batch_size=128,
      learning_rate=0.01,
      lr_boundaries=(),
      weight_decay=0.0,
      sparsities=(),
      members=30,
      checkpoint_every=421,
      validation_every=10,
    ),
    oneshot=dict(phases=((15, 0.01),)),
  ),
)
