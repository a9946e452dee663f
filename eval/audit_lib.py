"""The audit's library function (`eval/audit.py` is the thin binary over it).

Stage 1 of the audit (issue #2): train (or reuse) the dense and pruned populations of a data set.
Later stages — TFLite export, evaluation on the test split and corruptions, the statistics of the
four papers and the report — are added by the export/evaluation, stats, corruption and audit
issues.
"""

import dataclasses
import os
from typing import Optional, Sequence

from tf_forget.train import population
from tf_forget.train import presets


@dataclasses.dataclass(frozen=True)
class AuditConfig:
  """What to audit.

  Attributes:
    dataset: data registry name.
    out: run directory.
    preset: training protocol (default: the data set's, `presets.for_dataset`).
    members: members per variant (default: the preset's).
    variants: trained variants (default: the preset's).
    steps: override of the preset's training steps.
    population_seed: base seed of the population.
    data_dir: tfds data directory.
    image_size: optional (H, W) input resize.
  """
  dataset: str
  out: str
  preset: Optional[str] = None
  members: Optional[int] = None
  variants: Optional[Sequence[str]] = None
  steps: Optional[int] = None
  population_seed: int = 0
  data_dir: Optional[str] = None
  image_size: Optional[Sequence[int]] = None


def run_audit(config, log=print):
  """Runs the audit's stages that exist so far and returns a summary dict.

  Raises:
    ValueError (subclasses): bad data set, preset, variant or output directory.
  """
  dataset_options = {"data_dir": config.data_dir,
                     "image_size": list(config.image_size) if config.image_size else None}
  dataset_options = {k: v for k, v in dataset_options.items() if v is not None}
  pop = population.make_config(
      config.out, config.preset or presets.for_dataset(config.dataset), dataset=config.dataset,
      variants=config.variants, members=config.members, dataset_options=dataset_options,
      population_seed=config.population_seed, steps=config.steps)
  metas = population.train_population(pop, log=log)
  rows = {}
  for meta in metas:
    rows.setdefault(meta["variant"], []).append(meta)
  log(f"\n{'variant':<12} {'members':>7} {'test acc (mean)':>16} {'sparsity':>9}")
  for variant, group in rows.items():
    acc = sum(m["test_accuracy"] for m in group) / len(group)
    sparsity = sum(m["sparsity"]["prunable"] for m in group) / len(group)
    log(f"{variant:<12} {len(group):>7} {acc:>16.4f} {sparsity:>9.4f}")
  log(f"\nartifacts: {os.path.join(config.out, 'members')}")
  return {"run_dir": config.out, "variants": {v: len(g) for v, g in rows.items()}}
