"""How a trained parent is pruned and retrained cycle after cycle (003 Algorithm 1,
docs/spec.md §6.5).

An `IterativeSchedule` is plain data recorded in every iterative member's metadata and hashed
into its lineage. Cycle n (variant `iter_<alg>_c<n>`) prunes cycle n − 1 (the dense member for
n = 1) down to the **absolute** keep ratio `keep_ratios[n − 1]` of the prunable weights (WT) or
of every prunable layer's filters (FT), then retrains it with the parent preset's full training
schedule plus a linear LR warm-up (003 appendix B: "we added a warmup period in the beginning
where we linearly scale up the learning rate from 0 to the nominal learning rate"; Table 3: 5
epochs), masks held fixed.

Keep ratios (docs/spec.md §6.5):

* `torchprune` (default for the paper presets): the released configs' sequence. torchprune's
  `paper/lost/param/cifar/*.yaml` list 69 keep ratios — `geomspace(0.99, 0.855, 2)`,
  `geomspace(0.85, 0.15, 58)`, `linspace(0.132, 0.02, 9)` — and `retrainIterations: 23`; its
  `_split_keep_ratios` splits them into 23 consecutive chunks (`np.array_split`) and retrains at
  the last ratio of each chunk: 0.85, 0.776, 0.708, … , 0.02 (the others are prune-only
  points, which we do not make). `torchprune_keep_ratios()` computes them the same way.
* `alpha`: a constant keep fraction α per cycle, keep ratio αⁿ after n cycles (003 Table 3's α;
  t = 1 − αⁿ). The scaled-down presets use it: `digits` α = 0.5 over 6 cycles (keep 50% …
  1.6%: six retrainings reach 98.4% sparsity, where the small CNN's curve bends), `tiny` α = 0.5
  over 2 cycles (tests).

Which a preset takes is declared with it (`tf_forget.data.protocols`:
`protocol_registry.TRAININGS[name].iterative`, the α schedule's defaults, or None for torchprune).
`cycles` truncates the sequence to its first n cycles. Standard library only (and
`artifacts.errors`, the protocol registry).
"""

import dataclasses
import math
from typing import Optional, Tuple

from tf_forget.artifacts import errors
from tf_forget.data.protocols import protocol_registry as protocols

SCHEDULES = ("torchprune", "alpha")
# torchprune paper/lost/param/cifar/resnet20.yaml (every CIFAR network of 003 uses the same):
# (type, numIntervals, maxVal, minVal) per spacing block, and retrainIterations.
TORCHPRUNE_SPACING = (
  ("geometric", 2, 0.99, 0.855),
  ("geometric", 58, 0.85, 0.15),
  ("linear", 9, 0.132, 0.02),
)
TORCHPRUNE_RETRAIN_ITERATIONS = 23


class IterativeScheduleError(errors.Error):
  """An invalid iterative protocol or override (one line)."""


def _geomspace(start, stop, num):
  """`numpy.geomspace(start, stop, num)` for positive endpoints (endpoints exact)."""
  if num == 1:
    return [float(start)]
  ratio = math.log(stop / start) / (num - 1)
  out = [start * math.exp(ratio * i) for i in range(num)]
  out[0], out[-1] = float(start), float(stop)
  return out


def _linspace(start, stop, num):
  """`numpy.linspace(start, stop, num)` (endpoints exact)."""
  if num == 1:
    return [float(start)]
  step = (stop - start) / (num - 1)
  out = [start + step * i for i in range(num)]
  out[-1] = float(stop)
  return out


def _array_split_last(values, parts):
  """The last element of each of `numpy.array_split(values, parts)`'s chunks."""
  n = len(values)
  size, extra = divmod(n, parts)
  lasts, start = [], 0
  for i in range(parts):
    start += size + (1 if i < extra else 0)
    lasts.append(values[start - 1])
  return lasts


def torchprune_keep_ratios():
  """The 23 retrain keep ratios of 003's released configs (module docstring), descending."""
  values = []
  for kind, num, hi, lo in TORCHPRUNE_SPACING:
    values.extend(_geomspace(hi, lo, num) if kind == "geometric" else _linspace(hi, lo, num))
  return tuple(round(v, 12) for v in _array_split_last(values, TORCHPRUNE_RETRAIN_ITERATIONS))


def alpha_keep_ratios(alpha, cycles):
  """(α, α², …, α^cycles): a constant keep fraction α per cycle.

  Raises:
    IterativeScheduleError: α not in (0, 1) or cycles < 1.
  """
  if not 0.0 < float(alpha) < 1.0:
    raise IterativeScheduleError(f"keep fraction alpha must be in (0, 1), got {alpha!r}")
  if int(cycles) < 1:
    raise IterativeScheduleError(f"cycles must be >= 1, got {cycles!r}")
  return tuple(round(float(alpha) ** n, 12) for n in range(1, int(cycles) + 1))


