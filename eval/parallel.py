"""Runs the audit's stages as executor tasks (issue #15): the driver side of `eval.tasks`.

Each function builds the tasks of one stage — train one member, export one member's files,
generate a chunk of corrupted splits, evaluate one member's files on a chunk of splits, a
member's Keras reference predictions, a member's files under noise — and runs them on a
`tf_forget.executor.Executor` (local process pool or Ray). The tasks write the stage's
artifacts; afterwards the audit runs each stage's ordinary sequential pass, which finds every
artifact current, checks it, and writes what needs the whole population (agreement tables,
the report). Work that is already current (by the same lineage checks the sequential passes
make) is not submitted, and a task skips anything that became current meanwhile, so a driver
that is killed and run again redoes only unfinished work.

Tasks are pure functions of plain JSON arguments; results are paths and hashes.
"""

import math

from eval import evaluate
from eval import noise as noise_eval
from eval import tasks
from tf_forget.artifacts import errors
from tf_forget.artifacts import hashing
from tf_forget.artifacts import layout
from tf_forget.artifacts import predictions
from tf_forget.corruptions import cache as corruption_cache
from tf_forget.corruptions import registry as corruption_registry
from tf_forget.executor import base as executor_base
from tf_forget.prune import gradient as prune_gradient
from tf_forget.prune import member as prune_member_lib
from tf_forget.prune import population as prune_population
from tf_forget.prune import retrain as retrain_lib
from tf_forget.train import member as member_lib
from tf_forget.train import population
from tflite_export import export as export_lib
from tflite_export import formats

TASKS = "eval.tasks"
# Tasks per worker of a chunked stage: more than one, so that a slow task does not leave the
# other workers idle at the end, and not many, since each task loads its data set.
TASKS_PER_WORKER = 4


def _task(key, fn, cost=1.0, num_gpus=0.0, **kwargs):
  return executor_base.Task(key=key, fn=f"{TASKS}:{fn}", kwargs=kwargs, cost=float(cost),
                            num_gpus=num_gpus)


def _gpus(executor):
  """GPUs a TensorFlow task asks for: 1 where the executor has GPUs, else 0."""
  return 1.0 if getattr(executor, "num_gpus", 0) else 0.0


def _chunks(items, n):
  """`items` cut into at most `n` contiguous chunks of nearly equal size."""
  items = list(items)
  size = max(1, math.ceil(len(items) / max(1, n)))
  return [items[i:i + size] for i in range(0, len(items), size)]


def _workers(executor):
  return max(1, int(getattr(executor, "workers", 0) or 1))


def train(executor, pop, log=print):
  """Trains every member of `pop` that is not finished and current; returns the task results.

  A member whose artifacts are stale is retrained, with a "redo" line saying why.
  """
  todo = []
  for cfg in population.member_configs(pop):
    state = member_lib.status(member_lib.member_dir(pop.run_dir, cfg.variant, cfg.k), cfg)
    if state:
      continue
    if state.reason != "missing":
      log(f"  redo members {cfg.variant}/{cfg.k}: {state.reason}")
    todo.append(_task(f"train {cfg.variant}/{cfg.k}", "train_member",
                      cost=cfg.preset.steps * cfg.preset.batch_size, num_gpus=_gpus(executor),
                      run_dir=pop.run_dir, **tasks.member_kwargs(cfg)))
  total = pop.members * len(pop.variants)
  log(f"  {total - len(todo)} of {total} members already trained")
  return executor.run(todo, stage="train", log=log) if todo else {}


def gradients(executor, pop, configs, protocol, log=print):
  """Computes g of every dense parent that a GP or UP member of `configs` reads, if not current.

  One task per parent (SPEC §6.2, "the same g for GP and UP"; issue #26), as a stage of its
  own before the prune tasks, so that no two tasks write one g.
  """
  todo = []
  for parent in prune_population.gradient_parents(configs):
    if not _stale(lambda p=parent: prune_gradient.current(pop.run_dir, p, protocol),
                  f"gradient {parent.variant}/{parent.k}", log):
      continue
    todo.append(_task(f"gradient {parent.variant}/{parent.k}", "oneshot_gradient",
                      cost=protocol.grad_batches * protocol.grad_batch_size,
                      num_gpus=_gpus(executor), run_dir=pop.run_dir,
                      protocol=protocol.to_json(), **tasks.member_kwargs(parent)))
  return executor.run(todo, stage="gradient", log=log) if todo else {}


