"""The audit's plan: what an audit will make, validated before anything is written
(`eval/audit_lib.py` runs it).

* what to audit (`AuditConfig`, the flags of `eval/audit.py`) is `eval.audit_config`'s.
* `plan(config)`: validates everything (data set, preset and overrides, model, steps, variants,
  formats, corruptions, noise protocol) without writing and returns a `Plan`.
* what a run directory was made with (`<out>/audit.json`) is `eval.run_identity`'s.
* `plan_report`: what an audit will cost (counts per stage, `eval/costs.py`), with no data on disk.

Defaults come from the data set's protocol (`tf_forget.data.protocols`, one entry per data set):
preset, post-training formats, corruptions and severities, robustness members, noise protocol
(SPEC §1.1, §1.5, §2.3, §3.6, §6.7).
"""

import dataclasses
import os

from eval import audit_config
from eval import costs
from eval import deploy
from eval import repair_plan
from eval import user_plan
from tf_forget import executor as executor_lib
from tf_forget.artifacts import names
from tf_forget.artifacts import noise as noise_artifact
from tf_forget.corruptions import published as published_lib
from tf_forget.corruptions import registry as corruption_registry
from tf_forget.corruptions import robust_training as robust_lib
from tf_forget.data import protocols
from tf_forget.data import registry as data_registry
from tf_forget.data import sources
from tf_forget.prune import iterative_schedule
from tf_forget.prune import population as prune_population
from tf_forget.prune import oneshot_schedule
from tf_forget.train import population


ROBUSTNESS = ("generated", "published")


def _protocol(dataset):
  """The data set's protocol; an unknown data set is the data registry's `DataError`."""
  if str(dataset).split(":", 1)[0] in sources.PREFIXES:
    raise audit_config.AuditError(
        f"--dataset={dataset} is your own data: tf_forget trains only on its registered data "
        "sets; audit your model on it with --reference (and --candidate / --compress)")
  if dataset not in data_registry.DATASETS:
    data_registry.get(dataset)  # raises, naming the known data sets
  try:
    return protocols.get(dataset)
  except protocols.ProtocolError as e:
    raise audit_config.AuditError(str(e)) from e


def _corruption_splits(config):
  """Corrupted split names (corruptions x severities; defaults: the protocol's)."""
  protocol = _protocol(config.dataset)
  names = config.corruptions if config.corruptions is not None else protocol.corruptions
  severities = tuple(config.severities or protocol.severities)
  if config.robust_training and config.corruptions is None:  # SPEC §6.8's test distribution
    names = robust_lib.ROBUST_TEST_CORRUPTIONS
    severities = tuple(config.severities or (robust_lib.ROBUST_SEVERITY,))
  names = tuple(corruption_registry.CORRUPTIONS) if names is None else tuple(names)
  for name in names:
    for severity in severities:
      corruption_registry.check(name, severity)
  return [corruption_registry.split_name(n, s) for n in names for s in severities]


def _preset_overrides(config):
  """The preset overrides: `preset_overrides`, `steps`, robust training's corruptions."""
  overrides = dict(config.preset_overrides or {}, steps=config.steps)
  if config.robust_training:
    overrides.setdefault("train_corruptions", robust_lib.ROBUST_TRAIN_CORRUPTIONS)
  return overrides