@dataclasses.dataclass(frozen=True)
class IterativeSchedule:
  """The iterative prune-retrain protocol.

  Attributes:
    name: the training preset it belongs to.
    keep_ratios: absolute keep ratio after each cycle, strictly decreasing, in (0, 1).
    schedule: "torchprune" or "alpha" (how `keep_ratios` were made; recorded).
    alpha: the constant keep fraction of the "alpha" schedule, None otherwise.
    warmup_epochs: epochs of linear LR warm-up at the start of every retraining (003: 5;
      `tiny`: 0.5, its whole training is 1.5 epochs).
    retrain_steps: steps of each retraining; None = the parent preset's `steps` (003: the
      full original schedule).
    exclude_classifier: WT leaves the classifier's kernel unpruned (default False: WT is
      global over every prunable kernel). FT never prunes the classifier's outputs.
  """

  name: str
  keep_ratios: Tuple[float, ...]
  schedule: str = "torchprune"
  alpha: Optional[float] = None
  warmup_epochs: float = 5
  retrain_steps: Optional[int] = None
  exclude_classifier: bool = False

  @property
  def cycles(self):
    return len(self.keep_ratios)

  def keep_ratio(self, cycle):
    """The absolute keep ratio after `cycle` (1-based).

    Raises:
      IterativeScheduleError: a cycle the protocol does not have.
    """
    if not 1 <= int(cycle) <= self.cycles:
      raise IterativeScheduleError(f"cycle {cycle} is outside the protocol's 1..{self.cycles}")
    return self.keep_ratios[int(cycle) - 1]

  def check(self):
    """Raises `IterativeScheduleError` unless the fields are consistent."""
    if self.schedule not in SCHEDULES:
      raise IterativeScheduleError(
        f"schedule must be one of {', '.join(SCHEDULES)}, got {self.schedule!r}"
      )
    ks = self.keep_ratios
    if not ks or any(not 0.0 < k < 1.0 for k in ks):
      raise IterativeScheduleError(f"keep ratios must be in (0, 1), got {list(ks)}")
    if any(b >= a for a, b in zip(ks, ks[1:])):
      raise IterativeScheduleError(f"keep ratios must decrease cycle after cycle, got {list(ks)}")
    if self.warmup_epochs < 0:
      raise IterativeScheduleError(f"warmup_epochs must be >= 0, got {self.warmup_epochs}")
    if self.retrain_steps is not None and self.retrain_steps < 1:
      raise IterativeScheduleError(f"retrain_steps must be >= 1, got {self.retrain_steps}")
    return self

  def to_json(self):
    d = dataclasses.asdict(self)
    d["keep_ratios"] = [float(k) for k in self.keep_ratios]
    d["warmup_epochs"] = float(self.warmup_epochs)
    return d

  @classmethod
  def from_json(cls, d):
    """The protocol whose `to_json()` is `d`.

    Raises:
      IterativeScheduleError: unknown or missing fields, or a dict that does not round-trip.
    """
    fields = {f.name for f in dataclasses.fields(cls)}
    if set(d) != fields:
      raise IterativeScheduleError(
        f"iterative protocol fields {sorted(d)} differ from {sorted(fields)}"
      )
    proto = cls(**dict(d, keep_ratios=tuple(d["keep_ratios"]))).check()
    if proto.to_json() != d:
      raise IterativeScheduleError(f"iterative protocol {d.get('name')!r} does not round-trip")
    return proto


def get(preset_name, cycles=None, alpha=None, **overrides):
  """The iterative protocol of a training preset, with overrides.

  Args:
    preset_name: the parent preset (`tf_forget.train.presets`); a preset whose training
      protocol declares an α schedule (`protocols.TRAININGS[preset_name].iterative`: `digits`,
      `tiny`) gets it, every other preset the torchprune sequence.
    cycles: keep only the first `cycles` cycles (for "alpha": how many; default the preset's).
    alpha: use a constant keep fraction α per cycle instead (docs/spec.md §6.5 option).
    **overrides: other fields (`warmup_epochs`, `retrain_steps`, `exclude_classifier`); None
      values are ignored.

  Raises:
    IterativeScheduleError: unknown field, or a bad value.
  """
  fields = {f.name for f in dataclasses.fields(IterativeSchedule)} - {
    "name",
    "keep_ratios",
    "schedule",
    "alpha",
  }
  overrides = {k: v for k, v in overrides.items() if v is not None}
  for key in overrides:
    if key not in fields:
      raise IterativeScheduleError(
        f"iterative protocol has no option {key!r} (options: "
        f"cycles, alpha, {', '.join(sorted(fields))})"
      )
  training = protocols.TRAININGS.get(preset_name)
  scaled = training.iterative if training is not None else None
  if scaled is not None:
    overrides.setdefault("warmup_epochs", scaled["warmup_epochs"])
    if alpha is None:
      alpha, cycles = scaled["alpha"], scaled["cycles"] if cycles is None else cycles
  if alpha is not None:
    ks = alpha_keep_ratios(alpha, cycles if cycles is not None else 6)
    proto = IterativeSchedule(preset_name, ks, "alpha", float(alpha), **overrides)
  else:
    ks = torchprune_keep_ratios()
    if cycles is not None:
      if not 1 <= int(cycles) <= len(ks):
        raise IterativeScheduleError(
          f"cycles must be in 1..{len(ks)} for the torchprune schedule, got {cycles}"
        )
      ks = ks[: int(cycles)]
    proto = IterativeSchedule(preset_name, ks, "torchprune", None, **overrides)
  return proto.check()
