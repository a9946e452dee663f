"""Populations pruned after training: one-shot and iterative prune-retrain.

What to make, for the audit's member stages (`tf_forget.pipeline.member_stages`, which make it):
  * one-shot: every dense member k pruned by each (algorithm, ratio). `oneshot_configs` lists
    the members k-major (every variant of parent 0, then of parent 1, ...), so a partial run
    already holds complete (algorithm, ratio) sets for the first parents; `gradient_parents`
    the parents whose g a GP or UP member reads (once per parent: docs/spec.md §6.2);
  * iterative (003 Algorithm 1): `iterative_configs` lists cycle-major (every (algorithm, k)
    of cycle 1, then of cycle 2, ...: a cycle needs the one before it).
The dense population must be trained first (`tf_forget.train.population`); the run's
`run.json` lists the pruned variants next to the trained ones (`register_variants`).
"""

from tf_forget.artifacts import names
from tf_forget.artifacts import run_json
from tf_forget.prune import oneshot_member
from tf_forget.prune import retrain
from tf_forget.train import member_config


def split_variants(variants):
  """(trained, one-shot, iterative) variant names of a population's variant list."""
  parsed = [names.parse_trained(v) for v in variants]
  return (
    [v.name for v in parsed if not (v.oneshot or v.iterative)],
    [v.name for v in parsed if v.oneshot],
    [v.name for v in parsed if v.iterative],
  )


def _member(pop, variant, k):
  return member_config.MemberConfig(
    dataset=pop.dataset,
    model=pop.model,
    variant=variant,
    k=k,
    preset=pop.preset,
    dataset_options=pop.dataset_options,
    model_options=pop.model_options,
    population_seed=pop.population_seed,
  )


def oneshot_configs(pop, variants, protocol):
  """`oneshot_member.OneshotConfig`s of `variants` for the population's members, k-major.

  Args:
    pop: the `train.population.PopulationConfig` of the parents.
    variants: one-shot variant names.
    protocol: a `protocol.OneshotSchedule`.
  """
  return [
    oneshot_member.OneshotConfig(member=_member(pop, v, k), protocol=protocol)
    for k in range(pop.members)
    for v in variants
  ]


def gradient_parents(configs):
  """The distinct dense parents (`train.member_config.MemberConfig`) whose g some of `configs` read.

  GP and UP members of a parent, at every ratio, read one g (docs/spec.md §6.2); MP and
  RP read none.
  """
  parents = {}
  for cfg in configs:
    if cfg.needs_gradient:
      parents.setdefault((cfg.parent.variant, cfg.parent.k), cfg.parent)
  return list(parents.values())


def register_variants(pop, variants):
  """Adds `variants` to the run's `run.json` (after `train_population` wrote it)."""
  path = run_json.path(pop.run_dir)
  doc = run_json.read(path)
  doc["variants"] = list(doc.get("variants", [])) + [
    v for v in variants if v not in doc.get("variants", [])
  ]
  run_json.write(path, doc)


def iterative_configs(pop, variants, protocol):
  """`retrain.RetrainConfig`s of `variants` (`iter_<alg>_c<n>`), cycle-major, then k, then alg.

  Every earlier cycle of an asked variant is included (cycle n needs n − 1).

  Raises:
    iterative_schedule.IterativeScheduleError: a cycle beyond the protocol's.
  """
  wanted = {}
  for v in variants:
    parsed = names.parse_trained(v)
    protocol.keep_ratio(parsed.cycle)
    wanted[parsed.algorithm] = max(wanted.get(parsed.algorithm, 0), parsed.cycle)
  return [
    retrain.RetrainConfig(member=_member(pop, names.iterative_name(alg, n), k), protocol=protocol)
    for n in range(1, max(wanted.values(), default=0) + 1)
    for k in range(pop.members)
    for alg in names.ITERATIVE_ALGORITHMS
    if wanted.get(alg, 0) >= n
  ]
