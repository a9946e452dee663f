"""The audit's plan: what an audit will make, validated before anything is written
(`tf_forget/pipeline/audit_lib.py` runs it).

* what to audit is a `tf_forget.config.tree.AuditConfig` (the flags of `eval/audit.py`).
* `plan(config)`: validates everything (data set, preset and overrides, model, steps, variants,
  formats, corruptions, noise protocol) without writing and returns a `Plan`.
* what a run directory was made with (`<out>/audit.json`) is `tf_forget.pipeline.run_identity`'s.
* `plan_report`: what an audit will cost (counts per stage, `tf_forget/pipeline/costs.py`), with no
  data on disk.

Defaults come from the data set's protocol (`tf_forget.data.protocols`, one entry per data set):
preset, post-training formats, corruptions and severities, robustness members, noise protocol
(SPEC §1.1, §1.5, §2.3, §3.6, §6.7).
"""

from __future__ import annotations

import dataclasses
import os
from typing import Optional, Union

from tf_forget.artifacts import names
from tf_forget.artifacts import noise_artifact
from tf_forget.config import tree
from tf_forget.corruptions import corruption_registry
from tf_forget.corruptions import published_suites
from tf_forget.corruptions import robust_training as robust_lib
from tf_forget.data import dataset_api
from tf_forget.data import registry as data_registry
from tf_forget.data import sources
from tf_forget.data.protocols import protocol_registry as protocols
from tf_forget.data.protocols import schema as protocol_schema
from tf_forget.evaluate import deploy
from tf_forget.pipeline import costs
from tf_forget.pipeline import repair_plan
from tf_forget.pipeline import user_plan
from tf_forget.prune import iterative_schedule
from tf_forget.prune import oneshot_schedule
from tf_forget.prune import pruned_population
from tf_forget.report import gates as gates_lib
from tf_forget.train import population


def _protocol(dataset):
  """The data set's protocol; an unknown data set is the data registry's `DataError`."""
  if str(dataset).split(":", 1)[0] in sources.PREFIXES:
    raise tree.AuditError(
        f"--dataset={dataset} is your own data: tf_forget trains only on its registered data "
        "sets; audit your model on it with --reference (and --candidate / --compress)")
  if dataset not in data_registry.DATASETS:
    data_registry.get(dataset)  # raises, naming the known data sets
  try:
    return protocols.get(dataset)
  except protocols.ProtocolError as e:
    raise tree.AuditError(str(e)) from e


def _corruption_splits(protocol, robustness, robust_training):
  """Corrupted split names (corruptions x severities of a `tree.Robustness`; defaults: the
  protocol's, or with robust training SPEC §6.8's test distribution)."""
  names = (robustness.corruptions if robustness.corruptions is not None
           else protocol.corruptions)
  severities = tuple(robustness.severities or protocol.severities)
  if robust_training and robustness.corruptions is None:
    names = robust_lib.ROBUST_TEST_CORRUPTIONS
    severities = tuple(robustness.severities or (robust_lib.ROBUST_SEVERITY,))
  names = tuple(corruption_registry.CORRUPTIONS) if names is None else tuple(names)
  for name in names:
    for severity in severities:
      corruption_registry.check(name, severity)
  return [corruption_registry.split_name(n, s) for n in names for s in severities]


def _preset_overrides(population):
  """The preset overrides of a `tree.Population`: `preset_overrides`, `steps`, robust
  training's corruptions."""
  overrides = dict(population.preset_overrides or {}, steps=population.steps)
  if population.robust_training:
    overrides.setdefault("train_corruptions", robust_lib.ROBUST_TRAIN_CORRUPTIONS)
  return overrides


