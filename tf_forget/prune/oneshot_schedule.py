"""How a trained parent is pruned one-shot and fine-tuned (002 §6.1, docs/spec.md §6.1-6.4), per
preset.

A `OneshotSchedule` is plain data recorded in every one-shot member's metadata and hashed into
its lineage (a changed protocol means the member is made again). It is keyed by the parent's
training preset (`tf_forget.train.presets`), so the fine-tuning schedule follows the model, and
declared with that preset (`tf_forget.data.protocols`: `protocol_registry.TRAININGS[name].oneshot`,
with the sources of its numbers; every training protocol has one):

* the full-size presets: the authors' released schedule for ResNets — 10 epochs at LR 0.1, then
  5 epochs each at 1e-2, 1e-3 and 1e-4, SGD with Nesterov momentum 0.9, batch 128
  (docs/spec.md §6.4);
* `lenet5_002`: 15 epochs at LR 0.01, batch 128 (002 §6.1);
* `digits` (scaled down): 3 epochs at 0.05, then 2 each at 5e-3 and 5e-4, batch 64; `tiny`
  (tests): 2 epochs at 0.01, batch 32;
* `user` (the user's own Keras model, `--reference --pruning=oneshot`; its preset is
  `tf_forget.train.imported_parent.preset`): 5 epochs at 0.01, then 5 at 1e-3, batch 128;
  `--finetune` sets the phases.

Every schedule keeps the epoch with the lowest loss on a validation split held out from train
(every `validation_every`-th training record, 10% by default; 002's reference selects on the
test loader, which docs/spec.md §6.4 rules out). The parent itself was trained on all of train (its
preset is the population's), so the validation records are held out of fine-tuning only: they
select the epoch, they are not unseen by the parent — recorded in the metadata.

Gradient g (docs/spec.md §6.2): `grad_batches` batches of `grad_batch_size` unaugmented training
records (the fine-tuning part of train), drawn with a seed derived from the dense parent's, so
that every GP and UP member of a parent reads the same g (`tf_forget.prune.gradient`);
002's reference uses one batch of 128. ε (UP): None means 2λ of the parent preset's
`weight_decay` (Keras `l2(λ)`, docs/spec.md §6.1); a number overrides it. Standard library only (and
`artifacts.errors`, the protocol registry).
"""

import dataclasses
from typing import Optional, Tuple

from tf_forget.artifacts import errors
from tf_forget.data.protocols import protocol_registry as protocols
from tf_forget.prune import scores

RATIO_OVER = ("prunable", "all")


class OneshotScheduleError(errors.Error):
  """An invalid one-shot protocol or override (one line)."""


@dataclasses.dataclass(frozen=True)
class OneshotSchedule:
  """The one-shot pruning and fine-tuning protocol.

  Attributes:
    name: the training preset it belongs to.
    phases: ((epochs, learning rate), ...) of fine-tuning, in order.
    batch_size: fine-tuning batch size.
    momentum: SGD (Nesterov) momentum.
    validation_every: every n-th training record is held out for epoch selection (n >= 2).
    grad_batches: batches averaged for g (GP, UP; one g per parent, `gradient.py`).
    grad_batch_size: examples per gradient batch.
    exclude_classifier: leave the classifier's kernel unpruned (002's reference; docs/spec.md §6.3).
    ratio_over: "prunable" (r over the prunable kernels, default) or "all" (over all parameters,
      002's reference count; docs/spec.md §6.3).
    up_formula: "code" (the released code, default) or "derivation" (docs/spec.md §6.1).
    eps: ε of UP; None = 2 × the parent preset's weight_decay λ.
  """

  name: str
  phases: Tuple[Tuple[int, float], ...]
  batch_size: int = 128
  momentum: float = 0.9
  validation_every: int = 10
  grad_batches: int = 1
  grad_batch_size: int = 128
  exclude_classifier: bool = False
  ratio_over: str = "prunable"
  up_formula: str = "code"
  eps: Optional[float] = None

  @property
  def epochs(self):
    """Fine-tuning epochs in total."""
    return sum(e for e, _ in self.phases)

  def epsilon(self, weight_decay):
    """ε of UP given the parent's l2 coefficient λ (ε = 2λ unless `eps` is set)."""
    return float(self.eps) if self.eps is not None else 2.0 * float(weight_decay)

  def to_json(self):
    d = dataclasses.asdict(self)
    d["phases"] = [[int(e), float(lr)] for e, lr in self.phases]
    return d

  @classmethod
  def from_json(cls, protocol_json):
    """The `OneshotSchedule` whose `to_json()` is `protocol_json`.

    Raises:
      OneshotScheduleError: other fields, or a dict that does not round-trip ("worker and driver
        versions differ": a task's protocol comes from the driver).
    """
    fields = {f.name for f in dataclasses.fields(cls)}
    if set(protocol_json) != fields:
      raise OneshotScheduleError(
        f"one-shot protocol fields {sorted(protocol_json)} differ from "
        f"{sorted(fields)}: worker and driver versions differ"
      )
    values = dict(protocol_json, phases=tuple(tuple(p) for p in protocol_json["phases"]))
    proto = cls(**values)
    if proto.to_json() != protocol_json:
      raise OneshotScheduleError(
        f"one-shot protocol {protocol_json.get('name')!r} does not round-trip"
      )
    return proto


