"""The plan of an audit of a population tf_forget trains: its steps (`STEPS`,
`tf_forget.pipeline.plan_steps`), each reading its sections of the configuration.

Defaults come from the data set's protocol (`tf_forget.data.protocols`, one entry per data set):
preset, post-training formats, corruptions and severities, robustness members, noise protocol
(docs/spec.md §1.1, §1.5, §2.3, §3.6, §6.7). In order, a refusal naming the first problem:

1. `protocol`: the data set is a registered one (the user's own data is audited with
   `--reference`, `tf_forget.pipeline.user_plan`);
2. `variants`: trained, one-shot and iterative variants and their schedules;
3. `population_config`: the population (preset, overrides, members >= 2);
4. `formats`, 5. `corrupted`, 6. `published`, 7. `noise`: what the members are exported to and
   evaluated on;
8. `dataset`: the data set is built and, unless `check_data=False`, readable;
9. the gates (`gate_plan`), 10. `parents`: pruning after training needs float32 parents,
11. `robustness_members`, 12. the repairs (`repair_plan`).
"""

from tf_forget.artifacts import names
from tf_forget.artifacts import noise_artifact
from tf_forget.config import tree
from tf_forget.corruptions import corruption_registry
from tf_forget.corruptions import published_suites
from tf_forget.corruptions import robust_training as robust_lib
from tf_forget.data import registry as data_registry
from tf_forget.data import sources
from tf_forget.data.protocols import protocol_registry as protocols
from tf_forget.evaluate import deploy
from tf_forget.pipeline import gate_plan
from tf_forget.pipeline import plan_steps
from tf_forget.pipeline import repair_plan
from tf_forget.prune import iterative_schedule
from tf_forget.prune import oneshot_schedule as oneshot_lib
from tf_forget.prune import pruned_population
from tf_forget.train import population as population_lib


def protocol_of(dataset):
  """The protocol of the data set named `dataset`; an unknown data set is the data registry's
  `DataError`."""
  if str(dataset).split(":", 1)[0] in sources.PREFIXES:
    raise tree.AuditError(
      f"--dataset={dataset} is your own data: tf_forget trains only on its registered data "
      "sets; audit your model on it with --reference (and --candidate / --compress)"
    )
  if dataset not in data_registry.DATASETS:
    data_registry.get(dataset)  # raises, naming the known data sets
  try:
    return protocols.get(dataset)
  except protocols.ProtocolError as e:
    raise tree.AuditError(str(e)) from e


def protocol(data):
  """Step: the `tree.Data` section's data set protocol."""
  return {"protocol": protocol_of(data.dataset)}


def variants(population, pruning, protocol):
  """Step: (trained variants or None for the preset's, one-shot variants and schedule,
  iterative variants and schedule) of the `tree.Population` and `tree.Pruning` sections."""
  preset_name = population.preset or protocol.preset
  trained, oneshot, iterative = None, [], []
  if population.variants is not None:
    trained, oneshot, iterative = pruned_population.split_variants(population.variants)
  extra_trained, extra, extra_iterative = pruned_population.split_variants(pruning.oneshot.variants)
  if extra_trained or extra_iterative:
    raise tree.AuditError(f"not one-shot variants: {', '.join(extra_trained + extra_iterative)}")
  oneshot = list(dict.fromkeys(oneshot + extra))
  schedule = None
  if oneshot:
    schedule = oneshot_lib.get(preset_name, **pruning.oneshot.overrides())
  elif pruning.oneshot.overrides():
    raise tree.AuditError("one-shot options given but no one-shot variant asked for")
  iterative, iter_schedule = _iterative(pruning.iterative, preset_name, iterative)
  if (oneshot or iterative) and trained is not None and names.DENSE not in trained:
    trained = [names.DENSE] + trained
  return {
    "preset_name": preset_name,
    "trained": trained,
    "oneshot": tuple(oneshot),
    "oneshot_schedule": schedule,
    "iterative": iterative,
    "iterative_schedule": iter_schedule,
  }


def _iterative(iterative, preset_name, named):
  """(iterative variants: every cycle of each method of a `tree.Iterative` plus the named
  ones, their protocol); the methods' names are checked by `tree.AuditConfig.validate`."""
  if not (named or iterative.methods):
    if iterative.overrides():
      raise tree.AuditError("prune-retrain options given but no iterative method asked for")
    return (), None
  proto = iterative_schedule.get(preset_name, **iterative.overrides())
  found = [v.name for v in names.iterative_variants(iterative.methods, proto.cycles)]
  for name in named:
    proto.keep_ratio(names.parse_trained(name).cycle)  # a cycle beyond the protocol: error
  return tuple(dict.fromkeys(found + list(named))), proto


def population_config(out, data, population, preset_name, trained):
  """Step: the `population.PopulationConfig` of the `tree.Population` section (its preset
  overrides, `steps`, robust training's corruptions); an audit compares >= 2 members."""
  overrides = dict(population.preset_overrides or {}, steps=population.steps)
  if population.robust_training:
    overrides.setdefault("train_corruptions", robust_lib.ROBUST_TRAIN_CORRUPTIONS)
  dataset_options = {
    "data_dir": data.data_dir,
    "image_size": list(data.image_size) if data.image_size else None,
  }
  pop = population_lib.make_config(
    out,
    preset_name,
    dataset=data.dataset,
    model=population.model,
    variants=trained,
    members=population.members,
    dataset_options={k: v for k, v in dataset_options.items() if v is not None},
    population_seed=population.population_seed,
    **overrides,
  )
  if pop.members < 2:
    raise tree.AuditError(f"an audit compares populations: members must be >= 2, got {pop.members}")
  return {"population": pop}