def _noise_protocol(defaults, noise, seed):
  """The `NoiseProtocol` of a `tree.Noise` (defaults: the data set's protocol `defaults`), or
  None when its levels are ()."""
  eps = noise.levels if noise.levels is not None else defaults.noise_eps
  if not len(eps):  # pylint: disable=g-explicit-length-test
    return None
  protocol = noise_artifact.NoiseProtocol(
      eps=tuple(float(e) for e in eps), draws=noise.draws or defaults.noise_draws,
      examples=noise.examples or defaults.noise_examples, seed=seed)
  protocol.check()
  return protocol


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
      protocol's first n members, SPEC §1.5, or every member).
    oneshot: one-shot variant names (made from the dense members after training).
    oneshot_schedule: their `tf_forget.prune.oneshot_schedule.OneshotSchedule`, or None.
    robustness: "generated" or "published" (`tree.Robustness.source`).
    published: the data set's `protocols.Published` when "published", else None.
    extra_splits: the published test sets evaluated besides `corrupted` (`cifar10_1`).
    iterative: iterative prune-retrain variant names (`iter_<alg>_c<n>`, every cycle).
    iterative_schedule: their `tf_forget.prune.iterative_schedule.IterativeSchedule`, or None.
    user: the user's `tf_forget.config.tree.UserModels` (then `population` is an
      `user_plan.ImportedPopulation`: imported, not trained), or None.
    repairs: the repaired files `full_int8~<repair>` (issue #29, #37; `names.repair_format`,
      `names.sorted_repairs`); (): none.
    max_repair_size: the "auto" repair's size budget (times the plain full int8 file).
    repair_gates: the gates the "auto" repair searches to (`gates.Gates`, the audit's).
    repair_always: repair every full int8 file, also one that forgot nothing significant
      (`--repair_always`; by default only those, `layer_analysis.repair_needed`, issue #36).
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

  @property
  def variants(self):
    """Every member variant: the trained ones, then the one-shot, then the iterative ones."""
    return tuple(self.population.variants) + tuple(self.oneshot) + tuple(self.iterative)


def _split_variants(population, pruning, preset_name):
  """(trained variants or None for the preset's, one-shot variants, one-shot protocol,
  iterative variants, iterative protocol)."""
  trained, oneshot, iterative = None, [], []
  if population.variants is not None:
    trained, oneshot, iterative = pruned_population.split_variants(population.variants)
  extra_trained, extra, extra_iterative = pruned_population.split_variants(
      pruning.oneshot.variants)
  if extra_trained or extra_iterative:
    raise tree.AuditError(
        f"not one-shot variants: {', '.join(extra_trained + extra_iterative)}")
  oneshot = list(dict.fromkeys(oneshot + extra))
  proto = None
  if oneshot:
    proto = oneshot_schedule.get(preset_name, **pruning.oneshot.overrides())
  elif pruning.oneshot.overrides():
    raise tree.AuditError("one-shot options given but no one-shot variant asked for")
  iterative, iter_proto = _iterative(pruning.iterative, preset_name, iterative)
  if (oneshot or iterative) and trained is not None and names.DENSE not in trained:
    trained = [names.DENSE] + trained
  return trained, tuple(oneshot), proto, iterative, iter_proto


def _iterative(iterative, preset_name, named):
  """(iterative variants: every cycle of each method of a `tree.Iterative` plus the named
  ones, their protocol); the methods' names are checked by `tree.AuditConfig.validate`."""
  if not (named or iterative.methods):
    if iterative.overrides():
      raise tree.AuditError("prune-retrain options given but no iterative method asked for")
    return (), None
  proto = iterative_schedule.get(preset_name, **iterative.overrides())
  variants = [v.name for v in names.iterative_variants(iterative.methods, proto.cycles)]
  for name in named:
    proto.keep_ratio(names.parse_trained(name).cycle)  # a cycle beyond the protocol: error
  return tuple(dict.fromkeys(variants + list(named))), proto


def _check_static(config):
  """The checks that need nothing but the config (`tree.AuditConfig.validate`), and an
  executor `out` can be shared with."""
  problems = config.validate()
  if problems:
    raise tree.AuditError(problems[0])
  if config.execution.executor != "inline" and str(config.out).startswith("ram://"):
    raise tree.AuditError(
        f"{config.out} is in this process's memory, which worker processes do not "
        "share: use --executor=inline, or a shared path (gs://, a shared disk)")


def _formats(formats, deployment, protocol):
  """(quantizations, pruned quantizations, encodings) of a `tree.Formats` and a
  `tree.Deployment`, checked (defaults: the protocol's)."""
  quantizations = tuple(formats.quantizations if formats.quantizations is not None
                        else protocol.quantizations)
  pruned_quantizations = tuple(protocol.pruned_quantizations
                               if formats.pruned_quantizations is None
                               else formats.pruned_quantizations)
  for fmt in quantizations + pruned_quantizations:
    names.check_format(fmt)
  deploy.check_encoding_options(deployment.encoding, deployment.max_latency_ratio)
  encodings = ("plain",) if deployment.encoding == "plain" else ("plain", "sparse")
  return quantizations, pruned_quantizations, encodings


def plan(config, check_data=True):
  """Validates everything about `config` without writing anything; returns a `Plan`.

  With `check_data=False` the data set is built (options checked) but not read, so that a plan
  can be made for a data set whose files are not on disk (`plan_report`).

  Raises:
    errors.Error subclasses (AuditError, PopulationError, VariantError, FormatError, DataError,
    CorruptionError, NoiseError, DeployError) with a one-line message.
  """
  _check_static(config)
  if config.user is not None:  # the user's own models (issue #28): imported, not trained
    p = Plan(**user_plan.plan_fields(config, check_data=check_data))
    _check_gates(config.gates, config.user, config.data.dataset, p.dataset)
    return dataclasses.replace(p, **repair_plan.fields(config.repair, config.gates, p))
  data, pop_config = config.data, config.population
  protocol = _protocol(data.dataset)
  dataset_options = {"data_dir": data.data_dir,
                     "image_size": list(data.image_size) if data.image_size else None}
  dataset_options = {k: v for k, v in dataset_options.items() if v is not None}
  preset_name = pop_config.preset or protocol.preset
  trained, oneshot, oneshot_schedule, iterative, iter_schedule = _split_variants(
      pop_config, config.pruning, preset_name)
  pop = population.make_config(
      config.out, preset_name, dataset=data.dataset, model=pop_config.model,
      variants=trained, members=pop_config.members, dataset_options=dataset_options,
      population_seed=pop_config.population_seed, **_preset_overrides(pop_config))
  if pop.members < 2:
    raise tree.AuditError(
        f"an audit compares populations: members must be >= 2, got {pop.members}")
  quantizations, pruned_quantizations, encodings = _formats(config.formats,
                                                            config.deployment, protocol)
  corrupted = _corruption_splits(protocol, config.robustness, pop_config.robust_training)
  source = config.robustness.source
  published = published_suites.suites_for(data.dataset) if source == "published" else None
  noise = _noise_protocol(protocol, config.noise, pop_config.population_seed)
  # Fail before anything is written if the data set is unknown or not readable.
  dataset = data_registry.get(pop.dataset, **dict(pop.dataset_options))
  if check_data:
    dataset.take(dataset.spec.eval_split, 1)
  extra = ()
  if published is not None:  # every split maps to a loader of the right shape; readable
    extra = tuple(x.name for x in published.extra)
    suite = published_suites.PublishedSuite(dataset, published_suites.split_names(published,
                                                                             corrupted))
    if check_data:
      suite.check_readable()
  _check_gates(config.gates, None, data.dataset, dataset)
  if (oneshot or iterative) and pop.preset.mixed_precision:
    raise tree.AuditError(
        f"preset {pop.preset.name!r} trains under mixed_float16: pruning after "
        "training needs float32 parents")
  p = Plan(pop, quantizations, pruned_quantizations, encodings, tuple(corrupted), noise,
           dataset, robustness_members=robustness_members(protocol, pop.members),
           oneshot=oneshot, oneshot_schedule=oneshot_schedule, robustness=source,
           published=published, extra_splits=extra, iterative=iterative,
           iterative_schedule=iter_schedule)
  return dataclasses.replace(p, **repair_plan.fields(config.repair, config.gates, p))


def _check_gates(gates, user, dataset_name, dataset):
  """Refuses a subgroup gate (of the `gates_lib.Gates`) that could never be evaluated (it would
  fail every variant): a task that is not binary (the FNR of a subgroup needs a positive class,
  SPEC §4.2), or no protected attributes; the message says what to give. `user`: the
  `tree.UserModels`, or None.
  """
  if gates.max_subgroup_fnr_increase is None:
    return
  spec, gate = dataset.spec, "--max_subgroup_fnr_increase"
  users = user is not None and str(dataset_name).partition(":")[0] in sources.PREFIXES
  if not users and not spec.protected_attributes:
    raise tree.AuditError(
        f"{gate} gates protected subgroups, but {spec.name} has no protected attributes "
        "to gate")
  if spec.num_classes != 2:
    raise tree.AuditError(
        f"{gate} gates the false-negative rate of protected subgroups, which needs a binary "
        f"task (positive = class 1): {spec.name} has {spec.num_classes} classes")
  if spec.protected_attributes:
    return
  given = ", ".join(spec.attribute_names[:8]) + (", ..." if len(spec.attribute_names) > 8
                                                 else "")
  if spec.attribute_names:
    of = (f"attributes CSV {user.attributes}" if user.attributes
          else spec.name)
    raise tree.AuditError(
        f"{gate} gates protected subgroups: it needs --protected=ATTR[,ATTR] naming "
        f"attributes of {of} (attributes: {given})")
  raise tree.AuditError(
      f"{gate} gates protected subgroups: it needs --attributes=CSV (a column 'path' or 'id', "
      "then one column per attribute) and --protected=ATTR[,ATTR] naming its columns")


def robustness_members(protocol, members):
  """The k's evaluated on corrupted splits and noise: the protocol's first n, or all."""
  n = members if protocol.robustness_members is None else min(protocol.robustness_members,
                                                               members)
  return tuple(range(n))


def plan_report(config, unit_costs=None, workers=None):
  """The audit's cost plan as text (counts per stage and, given unit costs, an estimate).

  Needs no data on disk: the counts come from the protocol of the data set (split sizes,
  `tf_forget.data.protocols`), the population config and the validated plan
  (`tf_forget.pipeline.costs`).

  Args:
    config: a `tree.AuditConfig`.
    unit_costs: path of a `tf_forget.unit_costs/1` file (default: the committed file measured
      on a 2-core CPU, `tf_forget/pipeline/unit_costs/`).
    workers: workers the wall-time estimate divides by (default: the config's workers; every
      core for "local"; 1 otherwise).

  Raises:
    errors.Error subclasses (as `plan`), `costs.CostError` for a bad unit-cost file.
  """
  p = plan(config, check_data=False)
  if p.user is not None:
    return user_plan.describe(p)
  pop, spec = p.population, p.dataset.spec
  protocol = _protocol(config.data.dataset)
  if spec.eval_split not in protocol.split_sizes:
    raise tree.AuditError(
        f"protocol of {config.data.dataset!r} has no size for split {spec.eval_split!r}")
  n_dense = sum(v == names.DENSE for v in pop.variants)
  finetune_images = 0
  if p.oneshot:
    n_train = protocol.split_sizes.get("train", 0)
    finetune_images = p.oneshot_schedule.epochs * (
        n_train - -(-n_train // p.oneshot_schedule.validation_every))
  retrain_images = 0
  if p.iterative:
    retrain_images = (p.iterative_schedule.retrain_steps or pop.preset.steps) * \
        pop.preset.batch_size
  inputs = costs.PlanInputs(
      dataset=pop.dataset, model=pop.model, image_shape=tuple(spec.image_shape),
      members=pop.members, dense_variants=n_dense,
      pruned_variants=len(p.variants) - n_dense, oneshot_variants=len(p.oneshot),
      finetune_images=finetune_images,
      retrain_variants=len(p.iterative), retrain_images=retrain_images,
      steps=pop.preset.steps, batch_size=pop.preset.batch_size,
      quantizations=p.quantizations, pruned_quantizations=p.pruned_quantizations,
      sparse="sparse" in p.encodings, corrupted_splits=len(p.corrupted),
      robustness_members=len(p.robustness_members),
      published=p.published is not None,
      published_examples=sum(x.examples for x in p.published.extra) if p.published else 0,
      noise_eps=tuple(p.noise.eps) if p.noise is not None else (),
      noise_draws=p.noise.draws if p.noise is not None else 0,
      noise_examples=p.noise.examples if p.noise is not None else 0,
      eval_size=protocol.split_sizes[spec.eval_split])
  if workers is None:
    execution = config.execution
    workers = execution.workers or (os.cpu_count() if execution.executor == "local" else 1)
  return costs.plan_text(inputs, costs.default_unit_costs(unit_costs), workers)
