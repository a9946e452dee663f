"""The audit's file stages: TFLite export, evaluation on the clean split, robustness.

Stage contract and driver: `tf_forget.pipeline.driver`. Units, in the order they run:
  * export: one member's `.tflite` files (dense members: float32 + the post-training formats;
    pruned members: float32 + `pruned_quantizations`, each with a sparse twin unless
    `deploy_encoding="plain"`); finish: the list of audited variants (a sparse conversion that
    failed is recorded and its variant left out for that member);
  * evaluate: each member's files on the clean split (with logits), each member's Keras
    predictions (the agreement reference), chunks of corrupted splits to generate, each
    robustness member's plain files under l-inf noise; finish: the clean split's agreement table;
  * evaluate corruptions: the robustness members' plain files on chunks of corrupted (or, with
    `--robustness=published`, published) splits; finish: their agreement tables.

Robustness is evaluated on the plain-encoded files of the protocol's robustness members only
(docs/spec.md §1.5: the first 5 on ImageNet / CIFAR-10); published suites: docs/spec.md §3.6.
"""

import math
import os

from tf_forget.artifacts import hashing
from tf_forget.artifacts import layout
from tf_forget.artifacts import names
from tf_forget.artifacts import predictions
from tf_forget.artifacts import tflite_formats
from tf_forget.corruptions import cache as corruption_cache
from tf_forget.corruptions import corruption_registry
from tf_forget.evaluate import evaluate
from tf_forget.evaluate import noise_eval
from tf_forget.evaluate import population_eval
from tf_forget.export import export_state
from tf_forget.pipeline import driver
from tf_forget.pipeline import eval_tasks

# Tasks per worker of a chunked stage: more than one, so that a slow task does not leave the
# other workers idle at the end, and not many, since each task loads its data set.
TASKS_PER_WORKER = 4


def _chunks(items, n):
  """`items` cut into at most `n` contiguous chunks of nearly equal size."""
  items = list(items)
  size = max(1, math.ceil(len(items) / max(1, n)))
  return [items[i : i + size] for i in range(0, len(items), size)]


def dataset_kwargs(ctx):
  return {
    "run_dir": ctx.run_dir,
    "dataset": ctx.dataset.spec.name,
    "dataset_options": dict(ctx.dataset.spec.options),
  }


class ExportStage(driver.Stage):
  """Every member's `.tflite` files (`tf_forget.export.export`), one unit per member."""

  name = "export"
  noun = "members' files already exported"

  def _plan(self, ctx):
    p = ctx.plan
    dense = ("float32",) + tuple(p.quantizations) if ctx.keras_members else ()
    return {
      "dense_formats": dense,
      "pruned_formats": ("float32",) + tuple(p.pruned_quantizations),
      "encodings": tuple(p.encodings),
      "dense_encodings": (names.DEFAULT_ENCODING,),
    }

  def _members(self, ctx):
    """The audited members in the order the export lists them (`export_state.list_members`);
    none for `.tflite` references, which have no model to convert."""
    if not ctx.keras_members:
      return []
    wanted = set(ctx.members)
    return [m for m in export_state.list_members(ctx.run_dir) if m in wanted]

  def _jobs(self, ctx, member):
    return [v for v, _ in export_state.plan([member], **self._plan(ctx))]

  def units(self, ctx):
    plan, units, rep_key = self._plan(ctx), [], None
    for v, k in self._members(ctx):
      jobs = self._jobs(ctx, (v, k))
      if not jobs:  # a .tflite reference: nothing to convert
        continue
      if any(tflite_formats.get(j.format).representative for j in jobs) and rep_key is None:
        rep_key = export_state.representative_images(ctx.dataset).key
      units.append(
        driver.Unit(
          checks=[
            driver.Check(
              f"{j.name}/{k} export",
              lambda j=j, k=k: export_state.status(
                ctx.run_dir, j, k, rep_key if tflite_formats.get(j.format).representative else None
              ),
              j,
            )
            for j in jobs
          ],
          task=lambda pending, v=v, k=k: driver.task(
            f"export {v}/{k}",
            "export_member",
            cost=len(pending),
            run_dir=ctx.run_dir,
            member_variant=v,
            k=int(k),
            **{key: list(val) for key, val in plan.items()},
          ),
        )
      )
    return units

  def finish(self, ctx, results):
    files = [f for r in results.values() for f in r["files"]]
    if files:
      ctx.log(
        f"  export: {sum(not f['skipped'] for f in files)} files written, "
        f"{sum(bool(f['skipped']) for f in files)} reused, "
        f"{sum(bool(f['failed']) for f in files)} failed"
      )
    failed = {}
    for r in results.values():
      k = int(r["member"].rsplit("/", 1)[1])
      for f in r["files"]:
        if f["failed"]:
          failed[(f["variant"], k)] = f["failed"]
          ctx.log(f"  FAILED {f['variant']}/{k}: {f['failed']} (plain file kept)")
    ctx.variants = list(
      dict.fromkeys(
        [
          j.name
          for v, k in self._members(ctx)
          for j in self._jobs(ctx, (v, k))
          if (j.name, k) not in failed
        ]
        + ctx.stored
      )
    )
    ctx.plain_variants = [
      v for v in ctx.variants if names.parse_variant(v).encoding == names.DEFAULT_ENCODING
    ]


