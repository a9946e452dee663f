"""Training protocols as named presets: the class, its checks, its JSON form.

A preset fixes everything a member's training depends on besides (data set, model, variant, k):
steps, batch size, optimiser, learning-rate schedule, weight decay, augmentation, the gradual
pruning schedule (Zhu & Gupta's polynomial decay, as tfmot's `PolynomialDecay`) and the default
population (variants, K).

The presets themselves are declared with the audit protocols, as plain data
(`tf_forget.data.protocols`: `protocol_registry.TRAININGS`, one `schema.TrainingProtocol` per
preset, in the module of the data set it trains on, with the sources of its numbers): the papers'
(000, 004: `celeb_a_paper`, `cifar10_paper`, `imagenet_paper`; 002: `lenet5_002`,
`cifar_resnet_002`; 003: `resnet20_003`, `resnet56_003`, `resnet110_003`, `vgg16_003`,
`densenet22_003`, `wrn16_8_003`) and the scaled-down ones (`digits`, the embedded default, and
`tiny` for tests). `get(name)` builds the `Preset` from its declaration; which preset a data set
gets by default is part of its protocol (`for_dataset`).
"""

import dataclasses
import json
from typing import Optional, Tuple

from tf_forget.corruptions import robust_training
from tf_forget.data.protocols import protocol_registry as protocols

# The paper presets' sparsity levels (docs/spec.md §2.3; CelebA's:
# `tf_forget.data.protocols.celeb_a_protocol`).
PAPER_SPARSITIES = (0.1, 0.3, 0.5, 0.7, 0.9)


@dataclasses.dataclass(frozen=True)
class Preset:
  """A training protocol.

  Attributes:
    name: registry name.
    dataset: the data set the protocol is for (the population trainer's default).
    model: model registry name.
    steps: optimiser steps.
    batch_size: examples per step.
    learning_rate: initial (nominal) learning rate of SGD with momentum.
    momentum: SGD momentum.
    lr_boundaries: fractions of `steps` at which the LR is multiplied by `lr_decay`.
    lr_decay: step-decay factor.
    weight_decay: L2 coefficient λ of `keras.regularizers.l2(λ)` on kernels (ε = 2λ,
      docs/spec.md §6.1).
    augmentation: "none", "shift" (random translation by up to `shift_pixels`), or "crop_flip"
      (pad-and-crop by `shift_pixels` plus horizontal flip).
    shift_pixels: augmentation translation range in pixels.
    prune_begin: first step of the pruning schedule (fraction of steps if < 1).
    prune_end: last step of the pruning schedule (fraction of steps if < 1).
    prune_frequency: steps between mask updates (0: (end - begin) / 16).
    sparsities: the default pruned variants' targets.
    members: default population size K (docs/spec.md §1.5).
    checkpoint_every: steps between checkpoints (resume after a kill).
    model_options: extra model builder options.
    image_size: optional input resize recorded in the member's data options.
    mixed_precision: train under the mixed_float16 policy (GPU); recorded in metadata
      (`to_json` records it only when True, so that the members trained before the field
      existed keep their config hashes).
    nesterov: Nesterov momentum (True, what every preset used before the field existed; 003's
      VGG16 and ResNets train without). `to_json` records it only when False.
    warmup_steps: linear LR warm-up from 0 over the first `warmup_steps` steps, then the
      step-decay schedule (`tf_forget.train.schedule`; 003 appendix B.1). `to_json` records it
      only when not 0.
    train_corruptions: robust training (003 §6, appendix E.1; docs/spec.md §6.8): per training image
      one of these corruption names ("none": the clean image) drawn uniformly, on the fly
      (`tf_forget.train.inputs`); () trains on clean images. `to_json` records it only when
      not empty (and the severity only then or when not 3). docs/spec.md §6.8's list:
      `robust_training.ROBUST_TRAIN_CORRUPTIONS`.
    train_corruption_severity: their severity (1..5; docs/spec.md §6.8: 3).
    validation_every: 0 trains on every train record and keeps the last weights; n >= 2 holds
      out every n-th train record and keeps the dense member's weights after the checkpoint
      chunk (`checkpoint_every` steps, an epoch) with the lowest loss on them (002 §6.1,
      docs/spec.md §6.4; `tf_forget.train.epoch_selection`). Gradual-pruned variants keep their last
      weights (their schedule reaches its target at the end). `to_json` records it only
      when not 0.
  """

  name: str
  dataset: str
  model: str
  steps: int
  batch_size: int
  learning_rate: float
  momentum: float = 0.9
  lr_boundaries: Tuple[float, ...] = (0.5, 0.75)
  lr_decay: float = 0.1
  weight_decay: float = 5e-4
  augmentation: str = "none"
  shift_pixels: int = 0
  prune_begin: float = 0.1
  prune_end: float = 0.9
  prune_frequency: int = 0
  sparsities: Tuple[float, ...] = PAPER_SPARSITIES
  members: int = 30
  checkpoint_every: int = 1000
  model_options: Tuple[Tuple[str, object], ...] = ()
  image_size: Optional[Tuple[int, int]] = None
  mixed_precision: bool = False
  nesterov: bool = True
  warmup_steps: int = 0
  train_corruptions: Tuple[str, ...] = ()
  train_corruption_severity: int = robust_training.ROBUST_SEVERITY
  validation_every: int = 0

  def pruning_schedule(self):
    """(begin_step, end_step, frequency) in optimiser steps (docs/spec.md §2.2)."""
    begin = self.prune_begin if self.prune_begin >= 1 else self.prune_begin * self.steps
    end = self.prune_end if self.prune_end >= 1 else self.prune_end * self.steps
    begin, end = int(round(begin)), int(round(end))
    frequency = self.prune_frequency or max(1, (end - begin) // 16)
    return begin, end, int(frequency)

  def lr_boundary_steps(self):
    """The steps at which the learning rate decays."""
    return [int(round(b * self.steps)) for b in self.lr_boundaries]

  def to_json(self):
    """The preset as a JSON-able dict (recorded in every member's metadata)."""
    d = dataclasses.asdict(self)
    d["model_options"] = dict(self.model_options)
    # Fields added after members were trained are left out at their defaults, so that those
    # members' config hashes (`MemberConfig.inputs`) do not change.
    if not self.mixed_precision:
      del d["mixed_precision"]
    if self.nesterov:
      del d["nesterov"]
    if not self.warmup_steps:
      del d["warmup_steps"]
    if not self.validation_every:
      del d["validation_every"]
    if not self.train_corruptions:
      del d["train_corruptions"]
      if self.train_corruption_severity == robust_training.ROBUST_SEVERITY:
        del d["train_corruption_severity"]
    d["pruning_schedule"] = dict(
      zip(("begin_step", "end_step", "frequency"), self.pruning_schedule())
    )
    return d

  @classmethod
  def from_json(cls, preset_json):
    """The `Preset` whose `to_json()` is `preset_json` (a member's recorded protocol).

    Args:
      preset_json: `to_json()`, as it is or read back from JSON (lists for tuples).

    Raises:
      PresetError: a field this version does not know, or a dict that does not round-trip
        ("worker and driver versions differ": a task's preset comes from the driver).
    """
    fields = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(preset_json) - fields - {"pruning_schedule"})
    if unknown:
      raise PresetError(f"preset has unknown fields {unknown}: worker and driver versions differ")
    values = {
      k: tuple(v) if isinstance(v, list) else v for k, v in preset_json.items() if k in fields
    }
    values["model_options"] = tuple(sorted(dict(preset_json.get("model_options") or {}).items()))
    preset = cls(**values)
    # Compared as JSON: a dict read from JSON holds lists where `to_json` holds tuples.
    if json.loads(json.dumps(preset.to_json())) != json.loads(json.dumps(preset_json)):
      raise PresetError(f"preset {preset_json.get('name')!r} does not round-trip through JSON")
    return preset