def _noise_protocol(config):
  """The `NoiseProtocol` of the audit, or None when `noise_levels` is ()."""
  defaults = _protocol(config.dataset)
  eps = config.noise_levels if config.noise_levels is not None else defaults.noise_eps
  if not len(eps):  # pylint: disable=g-explicit-length-test
    return None
  protocol = noise_artifact.NoiseProtocol(
      eps=tuple(float(e) for e in eps),
      draws=config.noise_draws or defaults.noise_draws,
      examples=config.noise_examples or defaults.noise_examples,
      seed=config.population_seed)
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
    dataset: the `base.Dataset` (checked readable).
    robustness_members: the k's evaluated on the corrupted splits and under noise (the
      protocol's first n members, SPEC §1.5, or every member).
    oneshot: one-shot variant names (made from the dense members after training).
    oneshot_schedule: their `tf_forget.prune.oneshot_schedule.OneshotSchedule`, or None.
    robustness: "generated" or "published" (`audit_config.AuditConfig.robustness`).
    published: the data set's `protocols.Published` when "published", else None.
    extra_splits: the published test sets evaluated besides `corrupted` (`cifar10_1`).
    iterative: iterative prune-retrain variant names (`iter_<alg>_c<n>`, every cycle).
    iterative_schedule: their `tf_forget.prune.iterative_schedule.IterativeSchedule`, or None.
    user: the user's `eval.user_plan.UserModels` (then `population` is an
      `user_plan.ImportedPopulation`: imported, not trained), or None.
    repairs: the repaired files `full_int8~<repair>` (issue #29, #37; `names.repair_format`,
      `names.sorted_repairs`); (): none.
    max_repair_size: the "auto" repair's size budget (times the plain full int8 file).
    repair_gates: the gates the "auto" repair searches to (`gates.Gates`, the audit's).
    repair_always: repair every full int8 file, also one that forgot nothing significant
      (`--repair_always`; by default only those, `layer_analysis.repair_needed`, issue #36).
  """
  population: object
  quantizations: tuple
  pruned_quantizations: tuple
  encodings: tuple
  corrupted: tuple
  noise: object
  dataset: object
  robustness_members: tuple = ()
  oneshot: tuple = ()
  oneshot_schedule: object = None
  robustness: str = "generated"
  published: object = None
  extra_splits: tuple = ()
  iterative: tuple = ()
  iterative_schedule: object = None
  user: object = None
  repairs: tuple = ()
  repair_always: bool = False
  max_repair_size: float = audit_config.DEFAULT_MAX_REPAIR_SIZE
  repair_gates: object = None

  @property
  def variants(self):
    """Every member variant: the trained ones, then the one-shot, then the iterative ones."""
    return tuple(self.population.variants) + tuple(self.oneshot) + tuple(self.iterative)


def _split_variants(config, preset_name):
  """(trained variants or None for the preset's, one-shot variants, one-shot protocol,
  iterative variants, iterative protocol)."""
  trained, oneshot, iterative = None, [], []
  if config.variants is not None:
    trained, oneshot, iterative = prune_population.split_variants(config.variants)
  extra_trained, extra, extra_iterative = prune_population.split_variants(
      config.oneshot_variants or ())
  if extra_trained or extra_iterative:
    raise audit_config.AuditError(
        f"not one-shot variants: {', '.join(extra_trained + extra_iterative)}")
  oneshot = list(dict.fromkeys(oneshot + extra))
  proto = None
  if oneshot:
    proto = oneshot_schedule.get(preset_name, **dict(config.oneshot_overrides or {}))
  elif config.oneshot_overrides:
    raise audit_config.AuditError("one-shot options given but no one-shot variant asked for")
  iterative, iter_proto = _iterative(config, preset_name, iterative)
  if (oneshot or iterative) and trained is not None and names.DENSE not in trained:
    trained = [names.DENSE] + trained
  return trained, tuple(oneshot), proto, iterative, iter_proto


def _iterative(config, preset_name, named):
  """(iterative variants: every cycle of each method plus the named ones, their protocol)."""
  for method in config.iterative_methods:
    if method not in names.ITERATIVE_ALGORITHMS:
      raise audit_config.AuditError(f"unknown iterative pruning method {method!r} (known: "
                                    f"{', '.join(names.ITERATIVE_ALGORITHMS)})")
  if not (named or config.iterative_methods):
    if config.iterative_overrides:
      raise audit_config.AuditError(
          "prune-retrain options given but no iterative method asked for")
    return (), None
  proto = iterative_schedule.get(preset_name, **dict(config.iterative_overrides or {}))
  variants = [v.name for v in names.iterative_variants(config.iterative_methods, proto.cycles)]
  for name in named:
    proto.keep_ratio(names.parse_trained(name).cycle)  # a cycle beyond the protocol: error
  return tuple(dict.fromkeys(variants + list(named))), proto


def _check_run_options(config):
  """Checks `deploy_members` and the executor (one that `out` can be shared with)."""
  if config.deploy_members not in ("first", "all"):
    raise audit_config.AuditError(
        f"deploy_members must be 'first' or 'all', got {config.deploy_members!r}")
  if config.executor not in executor_lib.EXECUTORS:
    raise audit_config.AuditError(
        f"executor must be one of {', '.join(sorted(executor_lib.EXECUTORS))}, got "
        f"{config.executor!r}")
  if config.executor != "inline" and str(config.out).startswith("ram://"):
    raise audit_config.AuditError(
        f"{config.out} is in this process's memory, which worker processes do not "
        "share: use --executor=inline, or a shared path (gs://, a shared disk)")


def _formats(config, protocol):
  """(quantizations, pruned quantizations, encodings), checked (defaults: the protocol's)."""
  quantizations = tuple(config.quantizations if config.quantizations is not None
                        else protocol.quantizations)
  pruned_quantizations = tuple(protocol.pruned_quantizations
                               if config.pruned_quantizations is None
                               else config.pruned_quantizations)
  for fmt in quantizations + pruned_quantizations:
    names.check_format(fmt)
  deploy.check_encoding_options(config.deploy_encoding, config.max_latency_ratio)
  encodings = ("plain",) if config.deploy_encoding == "plain" else ("plain", "sparse")
  return quantizations, pruned_quantizations, encodings


def plan(config, check_data=True):
  """Validates everything about `config` without writing anything; returns a `Plan`.

  With `check_data=False` the data set is built (options checked) but not read, so that a plan
  can be made for a data set whose files are not on disk (`plan_report`).

  Raises:
    errors.Error subclasses (AuditError, PopulationError, VariantError, FormatError, DataError,
    CorruptionError, NoiseError, DeployError) with a one-line message.
  """
  _check_run_options(config)
  if config.user is not None:  # the user's own models (issue #28): imported, not trained
    p = user_plan.plan(config, Plan, check_data=check_data)
    _check_gates(config, p.dataset)
    return dataclasses.replace(p, **repair_plan.fields(config, p))
  protocol = _protocol(config.dataset)
  dataset_options = {"data_dir": config.data_dir,
                     "image_size": list(config.image_size) if config.image_size else None}
  dataset_options = {k: v for k, v in dataset_options.items() if v is not None}
  preset_name = config.preset or protocol.preset
  trained, oneshot, oneshot_schedule, iterative, iter_schedule = _split_variants(
      config, preset_name)
  pop = population.make_config(
      config.out, preset_name, dataset=config.dataset,
      model=config.model, variants=trained, members=config.members,
      dataset_options=dataset_options,
      population_seed=config.population_seed,
      **_preset_overrides(config))
  if pop.members < 2:
    raise audit_config.AuditError(
        f"an audit compares populations: members must be >= 2, got {pop.members}")
  quantizations, pruned_quantizations, encodings = _formats(config, protocol)
  corrupted = _corruption_splits(config)
  if config.robustness not in ROBUSTNESS:
    raise audit_config.AuditError(f"robustness must be one of {', '.join(ROBUSTNESS)}, got "
                                  f"{config.robustness!r}")
  published = (published_lib.suites_for(config.dataset) if config.robustness == "published"
               else None)
  noise = _noise_protocol(config)
  # Fail before anything is written if the data set is unknown or not readable.
  dataset = data_registry.get(pop.dataset, **dict(pop.dataset_options))
  if check_data:
    dataset.take(dataset.spec.eval_split, 1)
  extra = ()
  if published is not None:  # every split maps to a loader of the right shape; readable
    extra = tuple(x.name for x in published.extra)
    suite = published_lib.PublishedSuite(dataset, published_lib.split_names(published,
                                                                             corrupted))
    if check_data:
      suite.check_readable()
  _check_gates(config, dataset)
  if (oneshot or iterative) and pop.preset.mixed_precision:
    raise audit_config.AuditError(
        f"preset {pop.preset.name!r} trains under mixed_float16: pruning after "
        "training needs float32 parents")
  p = Plan(pop, quantizations, pruned_quantizations, encodings, tuple(corrupted), noise,
           dataset, robustness_members=robustness_members(protocol, pop.members),
           oneshot=oneshot, oneshot_schedule=oneshot_schedule, robustness=config.robustness,
           published=published, extra_splits=extra, iterative=iterative,
           iterative_schedule=iter_schedule)
  return dataclasses.replace(p, **repair_plan.fields(config, p))


def _check_gates(config, dataset):
  """Refuses a subgroup gate that could never be evaluated (it would fail every variant):
  a task that is not binary (the FNR of a subgroup needs a positive class, SPEC §4.2), or no
  protected attributes; the message says what to give.
  """
  if config.gates.max_subgroup_fnr_increase is None:
    return
  spec, gate = dataset.spec, "--max_subgroup_fnr_increase"
  users = config.user is not None and str(config.dataset).partition(":")[0] in sources.PREFIXES
  if not users and not spec.protected_attributes:
    raise audit_config.AuditError(
        f"{gate} gates protected subgroups, but {spec.name} has no protected attributes "
        "to gate")
  if spec.num_classes != 2:
    raise audit_config.AuditError(
        f"{gate} gates the false-negative rate of protected subgroups, which needs a binary "
        f"task (positive = class 1): {spec.name} has {spec.num_classes} classes")
  if spec.protected_attributes:
    return
  given = ", ".join(spec.attribute_names[:8]) + (", ..." if len(spec.attribute_names) > 8
                                                 else "")
  if spec.attribute_names:
    of = (f"attributes CSV {config.user.attributes}" if config.user.attributes
          else spec.name)
    raise audit_config.AuditError(
        f"{gate} gates protected subgroups: it needs --protected=ATTR[,ATTR] naming "
        f"attributes of {of} (attributes: {given})")
  raise audit_config.AuditError(
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
  `tf_forget.data.protocols`), the population config and the validated plan (`eval.costs`).

  Args:
    config: an `audit_config.AuditConfig`.
    unit_costs: path of a `tf_forget.unit_costs/1` file (default: the committed file measured
      on a 2-core CPU, `eval/unit_costs/`).
    workers: workers the wall-time estimate divides by (default: the config's workers; every
      core for "local"; 1 otherwise).

  Raises:
    errors.Error subclasses (as `plan`), `costs.CostError` for a bad unit-cost file.
  """
  p = plan(config, check_data=False)
  if p.user is not None:
    return user_plan.describe(p)
  pop, spec = p.population, p.dataset.spec
  protocol = _protocol(config.dataset)
  if spec.eval_split not in protocol.split_sizes:
    raise audit_config.AuditError(
        f"protocol of {config.dataset!r} has no size for split {spec.eval_split!r}")
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
    workers = config.workers or (os.cpu_count() if config.executor == "local" else 1)
  return costs.plan_text(inputs, costs.default_unit_costs(unit_costs), workers)