def by_member(run_dir, variants, members=None):
  """{(member variant, k): [export JSON dicts]} of the finished exports of `variants`."""
  out = {}
  wanted = set(variants)
  for meta in evaluate.list_exports(run_dir):
    k = int(meta["k"])
    if meta["variant"] in wanted and (members is None or k in members):
      out.setdefault((meta["member_variant"], k), []).append(meta)
  return out


def predictions_check(run_dir, meta, split, split_id, need_logits):
  k = int(meta["k"])
  out = predictions.path(run_dir, meta["variant"], k, split)
  return driver.Check(
    f"{meta['variant']}/{k} {split}",
    lambda: predictions.status(
      out,
      {"tflite": evaluate.current_sha256(meta["path"], meta["sha256"]), "split": split_id},
      need_logits=need_logits,
    ),
    meta["variant"],
  )


def _keras_check(run_dir, member_variant, k, split, split_id):
  out = layout.keras_predictions(run_dir, member_variant, k, split)
  model = layout.member_model(run_dir, member_variant, k)
  return driver.Check(
    f"keras:{member_variant}/{k} {split}",
    lambda: predictions.status(out, {"model": hashing.path_sha256(model), "split": split_id}),
  )


def _robust_members(ctx):
  return by_member(ctx.run_dir, ctx.plain_variants, ctx.plan.robustness_members)


def _published(ctx):
  """The published split names (`--robustness=published`), else []."""
  p = ctx.plan
  return list(p.corrupted) + list(p.extra_splits) if p.robustness == "published" else []


def _cache_dir(ctx):
  return os.path.join(ctx.run_dir, "corruptions")


class EvaluateStage(driver.Stage):
  """Clean-split predictions, Keras references, corrupted splits' generation and noise."""

  name = "evaluate"
  noun = "units already current"

  def units(self, ctx):
    data, split = ctx.dataset, ctx.dataset.spec.eval_split
    common = dataset_kwargs(ctx)
    clean_id = predictions.split_identity(data.spec.name, data.spec.options, split)
    units = []
    for (mv, k), metas in sorted(by_member(ctx.run_dir, ctx.variants).items()):
      units.append(
        driver.Unit(
          checks=[predictions_check(ctx.run_dir, m, split, clean_id, True) for m in metas],
          task=lambda todo, mv=mv, k=k: driver.task(
            f"eval {mv}/{k} {split}",
            f"{driver.EVAL_TASKS}:evaluate_files",
            cost=len(todo),
            files=[[v, k] for v in todo],
            num_threads=ctx.num_threads,
            splits=[split],
            **common,
          ),
        )
      )
      if not ctx.keras_members:
        continue
      units.append(
        driver.Unit(
          checks=[_keras_check(ctx.run_dir, mv, k, split, clean_id)],
          task=lambda _, mv=mv, k=k: driver.task(
            f"keras {mv}/{k} {split}",
            f"{driver.EVAL_TASKS}:keras_predictions",
            num_gpus=1.0 if ctx.num_gpus else 0.0,
            member_variant=mv,
            k=k,
            split=split,
            **common,
          ),
        )
      )
    units += self._corruption_units(ctx)
    if ctx.plan.noise is not None:
      units += self._noise_units(ctx)
    return units

  def _corruption_units(self, ctx):
    """The corrupted splits' cache entries, each checked against the data as it is now and
    its shards' sha256 (`corruption_cache.entry_status`): a missing or stale entry is
    generated again."""
    data, cache_dir = ctx.dataset, _cache_dir(ctx)
    corrupted = [] if _published(ctx) else list(ctx.plan.corrupted)
    table = corruption_cache.resolve_table(data)

    def check(split):
      key = corruption_cache.CacheKey(
        data.spec.name, data.spec.eval_split, *corruption_registry.parse_split_name(split), table
      )
      return driver.Check(
        f"corruptions {split}",
        lambda: corruption_cache.entry_status(key, cache_dir, data, verify=True),
        split,
      )

    return [
      driver.Unit(
        checks=[check(s) for s in chunk],
        task=lambda todo: driver.task(
          f"corrupt {todo[0]}..{todo[-1]}",
          f"{driver.EVAL_TASKS}:corrupt_splits",
          cost=len(todo),
          dataset=data.spec.name,
          dataset_options=dict(data.spec.options),
          splits=todo,
          cache_dir=cache_dir,
        ),
      )
      for chunk in _chunks(corrupted, ctx.workers * TASKS_PER_WORKER)
    ]

  def _noise_units(self, ctx):
    noise, common = ctx.plan.noise, dataset_kwargs(ctx)
    return [
      driver.Unit(
        checks=[
          driver.Check(
            f"{m['variant']}/{k} l-inf noise",
            lambda m=m: noise_eval.file_status(ctx.run_dir, m, ctx.dataset, noise),
            m["variant"],
          )
          for m in metas
        ],
        task=lambda todo, mv=mv, k=k: driver.task(
          f"noise {mv}/{k}",
          f"{driver.EVAL_TASKS}:evaluate_noise",
          cost=len(todo) * len(noise.eps) * noise.draws / 10,
          files=[[v, k] for v in todo],
          protocol=noise.to_json(),
          num_threads=ctx.num_threads,
          **common,
        ),
      )
      for (mv, k), metas in sorted(_robust_members(ctx).items())
    ]

  def finish(self, ctx, results):
    population_eval.agreement_tables(
      ctx.run_dir,
      ctx.dataset,
      splits=[ctx.dataset.spec.eval_split],
      variants=ctx.variants,
      check_keras=ctx.keras_members,
      num_threads=ctx.num_threads,
      log=ctx.redo_log,
    )


