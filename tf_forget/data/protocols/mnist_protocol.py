"""`mnist` and `fashion_mnist`: the scaled-down protocol; 002's LeNet-5 preset `lenet5_002`.

The papers train no MNIST model of 000's protocol: both data sets are audited under the scaled-down
`digits` protocol (`digits_protocol.py`), with tfds' published split sizes (60,000 train, 10,000
test; 28x28 grey images).

`lenet5_002`: 002 §6.1's parents (30 models, pruned after training by `tf_forget.prune`),
LeNet-5 on MNIST / Fashion-MNIST, SGD 30 epochs, batch 128, LR 0.01, no weight decay stated (so
ε = 0 and UP ranks as GP there). Epochs are steps × batch / train size: 30 × 468 = 14,040 steps
(60,000 / 128 with the remainder dropped). 002 keeps the epoch with the lowest validation loss
while training the parents; ours train for the fixed number of steps (documented in the issue
#16 closing note). One-shot fine-tuning: 15 epochs at LR 0.01, batch 128 (002 §6.1:
"fine-tuned for another 15 epochs"); prune-retrain: the torchprune keep ratios.
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
        name="lenet5_002", dataset="mnist",
        preset=dict(model="lenet5", steps=14_040, batch_size=128, learning_rate=0.01,
                    lr_boundaries=(), weight_decay=0.0, sparsities=(), members=30,
                    checkpoint_every=468),
        oneshot=dict(phases=((15, 0.01),))),
)
