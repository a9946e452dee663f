"""The audit's member-making stages: training, g, one-shot pruning, prune-retrain cycles.

Stage contract and driver: `tf_forget.pipeline.driver`. Each unit is one member (or one parent's g);
its task is the matching `tf_forget.pipeline.tasks` function, which writes the member's artifacts
(docs/artifacts/runs.md). Training and the iterative cycles (003) are the only stages
whose units depend on each other: cycle n of member k needs cycle n − 1, so every cycle is a stage
of its own (`RetrainStage(n)`). The one-shot members (002) read g of their dense parent
(docs/spec.md §6.2, "the same g for GP and UP"), made by the gradient stage before them
so that no two tasks write one g.
"""

from tf_forget.pipeline import driver
from tf_forget.pipeline import tasks
from tf_forget.prune import gradient as prune_gradient
from tf_forget.prune import oneshot_member
from tf_forget.prune import pruned_population
from tf_forget.prune import retrain as retrain_lib
from tf_forget.train import member_files
from tf_forget.train import population
from tf_forget.train import shared_step


def _gpus(ctx):
  """GPUs a TensorFlow task asks for: 1 where the executor has GPUs, else 0."""
  return 1.0 if ctx.num_gpus else 0.0


def _member_task(ctx, key, fn, cost, member_cfg, affinity="", **kwargs):
  return driver.task(
    key,
    fn,
    cost=cost,
    num_gpus=_gpus(ctx),
    affinity=affinity,
    run_dir=ctx.run_dir,
    **kwargs,
    **tasks.member_kwargs(member_cfg),
  )


def _pruned_units(ctx, configs, verb, status, cost, protocol):
  """One unit per pruned member config: task `<verb>_member`, its status `status(run, cfg)`."""
  return [
    driver.Unit(
      checks=[
        driver.Check(
          f"members {cfg.member.variant}/{cfg.member.k}", lambda c=cfg: status(ctx.run_dir, c)
        )
      ],
      task=lambda _, c=cfg: _member_task(
        ctx,
        f"{verb} {c.member.variant}/{c.member.k}",
        f"{verb}_member",
        cost(c),
        c.member,
        protocol=protocol.to_json(),
      ),
    )
    for cfg in configs
  ]


class TrainStage(driver.Stage):
  """Trains every member of the population (`tf_forget.train.member`); writes run.json."""

  name = "train"
  noun = "members already trained"

  def units(self, ctx):
    pop = ctx.plan.population
    return [
      driver.Unit(
        checks=[
          driver.Check(
            f"members {cfg.variant}/{cfg.k}",
            lambda c=cfg: member_files.status(
              member_files.member_dir(pop.run_dir, c.variant, c.k), c
            ),
          )
        ],
        # Members of one configuration share a worker's compiled step (`shared_step`).
        task=lambda _, c=cfg: _member_task(
          ctx,
          f"train {c.variant}/{c.k}",
          "train_member",
          c.preset.steps * c.preset.batch_size,
          c,
          affinity=shared_step.key(c),
        ),
      )
      for cfg in population.training_order(pop)
    ]

  def describe(self, ctx, done, total):
    pop = ctx.plan.population
    return (
      f"population: {pop.dataset} / {pop.model} / preset {pop.preset.name}: "
      f"{len(pop.variants)} variants x {pop.members} members = {total} "
      f"({done} already finished) in {pop.run_dir}"
    )

  def finish(self, ctx, results):
    pop = ctx.plan.population
    population.write_run_file(pop, log=ctx.log)
    ctx.members = [(cfg.variant, cfg.k) for cfg in population.member_configs(pop)]


