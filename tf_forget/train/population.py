"""Populations: K independently trained members per variant (000 §2.2, docs/spec.md §1.3, §1.5).

`train_population` writes `<run>/run.json` (the population's config) and trains every member
that is not finished yet, printing members done / total and an ETA; re-running skips finished
members and resumes a member killed midway from its last checkpoint. A member whose
`model.keras` no longer has the sha256 its metadata records (replaced, truncated) or whose
config changed is trained again, with a log line saying why (`member_files.status`).

`make_config` validates everything a population needs before anything is written (preset and
overrides, model registry name, variants, steps a multiple of the checkpoint interval) and
`check_run_dir` checks an existing `run.json` without writing: the audit calls both before it
writes anything. Members are trained
k-major (all variants of member 0, then of member 1, ...), so a partial run already holds
complete pairs for every variant.
"""

import dataclasses
import json
import os
import time
from typing import Mapping, Sequence

from tf_forget.artifacts import errors
from tf_forget.artifacts import filesystem
from tf_forget.artifacts import layout
from tf_forget.artifacts import names
from tf_forget.artifacts import run_json
from tf_forget.cli import status
from tf_forget.models import model_registry
from tf_forget.train import member as member_lib
from tf_forget.train import member_config
from tf_forget.train import member_files
from tf_forget.train import presets

RUN_FILE = layout.RUN_FILE


class PopulationError(errors.Error):
  """A population config that is invalid or conflicts with the run directory."""


@dataclasses.dataclass(frozen=True)
class PopulationConfig:
  """A population: the same protocol for every member.

  Attributes:
    run_dir: output directory.
    preset: the training protocol (`presets.Preset`).
    dataset: data registry name (default: the preset's).
    model: model registry name (default: the preset's).
    variants: trained variant names (`dense`, `prune_<t>`).
    members: K, members per variant.
    dataset_options: data builder options.
    model_options: model builder options.
    population_seed: base seed (docs/spec.md §1.3).
  """

  run_dir: str
  preset: presets.Preset
  dataset: str
  model: str
  variants: Sequence[str]
  members: int
  dataset_options: Mapping[str, object] = dataclasses.field(default_factory=dict)
  model_options: Mapping[str, object] = dataclasses.field(default_factory=dict)
  population_seed: int = 0

  def identity(self):
    """What must match for two configs to describe the same population (JSON-normalised)."""
    return json.loads(
      json.dumps(
        {
          "dataset": self.dataset,
          "model": self.model,
          "preset": self.preset.to_json(),
          "dataset_options": dict(self.dataset_options),
          "model_options": dict(self.model_options),
          "population_seed": int(self.population_seed),
        }
      )
    )


def make_config(
  run_dir,
  preset_name=presets.DEFAULT_PRESET,
  dataset=None,
  model=None,
  variants=None,
  members=None,
  dataset_options=None,
  model_options=None,
  population_seed=0,
  **preset_overrides,
):
  """Builds a validated `PopulationConfig` from a preset and overrides.

  Raises:
    PopulationError / names.VariantError: invalid values (preset errors are raised as
      `PopulationError`): an unknown preset, field or model, steps not a multiple of
      `checkpoint_every`, members < 1, duplicate variants.
  """
  try:
    preset = presets.get(preset_name, **preset_overrides)
  except presets.PresetError as e:
    raise PopulationError(str(e)) from e
  if preset.steps % preset.checkpoint_every:
    raise PopulationError(
      f"steps={preset.steps} is not a multiple of checkpoint_every="
      f"{preset.checkpoint_every} (preset {preset.name!r})"
    )
  model = model or preset.model
  if model not in model_registry.MODELS:
    raise PopulationError(
      f"unknown model {model!r} (known: {', '.join(sorted(model_registry.MODELS))})"
    )
  if variants is None:
    chosen = [v.name for v in names.population_variants(preset.sparsities)]
  else:
    chosen = [names.parse_trained(v).name for v in variants]
  if len(set(chosen)) != len(chosen):
    raise PopulationError(f"duplicate variants in {chosen}")
  pruned = [n for n in chosen if n != names.DENSE]
  if preset.mixed_precision and pruned:
    raise PopulationError(
      f"preset {preset.name!r} trains under mixed_float16, which only dense members support: "
      f"tfmot's pruning misses its sparsity target under it (measured 0.4999 of 0.5); "
      f"train {', '.join(pruned)} with a float32 preset"
    )
  k = preset.members if members is None else int(members)
  if k < 1:
    raise PopulationError(f"members must be >= 1, got {k}")
  return PopulationConfig(
    run_dir=run_dir,
    preset=preset,
    dataset=dataset or preset.dataset,
    model=model,
    variants=tuple(chosen),
    members=k,
    dataset_options=dict(dataset_options or {}),
    model_options=dict(model_options or {}),
    population_seed=int(population_seed),
  )


