"""The user's own model pruned one-shot (`--reference --pruning=oneshot`).

The user's own data (`folder:`, `tfds:`, `tfrecord:`) is audited with the user's own model
(`tf_forget/pipeline/user_plan.py`), never trained on: it has no audit protocol here, and the model
no preset of ours (`tf_forget.train.imported_parent.preset` makes one from the reference, named
"user"). What is ours is its one-shot fine-tuning schedule, "user": our choice for a model whose
training is unknown — 5 epochs at 0.01 (002's LeNet rate, low enough for a network trained with
Adam), then 5 at 1e-3, batch 128 (the reference's, docs/spec.md §6.4); `--finetune` sets the phases.
"""

from tf_forget.data.protocols import schema

PROTOCOLS = ()

TRAININGS = (
  schema.TrainingProtocol(
    name="user", dataset=None, preset=None, oneshot=dict(phases=((5, 0.01), (5, 1e-3)))
  ),
)
