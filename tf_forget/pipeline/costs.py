"""What an audit will cost: counts per stage from plain values, and an estimate from unit costs.

`eval/audit.py --plan` prints it for any data set, with or without its data on disk (the
counts come from the data set's protocol, `tf_forget.data.protocols`, and the population
config; `audit_plan.plan_report`). No TensorFlow here.

Counts (`counts`):
  * train: members (variants x K) and training images (optimizer steps x batch, per member;
    a one-shot member is its fine-tuning: epochs x the fine-tuning examples);
  * export: TFLite conversions: dense members x (1 + quantizations) + pruned members x
    (1 + pruned_quantizations), and a sparse twin of every pruned file when the encodings
    include "sparse";
  * corruptions: corrupted images = corrupted splits (corruptions x severities) x eval split;
  * evaluation: inferences = every file x eval split (clean), + the plain files of the robustness
    members x corrupted splits x eval split, + the same files x noise (levels x draws x
    min(noise examples, eval split); a level ε = 0 runs one draw).
Estimate (`estimate`): seconds per stage = count x the unit cost measured by
`benchmarks/unit_costs.py` (a `tf_forget.unit_costs/1` JSON file, e.g.
`tf_forget/pipeline/unit_costs/cpu_2core_avx512.json`) for the model and format; formats the file
did not measure cost as float32; a model or resolution measured at another input size is scaled by
the pixel count (said in the notes). Seconds are one worker's (the measured thread count); the wall
time for W workers is the sum / W, ignoring stage barriers and the time a stage waits for the
previous one. A model the file does not hold gets no estimate ("no measured cost for <model>").
"""

import dataclasses
import os
from typing import Optional, Sequence, Tuple

from tf_forget.artifacts import errors
from tf_forget.artifacts import fileio

SCHEMA = "tf_forget.unit_costs/1"
STAGES = ("train", "export", "corruptions", "evaluation")
FLOAT32 = "float32"


class CostError(errors.Error):
  """An unreadable or malformed unit-cost file (one line)."""


@dataclasses.dataclass(frozen=True)
class PlanInputs:
  """The plain values a cost plan depends on.

  Attributes:
    dataset, model: names.
    image_shape: (H, W, C) of the model input.
    members: members per variant (K).
    dense_variants: trained variants that are dense (0 or 1).
    pruned_variants: member variants that are pruned (gradual and one-shot).
    oneshot_variants: how many of `pruned_variants` are one-shot (made by fine-tuning).
    finetune_images: images one one-shot member's fine-tuning trains on (epochs x examples).
    retrain_variants: how many of `pruned_variants` are prune-retrain cycles (003).
    retrain_images: images one cycle's retraining trains on (steps x batch).
    steps, batch_size: optimizer steps and batch of one member.
    quantizations, pruned_quantizations: formats besides float32 of dense / pruned members.
    sparse: whether pruned files get a sparse-encoded twin.
    corrupted_splits: corrupted splits (corruptions x severities).
    published: the corrupted splits are read from a published suite (`--robustness=published`):
      nothing is generated.
    published_examples: examples of the published test sets evaluated besides them (CIFAR-10.1,
      ImageNet-A), summed.
    robustness_members: members per variant evaluated on corrupted splits and noise (at most K).
    noise_eps: noise levels (() = none).
    noise_draws, noise_examples: draws per level, examples at most.
    eval_size: examples of the eval split.
  """

  dataset: str
  model: str
  image_shape: Tuple[int, int, int]
  members: int
  dense_variants: int
  pruned_variants: int
  steps: int
  batch_size: int
  quantizations: Tuple[str, ...] = ()
  pruned_quantizations: Tuple[str, ...] = ()
  sparse: bool = False
  corrupted_splits: int = 0
  published: bool = False
  published_examples: int = 0
  robustness_members: int = 0
  noise_eps: Sequence[float] = ()
  noise_draws: int = 0
  noise_examples: int = 0
  eval_size: int = 0
  oneshot_variants: int = 0
  finetune_images: int = 0
  retrain_variants: int = 0
  retrain_images: int = 0


