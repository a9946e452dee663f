"""Populations pruned after training: one-shot (issue #16) and iterative prune-retrain (#17).

One-shot: every dense member k pruned by each (algorithm, ratio).

`oneshot_configs(pop, variants, protocol)` lists the members to make, k-major (every variant of
parent 0, then of parent 1, ...), so a partial run already holds complete (algorithm, ratio)
sets for the first parents. `prune_population` first computes g of every parent a GP or UP
member reads (`gradient.ensure`, once per parent: SPEC §6.2, issue #26), then makes every
member that is not current, printing members done / total and an ETA, and logs
`redo members <v>/<k>: <why>` for a member that exists but is stale (its parent retrained, its
g changed, its protocol changed, its file replaced).
The dense population must be trained first (`tf_forget.train.population`); the run's
`run.json` lists the one-shot variants next to the trained ones (`register_variants`).

Iterative (003 Algorithm 1): `iterative_configs` lists cycle-major (every (algorithm, k) of
cycle 1, then of cycle 2, ...: a cycle needs the one before it), and `retrain_population`
makes each cycle that is not current with the same progress lines.
"""

import time

from tf_forget.artifacts import fileio
from tf_forget.artifacts import layout
from tf_forget.artifacts import names
from tf_forget.prune import gradient
from tf_forget.prune import iterative_protocol
from tf_forget.prune import member as member_lib
from tf_forget.prune import protocol as protocol_lib
from tf_forget.prune import retrain
from tf_forget.train import member as train_member
from tf_forget.train import population as train_population


def split_variants(variants):
  """(trained, one-shot, iterative) variant names of a population's variant list."""
  parsed = [names.parse_trained(v) for v in variants]
  return ([v.name for v in parsed if not (v.oneshot or v.iterative)],
          [v.name for v in parsed if v.oneshot], [v.name for v in parsed if v.iterative])


def _member(pop, variant, k):
  return train_member.MemberConfig(
      dataset=pop.dataset, model=pop.model, variant=variant, k=k, preset=pop.preset,
      dataset_options=pop.dataset_options, model_options=pop.model_options,
      population_seed=pop.population_seed)


def oneshot_configs(pop, variants, protocol):
  """`member.OneshotConfig`s of `variants` for the population's members, k-major.

  Args:
    pop: the `train.population.PopulationConfig` of the parents.
    variants: one-shot variant names.
    protocol: a `protocol.OneshotProtocol`.
  """
  return [member_lib.OneshotConfig(member=_member(pop, v, k), protocol=protocol)
          for k in range(pop.members) for v in variants]


def default_protocol(pop, **overrides):
  """The one-shot protocol of the population's preset, with overrides (`protocol.get`)."""
  return protocol_lib.get(pop.preset.name, **overrides)


def gradient_parents(configs):
  """The distinct dense parents (`train.member.MemberConfig`) whose g some of `configs` read.

  GP and UP members of a parent, at every ratio, read one g (SPEC §6.2, issue #26); MP and
  RP read none.
  """
  parents = {}
  for cfg in configs:
    if cfg.needs_gradient:
      parents.setdefault((cfg.parent.variant, cfg.parent.k), cfg.parent)
  return list(parents.values())


def ensure_gradients(pop, configs, protocol, log=print):
  """Computes g of every finished parent that `configs` read and whose g is not current.

  Run before the members' statuses, so a g redone with the same bytes (a garbage file) leaves
  its members current. A parent that is not finished is skipped: its members then fail with
  `member.PruneMemberError` naming it.
  """
  for parent in gradient_parents(configs):
    if train_member.status(layout.member_dir(pop.run_dir, parent.variant, parent.k), parent):
      gradient.ensure(pop.run_dir, parent, protocol, log)


def register_variants(pop, variants):
  """Adds `variants` to the run's `run.json` (after `train_population` wrote it)."""
  path = layout.run_file(pop.run_dir)
  doc = fileio.read_json(path, "run config")
  doc["variants"] = list(doc.get("variants", [])) + [
      v for v in variants if v not in doc.get("variants", [])]
  fileio.write_json(path, doc)