def prune(executor, pop, variants, protocol, log=print):
  """Makes every one-shot member of `variants` that is not current (dense parents first).

  First g of every parent a GP or UP member reads (`gradients`), then one task per member; a
  member whose artifacts are stale (parent retrained, g or protocol changed) is made again,
  with a "redo" line saying why.
  """
  todo, configs = [], prune_population.oneshot_configs(pop, variants, protocol)
  gradients(executor, pop, configs, protocol, log)
  for cfg in configs:
    if not _stale(lambda c=cfg: prune_member_lib.status(pop.run_dir, c),
                  f"members {cfg.member.variant}/{cfg.member.k}", log):
      continue
    todo.append(_task(f"prune {cfg.member.variant}/{cfg.member.k}", "prune_member",
                      cost=protocol.epochs * protocol.batch_size, num_gpus=_gpus(executor),
                      run_dir=pop.run_dir, protocol=protocol.to_json(),
                      **tasks.member_kwargs(cfg.member)))
  log(f"  {len(configs) - len(todo)} of {len(configs)} one-shot members already made")
  return executor.run(todo, stage="prune", log=log) if todo else {}


def retrain(executor, pop, variants, protocol, log=print):
  """Makes every prune-retrain cycle of `variants` that is not current, one wave per cycle.

  Cycle n of member k needs cycle n − 1 of member k, so the tasks run in waves: every (method,
  k) of cycle 1, then of cycle 2, ...; within a wave they run in parallel.
  """
  configs = prune_population.iterative_configs(pop, variants, protocol)
  results, made = {}, 0
  for cycle in sorted({c.variant.cycle for c in configs}):
    todo = []
    for cfg in (c for c in configs if c.variant.cycle == cycle):
      if not _stale(lambda c=cfg: retrain_lib.status(pop.run_dir, c),
                    f"members {cfg.member.variant}/{cfg.member.k}", log):
        continue
      todo.append(_task(f"retrain {cfg.member.variant}/{cfg.member.k}", "retrain_member",
                        cost=cfg.retrain_steps() * pop.preset.batch_size,
                        num_gpus=_gpus(executor), run_dir=pop.run_dir,
                        protocol=protocol.to_json(), **tasks.member_kwargs(cfg.member)))
    made += len(todo)
    if todo:
      results.update(executor.run(todo, stage=f"retrain cycle {cycle}", log=log))
  log(f"  {len(configs) - made} of {len(configs)} prune-retrain cycles already made")
  return results


def _stale(status_fn, what, log):
  """Whether an artifact must be (re)made; logs "redo <what>: <why>" for one that exists.

  The line is the one the sequential pass would print (its task runs in a worker, whose own
  lines do not reach the driver). An input that cannot be read counts as stale: the task
  raises the one-line error.
  """
  try:
    state = status_fn()
  except errors.Error:
    return True
  if not state and state.reason != "missing":
    log(f"  redo {what}: {state.reason}")
  return not state


def export(executor, run_dir, members, dense_formats, pruned_formats, encodings,
           dense_encodings, dataset, log=print):
  """Exports the files of every member that has one missing or stale, one task per member."""
  rep_ids = None
  todo = []
  for v, k in members:
    jobs = [variant for variant, _ in export_lib.plan(
        [(v, k)], dense_formats, pruned_formats, encodings, dense_encodings)]
    if any(formats.FORMATS[j.format]["representative"] for j in jobs) and rep_ids is None:
      rep_ids = export_lib.representative_images(dataset)[1]
    pending = [j for j in jobs if _stale(lambda j=j: export_lib.status(
        run_dir, j, k, rep_ids if formats.FORMATS[j.format]["representative"] else None),
                                         f"{j.name}/{k} export", log)]
    if pending:
      todo.append(_task(f"export {v}/{k}", "export_member", cost=len(pending), run_dir=run_dir,
                        member_variant=v, k=int(k), dense_formats=list(dense_formats),
                        pruned_formats=list(pruned_formats), encodings=list(encodings),
                        dense_encodings=list(dense_encodings)))
  log(f"  {len(members) - len(todo)} of {len(members)} members' files already exported")
  if not todo:
    return {}
  results = executor.run(todo, stage="export", log=log)
  files = [f for r in results.values() for f in r["files"]]
  log(f"  export: {sum(not f['skipped'] for f in files)} files written, "
      f"{sum(bool(f['skipped']) for f in files)} reused, "
      f"{sum(bool(f['failed']) for f in files)} failed")
  return results


def _by_member(run_dir, variants, members=None):
  """{(member variant, k): [export JSON dicts]} of the finished exports of `variants`."""
  out = {}
  wanted = set(variants)
  for meta in evaluate.list_exports(run_dir):
    k = int(meta["k"])
    if meta["variant"] in wanted and (members is None or k in members):
      out.setdefault((meta["member_variant"], k), []).append(meta)
  return out


def _predictions_stale(run_dir, meta, split, split_id, need_logits, log):
  k = int(meta["k"])
  out = predictions.path(run_dir, meta["variant"], k, split)
  return _stale(lambda: predictions.status(out, {
      "tflite": evaluate.current_sha256(meta["path"], meta["sha256"]), "split": split_id},
                                             need_logits=need_logits),
                f"{meta['variant']}/{k} {split}", log)