def member_configs(config):
  """All member configs, k-major."""
  return [
    member_config.MemberConfig(
      dataset=config.dataset,
      model=config.model,
      variant=v,
      k=k,
      preset=config.preset,
      dataset_options=config.dataset_options,
      model_options=config.model_options,
      population_seed=config.population_seed,
    )
    for k in range(config.members)
    for v in config.variants
  ]


def training_order(config):
  """The member configs in the order they train: grouped by variant, k ascending.

  The members of one configuration in turn share a process's compiled training step
  (`tf_forget.train.shared_step`, which keeps one), so a process given them one after another
  traces it once rather than once per member.
  """
  return sorted(member_configs(config), key=lambda m: config.variants.index(m.variant))


def _read_run_file(path, log):
  """The existing run.json dict, or None if there is none or it is unreadable (then redone).

  A run.json that is not a JSON object of its schema (truncated, zeroed, garbage:
  `run_json.read`) is redone like any other unreadable artifact: it only records the
  population's identity, which the audit has already checked against `audit.json`, and the
  members' own metadata carry their lineage.
  """
  if not filesystem.exists(path):
    return None
  try:
    return run_json.read(path)
  except errors.ReadError as e:
    if log is not None:
      log(f"redo {layout.RUN_FILE}: {errors.one_line(e, 200)}")
    return None


def check_run_dir(config, log=None):
  """Checks an existing run.json against `config` without writing; returns the new run.json.

  Args:
    config: a `PopulationConfig`.
    log: optional callable(str) for the "redo run.json: why" line of an unreadable run.json.

  Returns:
    The run.json dict to write (variants and members merged with an existing one's).

  Raises:
    PopulationError: run.json describes another population.
  """
  path = run_json.path(config.run_dir)
  identity = config.identity()
  old = _read_run_file(path, log)
  if old is not None:
    for key, value in identity.items():
      if old.get(key) != value:
        raise PopulationError(
          f"{config.run_dir} holds a population with a different {key}; use another run directory"
        )
    variants_all = list(old.get("variants", []))
    variants_all += [v for v in config.variants if v not in variants_all]
    members = max(int(old.get("members", 0)), config.members)
  else:
    variants_all, members = list(config.variants), config.members
  return dict(identity, schema=run_json.SCHEMA, variants=variants_all, members=members)


def format_seconds(seconds):
  seconds = int(round(seconds))
  return (
    f"{seconds // 3600}h{seconds // 60 % 60:02d}m"
    if seconds >= 3600
    else f"{seconds // 60}m{seconds % 60:02d}s"
  )


def write_run_file(config, log=print):
  """Checks an existing run.json (`check_run_dir`) and writes the population's, merged.

  Raises:
    PopulationError: run.json of another population; errors.WriteError (one line).
  """
  run_doc = check_run_dir(config, log=log)
  filesystem.makedirs(config.run_dir)
  run_json.write(run_json.path(config.run_dir), run_doc)


def train_population(config, log=print):
  """Trains every unfinished member of the population.

  Args:
    config: a `PopulationConfig`.
    log: callable for progress lines.

  Returns:
    List of member metadata dicts, in `member_configs` order.

  Raises:
    PopulationError: run.json of another population; errors.WriteError: the run directory,
      a checkpoint or a member cannot be written (one line).
  """
  write_run_file(config, log=log)
  todo = training_order(config)
  total = len(todo)
  states = {
    (m.variant, m.k): member_files.status(
      member_files.member_dir(config.run_dir, m.variant, m.k), m
    )
    for m in todo
  }
  done = sum(bool(st) for st in states.values())
  log(
    f"population: {config.dataset} / {config.model} / preset {config.preset.name}: "
    f"{len(config.variants)} variants x {config.members} members = {total} "
    f"({done} already finished) in {config.run_dir}"
  )
  results, trained_times = {}, []
  status.begin("populations", total)
  status.advance(done)
  for cfg in todo:
    directory = member_files.member_dir(config.run_dir, cfg.variant, cfg.k)
    state = states[(cfg.variant, cfg.k)]
    if state:
      results[(cfg.variant, cfg.k)] = member_lib.train_member(cfg, directory)
      continue
    if state.reason != "missing":
      log(f"redo members {cfg.variant}/{cfg.k}: {state.reason}")
    t0 = time.time()
    log(f"[{done + 1}/{total}] training {cfg.variant} k={cfg.k} (seed {cfg.seed})")
    meta = member_lib.train_member(cfg, directory, log=log)
    trained_times.append(time.time() - t0)
    done += 1
    status.advance()
    eta = (total - done) * sum(trained_times) / len(trained_times)
    log(
      f"[{done}/{total}] {cfg.variant} k={cfg.k}: test accuracy {meta['test_accuracy']:.4f}, "
      f"sparsity {meta['sparsity']['prunable']:.4f} (target {meta['sparsity']['target']}), "
      f"{trained_times[-1]:.1f} s; ETA {format_seconds(eta)}"
    )
    results[(cfg.variant, cfg.k)] = meta
  log(f"population complete: {total} members in {os.path.join(config.run_dir, 'members')}")
  return [results[(m.variant, m.k)] for m in member_configs(config)]
