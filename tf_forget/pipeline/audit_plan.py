"""The audit's plan: what an audit will make, validated before anything is written
(`tf_forget/pipeline/audit_lib.py` runs it).

* what to audit is a `tf_forget.config.tree.AuditConfig` (the flags of `eval/audit.py`).
* `plan(config)`: validates everything (data set, preset and overrides, model, steps, variants,
  formats, corruptions, noise protocol) without writing and returns a `Plan`: the static checks,
  then the plan's steps (`tf_forget.pipeline.plan_steps`), those of a trained audit
  (`tf_forget.pipeline.trained_plan`) or of the user's own files (`tf_forget.pipeline.user_plan`).
* what a run directory was made with (`<out>/audit.json`) is `tf_forget.pipeline.run_identity`'s.
* `plan_report`: what an audit will cost (counts per stage, `tf_forget/pipeline/costs.py`), with no
  data on disk.

A trained audit's defaults come from the data set's protocol (`tf_forget.data.protocols`, one
entry per data set; `trained_plan`).
"""

from __future__ import annotations

import dataclasses
import os
from typing import Optional, Union

from tf_forget.artifacts import names
from tf_forget.artifacts import noise_artifact
from tf_forget.config import tree
from tf_forget.data import dataset_api
from tf_forget.data.protocols import schema as protocol_schema
from tf_forget.pipeline import costs
from tf_forget.pipeline import plan_steps
from tf_forget.pipeline import trained_plan
from tf_forget.pipeline import user_costs
from tf_forget.pipeline import user_plan
from tf_forget.policy import gates as gates_lib
from tf_forget.prune import iterative_schedule
from tf_forget.prune import oneshot_schedule
from tf_forget.train import population


@dataclasses.dataclass(frozen=True)
class Plan:
  """A validated audit: what `run_audit` will make (nothing written yet).

  Attributes:
    population: the `population.PopulationConfig`.
    quantizations, pruned_quantizations: formats besides float32 of dense / pruned members.
    encodings: weight encodings of pruned members' files ("plain", maybe "sparse").
    corrupted: corrupted split names (`glass_blur@3`).
    noise: the `noise_artifact.NoiseProtocol`, or None.
    dataset: the `dataset_api.Dataset` (checked readable).
    robustness_members: the k's evaluated on the corrupted splits and under noise (the
      protocol's first n members, docs/spec.md §1.5, or every member).
    oneshot: one-shot variant names (made from the dense members after training).
    oneshot_schedule: their `tf_forget.prune.oneshot_schedule.OneshotSchedule`, or None.
    robustness: "generated" or "published" (`tree.Robustness.source`).
    published: the data set's `protocols.Published` when "published", else None.
    extra_splits: the published test sets evaluated besides `corrupted` (`cifar10_1`).
    iterative: iterative prune-retrain variant names (`iter_<alg>_c<n>`, every cycle).
    iterative_schedule: their `tf_forget.prune.iterative_schedule.IterativeSchedule`, or None.
    user: the user's `tf_forget.config.tree.UserModels` (then `population` is an
      `user_plan.ImportedPopulation`: imported, not trained), or None.
    repairs: the repaired files `full_int8~<repair>` (`names.repair_format`,
      `names.sorted_repairs`); (): none.
    max_repair_size: the "auto" repair's size budget (times the plain full int8 file).
    repair_gates: the gates the "auto" repair searches to (`gates.Gates`, the audit's).
    repair_always: repair every full int8 file, also one that forgot nothing significant
      (`--repair_always`; by default only those, `layer_analysis.repair_needed`).
    estimate: an audit of the user's files: its `user_costs.Estimate` (from the files' MACs
      and the number of images), or None; `estimate_note`: why there is none.
  """

  population: Union[population.PopulationConfig, user_plan.ImportedPopulation]
  quantizations: tuple
  pruned_quantizations: tuple
  encodings: tuple
  corrupted: tuple
  noise: Optional[noise_artifact.NoiseProtocol]
  dataset: dataset_api.Dataset
  robustness_members: tuple = ()
  oneshot: tuple = ()
  oneshot_schedule: Optional[oneshot_schedule.OneshotSchedule] = None
  robustness: str = "generated"
  published: Optional[protocol_schema.Published] = None
  extra_splits: tuple = ()
  iterative: tuple = ()
  iterative_schedule: Optional[iterative_schedule.IterativeSchedule] = None
  user: Optional[tree.UserModels] = None
  repairs: tuple = ()
  repair_always: bool = False
  max_repair_size: float = tree.DEFAULT_MAX_REPAIR_SIZE
  repair_gates: Optional[gates_lib.Gates] = None
  estimate: Optional[user_costs.Estimate] = None
  estimate_note: str = ""

  @property
  def variants(self):
    """Every member variant: the trained ones, then the one-shot, then the iterative ones."""
    return tuple(self.population.variants) + tuple(self.oneshot) + tuple(self.iterative)