def _add(d, key, n):
  if n:
    d[key] = d.get(key, 0) + n


def counts(p):
  """Per-stage counts of a `PlanInputs` (a pure function of its values).

  Returns:
    {"train": {"members", "images_per_member", "images"},
     "export": {"files", "conversions", "by_format": {fmt: conversions}},
     "corruptions": {"splits", "images"},
     "evaluation": {"clean", "corrupted", "noise", "inferences", "robustness_files",
                    "by_format": {fmt: inferences}}}.
  """
  k_dense, k_pruned = p.dense_variants * p.members, p.pruned_variants * p.members
  members = k_dense + k_pruned
  dense_formats = (FLOAT32,) + tuple(p.quantizations)
  pruned_formats = (FLOAT32,) + tuple(p.pruned_quantizations)
  twins = 2 if p.sparse else 1
  conversions, clean = {}, {}
  for fmt in dense_formats:
    _add(conversions, fmt, k_dense)
  for fmt in pruned_formats:
    _add(conversions, fmt, k_pruned * twins)
  plain_files = k_dense * len(dense_formats) + k_pruned * len(pruned_formats)
  files = k_dense * len(dense_formats) + k_pruned * len(pruned_formats) * twins
  for fmt, n in conversions.items():
    _add(clean, fmt, n * p.eval_size)
  # Robustness: the plain files of the robustness members only.
  robust = {}
  r = min(int(p.robustness_members), p.members)
  r_dense, r_pruned = p.dense_variants * r, p.pruned_variants * r
  for fmt in dense_formats:
    _add(robust, fmt, r_dense)
  for fmt in pruned_formats:
    _add(robust, fmt, r_pruned)
  robustness_files = sum(robust.values())
  zero_levels = sum(1 for e in p.noise_eps if float(e) == 0.0)
  per_noise_file = (
    ((len(p.noise_eps) - zero_levels) * p.noise_draws + zero_levels)
    * min(p.noise_examples, p.eval_size)
    if len(p.noise_eps)
    else 0
  )
  by_format = dict(clean)
  for fmt, n in robust.items():
    _add(
      by_format, fmt, n * (p.corrupted_splits * p.eval_size + p.published_examples + per_noise_file)
    )
  corrupted = robustness_files * (p.corrupted_splits * p.eval_size + p.published_examples)
  generated = 0 if p.published else p.corrupted_splits
  noise = robustness_files * per_noise_file
  k_oneshot = p.oneshot_variants * p.members
  k_retrain = p.retrain_variants * p.members
  trained_images = (members - k_oneshot - k_retrain) * p.steps * p.batch_size
  return {
    "train": {
      "members": members,
      "images_per_member": p.steps * p.batch_size,
      "oneshot_members": k_oneshot,
      "finetune_images_per_member": p.finetune_images,
      "retrain_members": k_retrain,
      "retrain_images_per_member": p.retrain_images,
      "images": (trained_images + k_oneshot * p.finetune_images + k_retrain * p.retrain_images),
    },
    "export": {
      "files": files,
      "plain_files": plain_files,
      "conversions": files,
      "by_format": conversions,
    },
    "corruptions": {"splits": generated, "images": generated * p.eval_size},
    "evaluation": {
      "clean": files * p.eval_size,
      "corrupted": corrupted,
      "noise": noise,
      "inferences": files * p.eval_size + corrupted + noise,
      "robustness_files": robustness_files,
      "by_format": by_format,
    },
  }


