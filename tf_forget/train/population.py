"""Populations: K independently trained members per variant (000 §2.2, SPEC §1.3, §1.5).

`train_population` writes `<run>/run.json` (the population's config) and trains every member
that is not finished yet, printing members done / total and an ETA; re-running skips finished
members and resumes a member killed midway from its last checkpoint. Members are trained
k-major (all variants of member 0, then of member 1, ...), so a partial run already holds
complete pairs for every variant.
"""

import dataclasses
import json
import os
import time
from typing import Mapping, Sequence

import tensorflow as tf

from tf_forget.io import atomic
from tf_forget.train import member as member_lib
from tf_forget.train import presets
from tf_forget.train import variants as variants_lib

RUN_FILE = "run.json"
RUN_SCHEMA = "tf_forget.run/1"


class PopulationError(ValueError):
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
    population_seed: base seed (SPEC §1.3).
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
    return json.loads(json.dumps({"dataset": self.dataset, "model": self.model, "preset": self.preset.to_json(),
            "dataset_options": dict(self.dataset_options),
            "model_options": dict(self.model_options),
            "population_seed": int(self.population_seed)}))


def make_config(run_dir, preset_name=presets.DEFAULT_PRESET, dataset=None, model=None,
                variants=None, members=None, dataset_options=None, model_options=None,
                population_seed=0, **preset_overrides):
  """Builds a validated `PopulationConfig` from a preset and overrides.

  Raises:
    PopulationError / presets.PresetError / variants_lib.VariantError: invalid values.
  """
  preset = presets.get(preset_name, **preset_overrides)
  if variants is None:
    names = [v.name for v in variants_lib.population_variants(preset.sparsities)]
  else:
    names = [variants_lib.parse(v).name for v in variants]
  if len(set(names)) != len(names):
    raise PopulationError(f"duplicate variants in {names}")
  k = preset.members if members is None else int(members)
  if k < 1:
    raise PopulationError(f"members must be >= 1, got {k}")
  return PopulationConfig(
      run_dir=run_dir, preset=preset, dataset=dataset or preset.dataset,
      model=model or preset.model, variants=tuple(names), members=k,
      dataset_options=dict(dataset_options or {}), model_options=dict(model_options or {}),
      population_seed=int(population_seed))


def member_configs(config):
  """All member configs, k-major."""
  return [
      member_lib.MemberConfig(
          dataset=config.dataset, model=config.model, variant=v, k=k, preset=config.preset,
          dataset_options=config.dataset_options, model_options=config.model_options,
          population_seed=config.population_seed)
      for k in range(config.members) for v in config.variants
  ]


def _check_run_file(config):
  """Writes run.json, or checks that an existing one describes the same population."""
  path = os.path.join(config.run_dir, RUN_FILE)
  identity = config.identity()
  if tf.io.gfile.exists(path):
    old = atomic.read_json(path)
    for key, value in identity.items():
      if old.get(key) != value:
        raise PopulationError(f"{config.run_dir} holds a population with a different {key}; "
                              "use another run directory")
    variants_all = list(old.get("variants", []))
    variants_all += [v for v in config.variants if v not in variants_all]
    members = max(int(old.get("members", 0)), config.members)
  else:
    variants_all, members = list(config.variants), config.members
  atomic.write_json(path, dict(identity, schema=RUN_SCHEMA, variants=variants_all,
                               members=members))


def _fmt(seconds):
  seconds = int(round(seconds))
  return f"{seconds // 3600}h{seconds // 60 % 60:02d}m" if seconds >= 3600 else \
      f"{seconds // 60}m{seconds % 60:02d}s"


def train_population(config, log=print):
  """Trains every unfinished member of the population.

  Args:
    config: a `PopulationConfig`.
    log: callable for progress lines.

  Returns:
    List of member metadata dicts, in `member_configs` order.
  """
  try:
    tf.io.gfile.makedirs(config.run_dir)
  except tf.errors.OpError as e:
    raise PopulationError(f"cannot create run directory {config.run_dir}: {e.message}") from e
  _check_run_file(config)
  todo = member_configs(config)
  total = len(todo)
  done = sum(member_lib.is_finished(
      member_lib.member_dir(config.run_dir, m.variant, m.k)) for m in todo)
  log(f"population: {config.dataset} / {config.model} / preset {config.preset.name}: "
      f"{len(config.variants)} variants x {config.members} members = {total} "
      f"({done} already finished) in {config.run_dir}")
  results, trained_times = [], []
  for cfg in todo:
    directory = member_lib.member_dir(config.run_dir, cfg.variant, cfg.k)
    if member_lib.is_finished(directory):
      results.append(member_lib.train_member(cfg, directory))
      continue
    t0 = time.time()
    log(f"[{done + 1}/{total}] training {cfg.variant} k={cfg.k} (seed {cfg.seed})")
    meta = member_lib.train_member(cfg, directory, log=log)
    trained_times.append(time.time() - t0)
    done += 1
    eta = (total - done) * sum(trained_times) / len(trained_times)
    log(f"[{done}/{total}] {cfg.variant} k={cfg.k}: test accuracy {meta['test_accuracy']:.4f}, "
        f"sparsity {meta['sparsity']['prunable']:.4f} (target {meta['sparsity']['target']}), "
        f"{trained_times[-1]:.1f} s; ETA {_fmt(eta)}")
    results.append(meta)
  log(f"population complete: {total} members in {os.path.join(config.run_dir, 'members')}")
  return results