def parse_phases(text):
  """Parses "3@0.05,2@0.005" into ((3, 0.05), (2, 0.005)).

  Raises:
    OneshotScheduleError: a malformed phase, epochs < 1 or a learning rate <= 0.
  """
  phases = []
  for part in [p.strip() for p in str(text).split(",") if p.strip()]:
    try:
      epochs, lr = part.split("@")
      epochs, lr = int(epochs), float(lr)
    except ValueError:
      raise OneshotScheduleError(
        f"bad fine-tuning phase {part!r}: expected <epochs>@<learning rate>, e.g. 3@0.05"
      ) from None
    if epochs < 1 or not lr > 0:
      raise OneshotScheduleError(f"bad fine-tuning phase {part!r}: epochs >= 1 and LR > 0 needed")
    phases.append((epochs, lr))
  if not phases:
    raise OneshotScheduleError("no fine-tuning phase given")
  return tuple(phases)


def get(preset_name, **overrides):
  """The protocol of training preset `preset_name` (built from its declaration,
  `protocols.TRAININGS[preset_name].oneshot`), with fields replaced (None ignored).

  Raises:
    OneshotScheduleError: no protocol for the preset, an unknown field or an invalid value.
  """
  if preset_name not in protocols.TRAININGS:
    raise OneshotScheduleError(
      f"no one-shot fine-tuning protocol for preset {preset_name!r} "
      f"(known: {', '.join(sorted(protocols.TRAININGS))})"
    )
  fields = {f.name for f in dataclasses.fields(OneshotSchedule)} - {"name"}
  declared = protocols.TRAININGS[preset_name].oneshot
  unknown = sorted(set(declared) - fields)
  if unknown:
    raise OneshotScheduleError(
      f"the one-shot protocol of preset {preset_name!r} declares unknown fields {unknown}"
    )
  overrides = {k: v for k, v in overrides.items() if v is not None}
  for key in overrides:
    if key not in fields:
      raise OneshotScheduleError(f"one-shot protocol has no field {key!r}")
  if isinstance(overrides.get("phases"), str):
    overrides["phases"] = parse_phases(overrides["phases"])
  p = dataclasses.replace(OneshotSchedule(preset_name, **declared), **overrides)
  if p.batch_size < 1 or p.grad_batch_size < 1 or p.grad_batches < 1:
    raise OneshotScheduleError("batch_size, grad_batch_size and grad_batches must be >= 1")
  if p.validation_every < 2:
    raise OneshotScheduleError(f"validation_every must be >= 2, got {p.validation_every}")
  if p.ratio_over not in RATIO_OVER:
    raise OneshotScheduleError(
      f"ratio_over must be one of {', '.join(RATIO_OVER)}, got {p.ratio_over!r}"
    )
  if p.up_formula not in scores.UP_FORMULAS:
    raise OneshotScheduleError(
      f"up_formula must be one of {', '.join(scores.UP_FORMULAS)}, got {p.up_formula!r}"
    )
  if p.eps is not None and not p.eps >= 0:
    raise OneshotScheduleError(f"eps must be >= 0, got {p.eps}")
  parse_phases(",".join(f"{e}@{lr}" for e, lr in p.phases))
  return p