def load_unit_costs(path):
  """Reads a `tf_forget.unit_costs/1` JSON file (no pickles).

  Raises:
    CostError: missing, unreadable, not JSON or not of the schema (one line).
  """
  try:
    data = fileio.read_record(path, SCHEMA, "unit-cost file")
  except errors.ReadError as e:
    raise CostError(str(e)) from e
  models = data.get("models")
  corruption = data.get("corruption_seconds_per_image")
  if not isinstance(models, dict) or not isinstance(corruption, dict):
    raise CostError(f"{path}: needs 'models' and 'corruption_seconds_per_image' objects")
  for name, m in models.items():
    ok = (
      isinstance(m, dict)
      and _number(m.get("train_seconds_per_image"))
      and _shape(m.get("image_shape"))
      and all(
        isinstance(m.get(key), dict) and _number(m[key].get(FLOAT32))
        for key in ("convert_seconds", "infer_seconds_per_image")
      )
    )
    if not ok:
      raise CostError(
        f"{path}: model {name!r} needs image_shape, train_seconds_per_image and "
        "float32 convert_seconds / infer_seconds_per_image numbers"
      )
  if not all(_number(v) for v in corruption.values()):
    raise CostError(f"{path}: corruption_seconds_per_image values must be numbers")
  return data


def _number(v):
  return isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0


def _shape(v):
  return isinstance(v, list) and len(v) == 3 and all(isinstance(x, int) and x > 0 for x in v)


def _pixels(shape):
  return shape[0] * shape[1] * shape[2]


def estimate(c, p, unit_costs, workers=1):
  """Seconds per stage from counts `c` of `PlanInputs` `p` and a unit-cost dict.

  Returns:
    {"seconds": {stage: seconds or None}, "total": worker-seconds (None if a stage has none),
     "wall": total / workers, "workers": workers, "notes": [str]}.
  """
  notes, seconds = [], {}
  model = unit_costs["models"].get(p.model)
  if model is None:
    notes.append(f"no measured cost for {p.model}")
    seconds["train"] = seconds["export"] = seconds["evaluation"] = None
  else:
    scale = _pixels(p.image_shape) / _pixels(model["image_shape"])
    if abs(scale - 1) > 1e-9:
      notes.append(
        f"{p.model} measured at {_shape_key(model['image_shape'])}, scaled by pixels "
        f"to {_shape_key(p.image_shape)} (x{scale:.3g})"
      )
    seconds["train"] = c["train"]["images"] * model["train_seconds_per_image"] * scale
    convert, infer = model["convert_seconds"], model["infer_seconds_per_image"]
    guessed = sorted(set(c["export"]["by_format"]) - set(convert))
    if guessed:
      notes.append(f"formats costed as float32 (not measured): {', '.join(guessed)}")
    seconds["export"] = sum(
      n * convert.get(f, convert[FLOAT32]) for f, n in c["export"]["by_format"].items()
    )
    seconds["evaluation"] = sum(
      n * infer.get(f, infer[FLOAT32]) * scale for f, n in c["evaluation"]["by_format"].items()
    )
  if c["corruptions"]["images"]:
    table = unit_costs["corruption_seconds_per_image"]
    key = _shape_key(p.image_shape)
    if key in table:
      seconds["corruptions"] = c["corruptions"]["images"] * table[key]
    elif table:
      near = min(table, key=lambda k: abs(_pixels(_parse_key(k)) - _pixels(p.image_shape)))
      ratio = _pixels(p.image_shape) / _pixels(_parse_key(near))
      notes.append(f"corruptions measured at {near}, scaled by pixels to {key} (x{ratio:.3g})")
      seconds["corruptions"] = c["corruptions"]["images"] * table[near] * ratio
    else:
      notes.append("no measured cost for corruptions")
      seconds["corruptions"] = None
  else:
    seconds["corruptions"] = 0.0
  known = [s for s in seconds.values() if s is not None]
  total = sum(known) if len(known) == len(seconds) else None
  workers = max(1, int(workers))
  return {
    "seconds": seconds,
    "total": total,
    "wall": None if total is None else total / workers,
    "workers": workers,
    "notes": notes,
  }


def _shape_key(shape):
  return "x".join(str(int(v)) for v in shape)


def _parse_key(key):
  return tuple(int(v) for v in key.split("x"))


