"""What a protocol module declares, as plain data (standard library only).

A protocol module (`tf_forget/data/protocols/<family>_protocol.py`) states the audit protocol of one
or more data sets once, with the training protocols their members are trained with:

* `PROTOCOLS`: one `AuditProtocol` per data set — its training preset, the TFLite formats,
  corruptions and severities, noise, robustness members, split sizes and image shape (so that a
  cost plan, `tf_forget/pipeline/costs.py`, works without the data on disk), any published suites;
* `TRAININGS`: one `TrainingProtocol` per preset — the fields of its
  `tf_forget.train.presets.Preset`, the parameters of its one-shot schedule
  (`tf_forget.prune.oneshot_schedule`) and of its iterative schedule
  (`tf_forget.prune.iterative_schedule`). A preset need not be a data set's default (`tiny`,
  002's and 003's presets).

`tf_forget.data.protocols.protocol_registry` collects the modules and checks them when it registers
them. This module holds the types and the values several protocol modules share; the sources
of each choice are in the docstrings of the modules that make it.

What the papers and docs/spec.md settle for every protocol:
* post-training formats of dense members (docs/spec.md §2.3): float16, dynamic_int8, full_int8
  (000).
* formats of pruned members besides float32: none (docs/spec.md §1.1: post-training formats apply to
  dense members unless a combination such as `prune_0.9+full_int8` is asked for).
* corruptions (`None` = the whole registered suite, `()` = none) at severities 1-5 (000,
  docs/spec.md §3.6), averaged per corruption.
* robustness members (docs/spec.md §1.5): 000 averages its robustness tables over 5 members
  (appendix D: "we average model robustness over 5 models"); every full-size protocol evaluates
  corrupted splits and l-inf noise on members k = 0..4 only (the first 5 by index).
* l-inf noise (003 §4.1, docs/spec.md §6.7): ε in linspace(0, 0.7, 15), 100 draws, 1000 examples.
* one-shot fine-tuning (docs/spec.md §6.4): full-size presets without a schedule of their own take
  the authors' released schedule for ResNets, `RESNET_FINETUNE` (10 epochs at LR 0.1, then 5 epochs
  each at 1e-2, 1e-3 and 1e-4, batch 128).
* prune-retrain (docs/spec.md §6.5): full-size presets take the torchprune keep ratios
  (`TrainingProtocol.iterative` None).
"""

import dataclasses
from typing import Mapping, Optional, Tuple

# docs/spec.md §6.7: numpy.linspace(0, 0.7, 15) rounded to 6 digits (=
# tf_forget.artifacts.noise_artifact.PAPER_EPS, copied here so that this module needs the standard
# library only; a test checks they agree).
PAPER_EPS = tuple(round(0.05 * i, 6) for i in range(15))
PAPER_DRAWS = 100
PAPER_EXAMPLES = 1000

ALL_SEVERITIES = (1, 2, 3, 4, 5)
DENSE_QUANTIZATIONS = ("float16", "dynamic_int8", "full_int8")  # 000, docs/spec.md §2.3
ROBUSTNESS_MEMBERS = 5  # 000 appendix D, docs/spec.md §1.5

# docs/spec.md §6.4: the authors' released one-shot fine-tuning of ResNets, (epochs, learning rate).
RESNET_FINETUNE = ((10, 0.1), (5, 1e-2), (5, 1e-3), (5, 1e-4))


@dataclasses.dataclass(frozen=True)
class PublishedSplit:
  """A published test set evaluated as an extra split of the audit (docs/spec.md §3.6).

  Attributes:
    name: the split name in predictions and the report (`imagenet_a`).
    suite: its loader (`tf_forget.corruptions.tfds_suites.SUITES` key).
    source_split: the loader's split read.
    examples: its size (tfds' published count; for the cost plan).
  """

  name: str
  suite: str
  source_split: str = "test"
  examples: int = 0


@dataclasses.dataclass(frozen=True)
class Published:
  """The published robustness suites of a data set (`--robustness=published`).

  Attributes:
    corrupted: the suite whose `<corruption>@<severity>` splits replace the generated ones
      (same split names, same example order as the eval split).
    extra: published test sets evaluated besides them.
    note: a line the report and docs repeat (e.g. that a suite is a regeneration).
  """

  corrupted: str
  extra: Tuple[PublishedSplit, ...] = ()
  note: str = ""


@dataclasses.dataclass(frozen=True)
class AuditProtocol:
  """The audit protocol of one data set (plain data).

  Attributes:
    dataset: data registry name.
    preset: training preset name (a `TrainingProtocol` of the registry, with a preset).
    quantizations: post-training formats of dense members besides float32 (docs/spec.md §2.3).
    pruned_quantizations: formats of pruned members besides float32 (docs/spec.md §1.1: none).
    corruptions: corruption names; None = the whole registered suite, () = none.
    severities: corruption severities.
    robustness_members: members (k = 0..n-1) evaluated on corrupted splits and under noise;
      None = every member (docs/spec.md §1.5).
    noise_eps: l-inf noise levels ε (normalized input), () = no noise evaluation.
    noise_draws: noise draws per example and level.
    noise_examples: examples evaluated under noise, at most.
    eval_split: the split the audit reports on.
    split_sizes: examples per split, as the loader yields them.
    image_shape: (H, W, C) of the model input at the default options.
    published: the published robustness suites (`Published`), or None.
  """

  dataset: str
  preset: str
  quantizations: Tuple[str, ...] = DENSE_QUANTIZATIONS
  pruned_quantizations: Tuple[str, ...] = ()
  corruptions: Optional[Tuple[str, ...]] = None
  severities: Tuple[int, ...] = ALL_SEVERITIES
  robustness_members: Optional[int] = ROBUSTNESS_MEMBERS
  noise_eps: Tuple[float, ...] = PAPER_EPS
  noise_draws: int = PAPER_DRAWS
  noise_examples: int = PAPER_EXAMPLES
  eval_split: str = "test"
  split_sizes: Mapping[str, int] = dataclasses.field(default_factory=dict)
  image_shape: Tuple[int, int, int] = (32, 32, 3)
  published: Optional[Published] = None

  def eval_size(self):
    """Examples of the eval split."""
    return self.split_sizes[self.eval_split]


@dataclasses.dataclass(frozen=True)
class TrainingProtocol:
  """A training protocol (a preset) and how its members are pruned after training (plain data).

  The classes are built from it where they live: `tf_forget.train.presets.get(name)` makes the
  `Preset`, `tf_forget.prune.oneshot_schedule.get(name)` the `OneshotSchedule`,
  `tf_forget.prune.iterative_schedule.get(name)` the `IterativeSchedule`; fields left out take
  those classes' defaults.

  Attributes:
    name: the preset name, and its schedules' name.
    dataset: the data set it trains on (None: the user's own model, `user_protocol.py`).
    preset: {field: value} of `Preset` besides `name` and `dataset`; None: not a preset of
      ours (the user's own model, whose preset `tf_forget.train.imported_parent.preset` makes).
    oneshot: {field: value} of `OneshotSchedule` besides `name`; `phases` (((epochs, learning
      rate), ...)) at least. Every training protocol has one: registering one without
      `phases` is an error (`protocol_registry.register`).
    iterative: the defaults of its "alpha" prune-retrain schedule, {"alpha": α, "cycles": n,
      "warmup_epochs": e}; None: the torchprune keep ratios (docs/spec.md §6.5) with the schedule's
      default warm-up.
  """

  name: str
  dataset: Optional[str]
  preset: Optional[Mapping[str, object]]
  oneshot: Mapping[str, object]
  iterative: Optional[Mapping[str, object]] = None