def prune_population(pop, variants, protocol, log=print):
  """Makes every one-shot member of `variants` that is not current.

  Args:
    pop: the parents' `PopulationConfig` (the dense members must be finished).
    variants: one-shot variant names (`oneshot_<alg>_r<r>`).
    protocol: a `protocol.OneshotProtocol`.
    log: callable for progress lines.

  Returns:
    Member metadata dicts in `oneshot_configs` order.
  """
  todo = oneshot_configs(pop, variants, protocol)
  if not todo:
    return []
  register_variants(pop, variants)
  ensure_gradients(pop, todo, protocol, log)
  states = [member_lib.status(pop.run_dir, c) for c in todo]
  done = sum(bool(s) for s in states)
  total = len(todo)
  log(f"one-shot pruning: {len(variants)} variants x {pop.members} parents = {total} "
      f"({done} already finished), fine-tuning {protocol.epochs} epochs")
  results, times = [], []
  for cfg, state in zip(todo, states):
    if state:
      results.append(member_lib.prune_member(cfg, pop.run_dir))
      continue
    if state.reason != "missing":
      log(f"redo members {cfg.member.variant}/{cfg.member.k}: {state.reason}")
    t0 = time.time()
    meta = member_lib.prune_member(cfg, pop.run_dir)
    times.append(time.time() - t0)
    done += 1
    eta = (total - done) * sum(times) / len(times)
    log(f"[{done}/{total}] {cfg.member.variant} k={cfg.member.k}: test accuracy "
        f"{meta['parent']['test_accuracy']:.4f} -> pruned "
        f"{meta['pruning']['pruned_test_accuracy']:.4f} -> fine-tuned "
        f"{meta['test_accuracy']:.4f} (epoch {meta['pruning']['finetune']['best_epoch']}), "
        f"{times[-1]:.1f} s; ETA {train_population.format_seconds(eta)}")
    results.append(meta)
  return results


def iterative_configs(pop, variants, protocol):
  """`retrain.RetrainConfig`s of `variants` (`iter_<alg>_c<n>`), cycle-major, then k, then alg.

  Every earlier cycle of an asked variant is included (cycle n needs n − 1).

  Raises:
    iterative_protocol.IterativeProtocolError: a cycle beyond the protocol's.
  """
  wanted = {}
  for v in variants:
    parsed = names.parse_trained(v)
    protocol.keep_ratio(parsed.cycle)
    wanted[parsed.algorithm] = max(wanted.get(parsed.algorithm, 0), parsed.cycle)
  return [retrain.RetrainConfig(member=_member(pop, names.iterative_name(alg, n), k),
                                protocol=protocol)
          for n in range(1, max(wanted.values(), default=0) + 1)
          for k in range(pop.members)
          for alg in names.ITERATIVE_ALGORITHMS if wanted.get(alg, 0) >= n]


def default_iterative_protocol(pop, **overrides):
  """The iterative protocol of the population's preset (`iterative_protocol.get`)."""
  return iterative_protocol.get(pop.preset.name, **overrides)


def retrain_population(pop, variants, protocol, log=print):
  """Makes every prune-retrain cycle of `variants` that is not current.

  Args:
    pop: the parents' `PopulationConfig` (the dense members must be finished).
    variants: iterative variant names (`iter_<alg>_c<n>`).
    protocol: an `iterative_protocol.IterativeProtocol`.
    log: callable for progress lines.

  Returns:
    Member metadata dicts in `iterative_configs` order.
  """
  todo = iterative_configs(pop, variants, protocol)
  if not todo:
    return []
  register_variants(pop, list(dict.fromkeys(c.member.variant for c in todo)))
  states = [retrain.status(pop.run_dir, c) for c in todo]
  done, total = sum(bool(s) for s in states), len(todo)
  log(f"prune-retrain: {total} cycles ({done} already finished), keep ratios "
      f"{', '.join(f'{k:.3g}' for k in protocol.keep_ratios[:max(c.variant.cycle for c in todo)])}"
      f", {todo[0].retrain_steps()} retraining steps each")
  results, times = [], []
  for cfg, state in zip(todo, states):
    if state:
      results.append(retrain.retrain_member(cfg, pop.run_dir))
      continue
    if state.reason != "missing":
      log(f"redo members {cfg.member.variant}/{cfg.member.k}: {state.reason}")
    t0 = time.time()
    meta = retrain.retrain_member(cfg, pop.run_dir)
    times.append(time.time() - t0)
    done += 1
    eta = (total - done) * sum(times) / len(times)
    p = meta["pruning"]
    log(f"[{done}/{total}] {cfg.member.variant} k={cfg.member.k}: keep {p['keep_ratio']:.3g} "
        f"(prune ratio {p['prune_ratio']:.3f}), test accuracy {meta['parent']['test_accuracy']:.4f}"
        f" -> pruned {p['pruned_test_accuracy']:.4f} -> retrained {meta['test_accuracy']:.4f}, "
        f"{times[-1]:.1f} s; ETA {train_population.format_seconds(eta)}")
    results.append(meta)
  return results