def human_seconds(s):
  """'12 s', '3.4 min', '1.2 h', '5.6 d', '2.1 y'."""
  if s is None:
    return "n/a"
  for unit, size in (("y", 365 * 86400), ("d", 86400), ("h", 3600), ("min", 60)):
    if s >= size:
      return f"{s / size:.1f} {unit}"
  return f"{s:.0f} s" if s >= 1 else f"{s:.2f} s"


def human_count(n, what=""):
  """'950', '3.4 k', '1.2 M', '5.6 G' (+ ' what')."""
  text = (
    f"{n:,}"
    if n < 1000
    else next(
      f"{n / size:.1f} {unit}"
      for unit, size in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3))
      if n >= size
    )
  )
  return f"{text} {what}".rstrip()


def format_plan(p, c, est=None, unit_costs_path=None):
  """The printed plan: one row per stage (counts, estimate), totals and notes."""
  lines = [
    f"audit plan: {p.dataset}, model {p.model}, input {_shape_key(p.image_shape)}, "
    f"eval split {human_count(p.eval_size, 'images')}"
  ]
  tr, ex, co, ev = (c[s] for s in STAGES)
  trained = tr["members"] - tr["oneshot_members"] - tr.get("retrain_members", 0)
  train_row = (
    f"{trained} members x {human_count(tr['images_per_member'])} images "
    f"({p.steps} steps x {p.batch_size})"
  )
  if tr["oneshot_members"]:
    train_row += (
      f" + {tr['oneshot_members']} one-shot fine-tunings x "
      f"{human_count(tr['finetune_images_per_member'])} images"
    )
  if tr.get("retrain_members"):
    train_row += (
      f" + {tr['retrain_members']} prune-retrain cycles x "
      f"{human_count(tr['retrain_images_per_member'])} images"
    )
  rows = [
    ("train", f"{train_row} = {human_count(tr['images'], 'images')}"),
    (
      "export",
      f"{ex['conversions']} conversions ("
      + ", ".join(f"{f} {n}" for f, n in ex["by_format"].items())
      + ")",
    ),
    (
      "corruptions",
      f"{co['splits']} splits x {human_count(p.eval_size)} = {human_count(co['images'], 'images')}",
    ),
    (
      "evaluation",
      f"{human_count(ev['inferences'], 'inferences')} (clean "
      f"{human_count(ev['clean'])}, corrupted {human_count(ev['corrupted'])}, "
      f"noise {human_count(ev['noise'])}; {ev['robustness_files']} robustness "
      "files)",
    ),
  ]
  for stage, text in rows:
    cost = ""
    if est is not None:
      cost = (
        human_seconds(est["seconds"][stage])
        if est["seconds"][stage] is not None
        else ("no measured cost")
      )
    lines.append(f"  {stage:<12} {cost:>16}  {text}")
  if est is not None:
    shown = unit_costs_path or "unit costs"
    if os.sep + os.path.join("eval", "unit_costs") + os.sep in shown:  # the committed file
      shown = os.path.join("eval", "unit_costs", os.path.basename(shown))
    lines.append(f"  {'total':<12} {human_seconds(est['total']):>16}  worker-time ({shown})")
    lines.append(
      f"  {'wall':<12} {human_seconds(est['wall']):>16}  with {est['workers']} "
      "worker(s): total / workers, ignoring stage barriers"
    )
    lines.extend(f"  note: {n}" for n in est["notes"])
  else:
    lines.append("  (no estimate: give --unit_costs=<file>)")
  return "\n".join(lines)


def plan_text(p, unit_costs_path=None, workers=1):
  """`format_plan` of `p`, with an estimate if a unit-cost file is given.

  Raises:
    CostError: a bad unit-cost file.
  """
  c = counts(p)
  est = None
  if unit_costs_path:
    est = estimate(c, p, load_unit_costs(unit_costs_path), workers)
  return format_plan(p, c, est, unit_costs_path)


def default_unit_costs(path: Optional[str] = None):
  """`path`, or the committed CPU file next to this module if it exists (else None)."""
  if path:
    return path
  default = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "unit_costs", "cpu_2core_avx512.json"
  )
  return default if os.path.exists(default) else None