class GradientStage(driver.Stage):
  """g of every dense parent that a GP or UP one-shot member reads (`prune.gradient`)."""

  name = "gradient"
  noun = "parents' g already computed"

  def units(self, ctx):
    pop, proto = ctx.plan.population, ctx.plan.oneshot_schedule
    configs = pruned_population.oneshot_configs(pop, ctx.plan.oneshot, proto)
    return [
      driver.Unit(
        checks=[
          driver.Check(
            f"gradient {parent.variant}/{parent.k}",
            lambda p=parent: prune_gradient.current(pop.run_dir, p, proto),
          )
        ],
        task=lambda _, p=parent: _member_task(
          ctx,
          f"gradient {p.variant}/{p.k}",
          "oneshot_gradient",
          proto.grad_batches * proto.grad_batch_size,
          p,
          protocol=proto.to_json(),
        ),
      )
      for parent in pruned_population.gradient_parents(configs)
    ]


class PruneStage(driver.Stage):
  """The one-shot members (002) from their dense parents (`prune.oneshot_member`)."""

  name = "prune"
  noun = "one-shot members already made"

  def units(self, ctx):
    proto = ctx.plan.oneshot_schedule
    return _pruned_units(
      ctx,
      pruned_population.oneshot_configs(ctx.plan.population, ctx.plan.oneshot, proto),
      "prune",
      oneshot_member.status,
      lambda c: proto.epochs * proto.batch_size,
      proto,
    )

  def describe(self, ctx, done, total):
    return (
      f"one-shot pruning: {len(ctx.plan.oneshot)} variants x "
      f"{ctx.plan.population.members} parents = {total} ({done} already finished), "
      f"fine-tuning {ctx.plan.oneshot_schedule.epochs} epochs"
    )

  def finish(self, ctx, results):
    pop = ctx.plan.population
    configs = pruned_population.oneshot_configs(pop, ctx.plan.oneshot, ctx.plan.oneshot_schedule)
    pruned_population.register_variants(pop, ctx.plan.oneshot)
    ctx.members += [(c.member.variant, c.member.k) for c in configs]


class RetrainStage(driver.Stage):
  """Cycle `cycle` of every prune-retrain member (003 Algorithm 1; `prune.retrain`)."""

  noun = "prune-retrain cycles already made"

  def __init__(self, cycle):
    self.cycle = cycle
    self.name = f"retrain cycle {cycle}"

  def _configs(self, ctx):
    return pruned_population.iterative_configs(
      ctx.plan.population, ctx.plan.iterative, ctx.plan.iterative_schedule
    )

  def units(self, ctx):
    batch_size = ctx.plan.population.preset.batch_size
    return _pruned_units(
      ctx,
      [c for c in self._configs(ctx) if c.variant.cycle == self.cycle],
      "retrain",
      retrain_lib.status,
      lambda c: c.retrain_steps() * batch_size,
      ctx.plan.iterative_schedule,
    )

  def describe(self, ctx, done, total):
    if self.cycle != 1:
      return None
    configs = self._configs(ctx)
    last = max(c.variant.cycle for c in configs)
    ratios = ", ".join(f"{k:.3g}" for k in ctx.plan.iterative_schedule.keep_ratios[:last])
    return (
      f"prune-retrain: {len(configs)} cycles, keep ratios {ratios}, "
      f"{configs[0].retrain_steps()} retraining steps each"
    )

  def finish(self, ctx, results):
    configs = [c for c in self._configs(ctx) if c.variant.cycle == self.cycle]
    if self.cycle == 1:
      pruned_population.register_variants(
        ctx.plan.population, list(dict.fromkeys(c.member.variant for c in self._configs(ctx)))
      )
    ctx.members += [(c.member.variant, c.member.k) for c in configs]


def oneshot_stages(plan):
  """g of the dense parents, then the one-shot members, if `plan` asks for any (after the
  dense members are trained, or imported: `tf_forget.pipeline.import_stages`)."""
  return [GradientStage(), PruneStage()] if plan.oneshot else []


def stages(plan):
  """The member stages of `plan` (an `tf_forget.pipeline.audit_plan.Plan`), in order."""
  out = [TrainStage()] + oneshot_stages(plan)
  if plan.iterative:
    cycles = {
      c.variant.cycle
      for c in pruned_population.iterative_configs(
        plan.population, plan.iterative, plan.iterative_schedule
      )
    }
    out += [RetrainStage(n) for n in sorted(cycles)]
  return out