class RobustnessStage(driver.Stage):
  """The robustness members' plain files on the corrupted (or published) splits."""

  name = "evaluate corruptions"
  noun = "units already current"

  def _suite(self, ctx):
    """(splits, kind, splits kept with logits, {split: stream}, {split: identity})."""
    published = _published(ctx)
    if published:
      suite, streams, ids = eval_tasks.published_suite(ctx.dataset, published)
      return published, "published", set(filter(suite.keeps_logits, published)), streams, ids
    corrupted = list(ctx.plan.corrupted)
    _, streams, ids = eval_tasks.corrupted_suite(ctx.dataset, _cache_dir(ctx), corrupted)
    return corrupted, "corrupted", set(), streams, ids

  def units(self, ctx):
    splits, kind, logits, _, ids = self._suite(ctx)
    robust = _robust_members(ctx)
    per_member = max(1, math.ceil(ctx.workers * TASKS_PER_WORKER / max(1, len(robust))))
    extra = {"cache_dir": _cache_dir(ctx)} if kind == "corrupted" else {}
    units = []
    for (mv, k), metas in sorted(robust.items()):
      for chunk in _chunks(splits, per_member):
        units.append(
          driver.Unit(
            checks=[
              predictions_check(ctx.run_dir, m, s, ids[s], s in logits)
              for m in metas
              for s in chunk
            ],
            task=lambda todo, mv=mv, k=k, chunk=chunk: driver.task(
              f"eval {mv}/{k} {chunk[0]}..{chunk[-1]}",
              f"{driver.EVAL_TASKS}:evaluate_files",
              cost=len(set(todo)) * len(chunk),
              files=[[v, k] for v in dict.fromkeys(todo)],
              num_threads=ctx.num_threads,
              **{kind: chunk},
              **extra,
              **dataset_kwargs(ctx),
            ),
          )
        )
    return units

  def finish(self, ctx, results):
    splits, _, _, streams, ids = self._suite(ctx)
    files = [(v, k) for v in ctx.plain_variants for k in ctx.plan.robustness_members]
    population_eval.agreement_tables(
      ctx.run_dir,
      ctx.dataset,
      split_batches=streams,
      split_ids=ids,
      check_keras=False,
      variants=ctx.plain_variants,
      files=files,
      num_threads=ctx.num_threads,
      log=ctx.redo_log,
    )


def stages(plan):
  """The file stages of `plan`, in order."""
  out = [ExportStage(), EvaluateStage()]
  if plan.corrupted or plan.extra_splits:
    out.append(RobustnessStage())
  return out