def formats(formats, deployment, protocol):
  """Step: (quantizations, pruned quantizations, encodings) of the `tree.Formats` and
  `tree.Deployment` sections, checked (defaults: the protocol's)."""
  quantizations = tuple(
    formats.quantizations if formats.quantizations is not None else protocol.quantizations
  )
  pruned_quantizations = tuple(
    protocol.pruned_quantizations
    if formats.pruned_quantizations is None
    else formats.pruned_quantizations
  )
  for fmt in quantizations + pruned_quantizations:
    names.check_format(fmt)
  deploy.check_encoding_options(deployment.encoding, deployment.max_sparse_latency_ratio)
  encodings = ("plain",) if deployment.encoding == "plain" else ("plain", "sparse")
  return {
    "quantizations": quantizations,
    "pruned_quantizations": pruned_quantizations,
    "encodings": encodings,
  }


def corruption_splits(protocol, robustness, robust_training):
  """Corrupted split names (corruptions x severities of a `tree.Robustness`; defaults: the
  protocol's, or with robust training docs/spec.md §6.8's test distribution)."""
  found = robustness.corruptions if robustness.corruptions is not None else protocol.corruptions
  severities = tuple(robustness.severities or protocol.severities)
  if robust_training and robustness.corruptions is None:
    found = robust_lib.ROBUST_TEST_CORRUPTIONS
    severities = tuple(robustness.severities or (robust_lib.ROBUST_SEVERITY,))
  found = tuple(corruption_registry.CORRUPTIONS) if found is None else tuple(found)
  for name in found:
    for severity in severities:
      corruption_registry.check(name, severity)
  return [corruption_registry.split_name(n, s) for n in found for s in severities]


def corrupted(robustness, population, protocol):
  """Step: the corrupted splits of the `tree.Robustness` section (`corruption_splits`)."""
  return {"corrupted": tuple(corruption_splits(protocol, robustness, population.robust_training))}


def published(robustness, data):
  """Step: where the corrupted splits come from ("generated" or "published") and, when
  published, the data set's `protocols.Published` suites."""
  source = robustness.source
  suites = published_suites.suites_for(data.dataset) if source == "published" else None
  return {"robustness": source, "published": suites}


def noise_protocol(defaults, noise, seed):
  """The `NoiseProtocol` of a `tree.Noise` (defaults: the data set's protocol `defaults`), or
  None when its levels are ()."""
  eps = noise.levels if noise.levels is not None else defaults.noise_eps
  if not len(eps):
    return None
  found = noise_artifact.NoiseProtocol(
    eps=tuple(float(e) for e in eps),
    draws=noise.draws or defaults.noise_draws,
    examples=noise.examples or defaults.noise_examples,
    seed=seed,
  )
  found.check()
  return found


def noise(noise, population, protocol):
  """Step: the `noise_artifact.NoiseProtocol` of the `tree.Noise` section, or None."""
  return {"noise": noise_protocol(protocol, noise, population.population_seed)}


def dataset(population, published, corrupted, check_data):
  """Step: the population's data set (`population`: the `PopulationConfig` made), built and,
  with `check_data`, readable, every published split included."""
  found = data_registry.get(population.dataset, **dict(population.dataset_options))
  if check_data:
    found.take(found.spec.eval_split, 1)
  extra = ()
  if published is not None:  # every split maps to a loader of the right shape; readable
    extra = tuple(x.name for x in published.extra)
    suite = published_suites.PublishedSuite(
      found, published_suites.split_names(published, corrupted)
    )
    if check_data:
      suite.check_readable()
  return {"dataset": found, "extra_splits": extra}


def parents(population, oneshot, iterative):
  """Step: pruning after training needs float32 parents (not a mixed_float16 preset)."""
  if (oneshot or iterative) and population.preset.mixed_precision:
    raise tree.AuditError(
      f"preset {population.preset.name!r} trains under mixed_float16: pruning after "
      "training needs float32 parents"
    )


def robustness_members(protocol, population):
  """Step: the k's evaluated on corrupted splits and noise: the protocol's first n, or all."""
  return {"robustness_members": members_of(protocol, population.members)}


def members_of(protocol, members):
  """The k's of `members` evaluated on corrupted splits and noise (docs/spec.md §1.5)."""
  n = members if protocol.robustness_members is None else min(protocol.robustness_members, members)
  return tuple(range(n))


Step = plan_steps.Step
STEPS = (
  Step(protocol, reads=("data",), makes=("protocol",)),
  Step(
    variants,
    reads=("population", "pruning"),
    needs=("protocol",),
    makes=(
      "preset_name",
      "trained",
      "oneshot",
      "oneshot_schedule",
      "iterative",
      "iterative_schedule",
    ),
  ),
  Step(
    population_config,
    reads=("out", "data", "population"),
    needs=("preset_name", "trained"),
    makes=("population",),
  ),
  Step(
    formats,
    reads=("formats", "deployment"),
    needs=("protocol",),
    makes=("quantizations", "pruned_quantizations", "encodings"),
  ),
  Step(corrupted, reads=("robustness", "population"), needs=("protocol",), makes=("corrupted",)),
  Step(published, reads=("robustness", "data"), makes=("robustness", "published")),
  Step(noise, reads=("noise", "population"), needs=("protocol",), makes=("noise",)),
  Step(
    dataset,
    needs=("population", "published", "corrupted", "check_data"),
    makes=("dataset", "extra_splits"),
  ),
  gate_plan.STEP,
  Step(parents, needs=("population", "oneshot", "iterative")),
  Step(robustness_members, needs=("protocol", "population"), makes=("robustness_members",)),
  repair_plan.STEP,
)