def _check_static(config):
  """The checks that need nothing but the config (`tree.AuditConfig.validate`), and an
  executor `out` can be shared with."""
  problems = config.validate()
  if problems:
    raise tree.AuditError(problems[0])
  if config.execution.executor != "inline" and str(config.out).startswith("ram://"):
    raise tree.AuditError(
      f"{config.out} is in this process's memory, which worker processes do not "
      "share: use --executor=inline, or a shared path (gs://, a shared disk)"
    )


def plan(config, check_data=True):
  """Validates everything about `config` without writing anything; returns a `Plan`.

  The static checks (`tree.AuditConfig.validate`) first, then the plan's steps
  (`tf_forget.pipeline.plan_steps`): `user_plan.STEPS` for the user's own models,
  else `trained_plan.STEPS`. With `check_data=False` the data set is built (options checked)
  but not read, so that a plan can be made for a data set whose files are not on disk
  (`plan_report`).

  Raises:
    errors.Error subclasses (AuditError, PopulationError, VariantError, FormatError, DataError,
    CorruptionError, NoiseError, DeployError) with a one-line message.
  """
  _check_static(config)
  steps = trained_plan.STEPS if config.user is None else user_plan.STEPS
  made = plan_steps.run(steps, config, check_data=check_data)
  return Plan(**{f.name: made[f.name] for f in dataclasses.fields(Plan) if f.name in made})


def plan_report(config, unit_costs=None, workers=None):
  """The audit's cost plan as text (`describe` of `plan(config, check_data=False)`).

  Needs no data on disk: the counts come from the protocol of the data set (split sizes,
  `tf_forget.data.protocols`), the population config and the validated plan
  (`tf_forget.pipeline.costs`).

  Args:
    config: a `tree.AuditConfig`.
    unit_costs, workers: as `describe`.

  Raises:
    errors.Error subclasses (as `plan`), `costs.CostError` for a bad unit-cost file.
  """
  return describe(plan(config, check_data=False), config.execution, unit_costs, workers)


def describe(p, execution, unit_costs=None, workers=None):
  """The cost plan of the plan `p` as text: counts per stage and, given unit costs, an
  estimate (an audit of the user's files: `user_plan.describe`).

  Args:
    p: a `Plan`.
    execution: the `tree.Execution` section (the workers of the wall-time estimate).
    unit_costs: path of a `tf_forget.unit_costs/1` file (default: the committed file measured
      on a 2-core CPU, `tf_forget/pipeline/unit_costs/`).
    workers: workers the wall-time estimate divides by (default: the config's workers; every
      core for "local"; 1 otherwise).

  Raises:
    `costs.CostError` for a bad unit-cost file; AuditError: no size for the eval split.
  """
  if p.user is not None:
    return user_plan.describe(p)
  pop, spec = p.population, p.dataset.spec
  protocol = trained_plan.protocol_of(pop.dataset)
  if spec.eval_split not in protocol.split_sizes:
    raise tree.AuditError(f"protocol of {pop.dataset!r} has no size for split {spec.eval_split!r}")
  n_dense = sum(v == names.DENSE for v in pop.variants)
  finetune_images = 0
  if p.oneshot:
    n_train = protocol.split_sizes.get("train", 0)
    finetune_images = p.oneshot_schedule.epochs * (
      n_train - -(-n_train // p.oneshot_schedule.validation_every)
    )
  retrain_images = 0
  if p.iterative:
    retrain_images = (
      p.iterative_schedule.retrain_steps or pop.preset.steps
    ) * pop.preset.batch_size
  inputs = costs.PlanInputs(
    dataset=pop.dataset,
    model=pop.model,
    image_shape=tuple(spec.image_shape),
    members=pop.members,
    dense_variants=n_dense,
    pruned_variants=len(p.variants) - n_dense,
    oneshot_variants=len(p.oneshot),
    finetune_images=finetune_images,
    retrain_variants=len(p.iterative),
    retrain_images=retrain_images,
    steps=pop.preset.steps,
    batch_size=pop.preset.batch_size,
    quantizations=p.quantizations,
    pruned_quantizations=p.pruned_quantizations,
    sparse="sparse" in p.encodings,
    corrupted_splits=len(p.corrupted),
    robustness_members=len(p.robustness_members),
    published=p.published is not None,
    published_examples=sum(x.examples for x in p.published.extra) if p.published else 0,
    noise_eps=tuple(p.noise.eps) if p.noise is not None else (),
    noise_draws=p.noise.draws if p.noise is not None else 0,
    noise_examples=p.noise.examples if p.noise is not None else 0,
    eval_size=protocol.split_sizes[spec.eval_split],
  )
  if workers is None:
    workers = execution.workers or (os.cpu_count() if execution.executor == "local" else 1)
  return costs.plan_text(inputs, costs.default_unit_costs(unit_costs), workers)