DEFAULT_PRESET = "digits"


def for_dataset(dataset):
  """The preset name of `dataset`'s protocol (`tf_forget.data.protocols`).

  Raises:
    PresetError: a data set without a protocol.
  """
  try:
    return protocols.get(dataset).preset
  except protocols.ProtocolError as e:
    raise PresetError(str(e)) from e


class PresetError(ValueError):
  """An unknown preset or an invalid override."""


def names():
  """The preset names, in declaration order (`protocols.TRAININGS` with a preset)."""
  return tuple(n for n, t in protocols.TRAININGS.items() if t.preset is not None)


def get(name, **overrides):
  """Returns preset `name` (built from its declaration, `protocols.TRAININGS`), with fields
  replaced by `overrides` (None values ignored).

  Raises:
    PresetError: unknown preset or field, or an invalid value.
  """
  known = names()
  if name not in known:
    raise PresetError(f"unknown preset {name!r} (known: {', '.join(sorted(known))})")
  training = protocols.TRAININGS[name]
  fields = {f.name for f in dataclasses.fields(Preset)}
  unknown = sorted(set(training.preset) - fields)
  if unknown:
    raise PresetError(f"preset {name!r} declares unknown fields {unknown}")
  preset = Preset(name=name, dataset=training.dataset, **training.preset)
  overrides = {k: v for k, v in overrides.items() if v is not None}
  for key in overrides:
    if key not in fields:
      raise PresetError(f"preset has no field {key!r}")
  if "train_corruptions" in overrides:
    overrides["train_corruptions"] = tuple(overrides["train_corruptions"])
  preset = dataclasses.replace(preset, **overrides)
  if preset.steps < 1 or preset.batch_size < 1:
    raise PresetError(f"steps and batch_size must be >= 1, got {preset.steps}, {preset.batch_size}")
  if not 0 <= preset.warmup_steps <= preset.steps:
    raise PresetError(
      f"warmup_steps must be in [0, steps={preset.steps}], got {preset.warmup_steps}"
    )
  if preset.validation_every == 1 or preset.validation_every < 0:
    raise PresetError(f"validation_every must be 0 or >= 2, got {preset.validation_every}")
  if preset.train_corruptions:
    try:
      robust_training.check(preset.train_corruptions, preset.train_corruption_severity)
    except robust_training.CorruptionError as e:
      raise PresetError(f"preset {preset.name!r}: {e}") from e
  begin, end, frequency = preset.pruning_schedule()
  if not 0 <= begin < end <= preset.steps or frequency < 1:
    raise PresetError(
      f"pruning schedule begin={begin}, end={end}, frequency={frequency} "
      f"does not fit in {preset.steps} steps"
    )
  return preset