def _keras_stale(run_dir, member_variant, k, split, split_id, log):
  out = layout.keras_predictions(run_dir, member_variant, k, split)
  model = layout.member_model(run_dir, member_variant, k)
  return _stale(lambda: predictions.status(out, {"model": hashing.file_sha256(model),
                                                 "split": split_id}),
                f"keras:{member_variant}/{k} {split}", log)


def evaluate_all(executor, run_dir, dataset, eval_split, variants, plain_variants,
                 corrupted, cache_dir, noise, robustness_members, num_threads, log=print,
                 published=()):
  """Makes every predictions file the audit evaluates, through the executor.

  First round: each member's files on the clean split, each member's Keras predictions,
  the corrupted splits' generation and the noise evaluation; second round: the robustness
  members' plain files on the corrupted splits, in chunks. Only files that are missing or
  stale are submitted (what the sequential passes would redo).

  Args:
    dataset: the `base.Dataset` (its name and options are passed to the tasks).
    variants: audited variant names evaluated on the clean split (every encoding).
    plain_variants: plain-encoded variants evaluated on corrupted splits and under noise.
    corrupted: corrupted split names; cache_dir: the corruption cache.
    noise: a `NoiseProtocol` or None.
    robustness_members: k's evaluated on corrupted splits and noise.
    published: published split names (`--robustness=published`, `tasks.evaluate_published`),
      evaluated in the second round like corrupted splits (then `corrupted` is empty: nothing
      is generated).
  """
  name, options = dataset.spec.name, dict(dataset.spec.options)
  common = {"run_dir": run_dir, "dataset": name, "dataset_options": options}
  clean_id = predictions.split_identity(name, dataset.spec.options, eval_split)
  first = []
  for (member_variant, k), metas in sorted(_by_member(run_dir, variants).items()):
    todo = [m["variant"] for m in metas
            if _predictions_stale(run_dir, m, eval_split, clean_id, True, log)]
    if todo:
      first.append(_task(f"eval {member_variant}/{k} {eval_split}", "evaluate_files",
                         cost=len(todo), files=[[v, k] for v in todo],
                         num_threads=num_threads, splits=[eval_split], **common))
    if _keras_stale(run_dir, member_variant, k, eval_split, clean_id, log):
      first.append(_task(f"keras {member_variant}/{k} {eval_split}", "keras_predictions",
                         num_gpus=_gpus(executor), member_variant=member_variant, k=k,
                         split=eval_split, **common))
  robust = _by_member(run_dir, plain_variants, robustness_members)
  workers = _workers(executor)
  table = corruption_cache.resolve_table(dataset)
  missing = [s for s in corrupted if not corruption_cache.is_complete(corruption_cache.CacheKey(
      name, eval_split, *corruption_registry.parse_split_name(s), table), cache_dir)]
  for chunk in _chunks(missing, workers * TASKS_PER_WORKER):
    first.append(_task(f"corrupt {chunk[0]}..{chunk[-1]}", "corrupt_splits",
                       cost=len(chunk), dataset=name, dataset_options=options, splits=chunk,
                       cache_dir=cache_dir))
  if noise is not None:
    for (member_variant, k), metas in sorted(robust.items()):
      todo = [m["variant"] for m in metas if _stale(
          lambda m=m: noise_eval.file_status(run_dir, m, dataset, noise),
          f"{m['variant']}/{k} l-inf noise", log)]
      if todo:
        first.append(_task(f"noise {member_variant}/{k}", "evaluate_noise",
                           cost=len(todo) * len(noise.eps) * noise.draws / 10,
                           files=[[v, k] for v in todo], protocol=noise.to_json(),
                           num_threads=num_threads, **common))
  if first:
    executor.run(first, stage="evaluate", log=log)
  if not corrupted and not published:
    return
  # Robustness: (member, chunk of splits) tasks, about TASKS_PER_WORKER per worker.
  if published:
    suite, _, split_ids = tasks.published_suite(dataset, list(published))
    splits, kind, logits = list(published), "published", set(filter(suite.keeps_logits,
                                                                     published))
  else:
    _, _, split_ids = tasks.corrupted_suite(dataset, cache_dir, corrupted)
    splits, kind, logits = corrupted, "corrupted", set()
  per_member = max(1, math.ceil(workers * TASKS_PER_WORKER / max(1, len(robust))))
  second = []
  for (member_variant, k), metas in sorted(robust.items()):
    for chunk in _chunks(splits, per_member):
      todo = [m["variant"] for m in metas if any(  # not short-circuited: every redo is said
          [_predictions_stale(run_dir, m, s, split_ids[s], s in logits, log) for s in chunk])]
      if todo:
        second.append(_task(f"eval {member_variant}/{k} {chunk[0]}..{chunk[-1]}",
                            "evaluate_files", cost=len(todo) * len(chunk),
                            files=[[v, k] for v in todo], num_threads=num_threads,
                            cache_dir=cache_dir, **{kind: chunk}, **common))
  if second:
    executor.run(second, stage="evaluate corruptions", log=log)
