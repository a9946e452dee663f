"""The audit's "why and repair" stages: per-layer error, repaired files, their
evaluation.

Stage contract and driver: `tf_forget.pipeline.driver`. After the clean-split evaluation, for every
member with a Keras model and a plain `full_int8` file, and every file the user brings
(`tf_forget.evaluate.layer_analysis`):
  * layers: one unit per member and file: the per-layer error of its full int8 file on the examples
    it forgot and on the stable rest (QuantizationDebugger), or a user's file's accumulated error
    tensor by tensor (`tf_forget.evaluate.tensor_match`), ranked, with Model Explorer node data;
  * repair (`--repair=float<N>,cle,int16x8,auto`): one unit per member and repair:
    `full_int8~<repair>` (`tf_forget.evaluate.repairs`: its N top-ranked ops kept in float,
    equalized, 16-bit activations, or the file a search chose on half of the test examples;
    several: the verdict ships the smallest that passes), only for a full int8 file that forgot
    something significant (`repairs.repair_needed`; the others get one line saying so);
    finish: the repaired variants join the audited ones;
  * evaluate repairs: the repaired files on the clean split (with logits); finish: the clean
    split's agreement table again, now with them.
Repaired files are not evaluated under corruptions or noise (the robustness tables keep the
audited formats).
"""

from tf_forget.artifacts import names
from tf_forget.artifacts import predictions
from tf_forget.data import dataset_api
from tf_forget.evaluate import layer_analysis
from tf_forget.evaluate import population_eval
from tf_forget.evaluate import repair_search
from tf_forget.evaluate import repairs
from tf_forget.pipeline import driver
from tf_forget.pipeline import file_stages


def _analysed(ctx):
  """(member variant, k, format) of the audited files an analysis applies to: full int8 files
  of members with a Keras model, and the user's own files (`layer_analysis.applies`)."""
  out = []
  for mv, k in ctx.members:
    formats = [layer_analysis.FORMAT] if ctx.keras_members else []
    formats += [
      names.parse_variant(v).format
      for v in ctx.variants
      if names.parse_variant(v).member_variant == mv
      and names.is_user_format(names.parse_variant(v).format)
    ]
    out += [
      (mv, k, f)
      for f in formats
      if names.Variant(mv, f).name in ctx.variants and layer_analysis.applies(ctx.run_dir, mv, k, f)
    ]
  return out


class LayersStage(driver.Stage):
  """Per-layer error of every full int8 file (tensor by tensor for the user's files) on its
  forgotten examples."""

  name = "layers"
  noun = "layer analyses already current"

  def units(self, ctx):
    return [
      driver.Unit(
        checks=[
          driver.Check(
            f"layers {mv}/{k} {f}",
            lambda mv=mv, k=k, f=f: layer_analysis.status(ctx.run_dir, mv, k, ctx.dataset, f),
          )
        ],
        task=lambda _, mv=mv, k=k, f=f: driver.task(
          f"layers {mv}/{k} {f}",
          "tf_forget.evaluate.layer_analysis:analyze_task",
          member_variant=mv,
          k=int(k),
          file_format=f,
          num_threads=ctx.num_threads,
          **file_stages.dataset_kwargs(ctx),
        ),
      )
      for mv, k, f in _analysed(ctx)
    ]

  def describe(self, ctx, done, total):
    return (
      f"why: where {total} compressed file{'' if total == 1 else 's'} depart"
      f"{'s' if total == 1 else ''} from float32 on the examples they forgot "
      f"({done} already current)"
    )


class RepairStage(driver.Stage):
  """`full_int8~<repair>` of every analysed member that forgot something significant."""

  name = "repair"
  noun = "repaired files already made"

  def _members(self, ctx):
    """([(member variant, k)] of the full int8 files worth repairing, [one line per file that
    is not]: `repairs.repair_needed`)."""
    needed, skipped = [], []
    always = getattr(ctx.plan, "repair_always", False)
    for mv, k, f in _analysed(ctx):
      if f == layer_analysis.FORMAT:
        ok, line = (True, "") if always else repairs.repair_needed(ctx.run_dir, mv, k)
        (needed if ok else skipped).append((mv, k) if ok else line)
    return needed, skipped

  def _variants(self, ctx):
    return [
      (names.Variant(mv, names.repair_format(r)), k)
      for r in ctx.plan.repairs
      for mv, k in self._members(ctx)[0]
    ]

  @staticmethod
  def _search(ctx, variant):
    """The search settings of an `auto` repair (`repair_search.settings`), else None."""
    if names.repair_kind(variant.format) != "auto":
      return None
    return repair_search.settings(ctx.plan.repair_gates, ctx.plan.max_repair_size)

  def units(self, ctx):
    return [
      driver.Unit(
        checks=[
          driver.Check(
            f"{v.name}/{k} export",
            lambda v=v, k=k: repairs.repair_status(
              ctx.run_dir, v, k, ctx.dataset, self._search(ctx, v)
            ),
            v,
          )
        ],
        task=lambda _, v=v, k=k: driver.task(
          f"repair {v.name}/{k}",
          "tf_forget.evaluate.repairs:repair_task",
          member_variant=v.member_variant,
          k=int(k),
          file_format=v.format,
          search=self._search(ctx, v),
          num_threads=ctx.num_threads,
          **file_stages.dataset_kwargs(ctx),
        ),
      )
      for v, k in self._variants(ctx)
    ]

  def describe(self, ctx, done, total):
    asked = ",".join(ctx.plan.repairs)
    skipped = self._members(ctx)[1]
    head = (
      f"repair: {total} repaired file{'' if total == 1 else 's'} of the full int8 "
      f"files that forgot something ({asked}; {done} already made)"
      if total
      else f"repair: no full int8 file needs one (--repair={asked})"
    )
    return "\n".join([head] + [f"  {line}" for line in skipped])

  def finish(self, ctx, results):
    ctx.repaired = list(dict.fromkeys(v.name for v, _ in self._variants(ctx)))
    ctx.variants = list(dict.fromkeys(list(ctx.variants) + ctx.repaired))
    ctx.plain_variants = list(dict.fromkeys(list(ctx.plain_variants) + ctx.repaired))


class EvaluateRepairsStage(driver.Stage):
  """The repaired files on the clean split."""

  name = "evaluate repairs"
  noun = "repaired files already evaluated"

  def units(self, ctx):
    data, split = ctx.dataset, ctx.dataset.spec.eval_split
    clean_id = predictions.split_identity(data.spec.name, data.spec.options, split)
    by_member = file_stages.by_member(ctx.run_dir, ctx.repaired)
    return [
      driver.Unit(
        checks=[
          file_stages.predictions_check(ctx.run_dir, m, split, clean_id, True) for m in metas
        ],
        task=lambda todo, mv=mv, k=k: driver.task(
          f"eval repaired {mv}/{k} {split}",
          f"{driver.EVAL_TASKS}:evaluate_files",
          cost=len(todo),
          files=[[v, k] for v in todo],
          num_threads=ctx.num_threads,
          splits=[split],
          **file_stages.dataset_kwargs(ctx),
        ),
      )
      for (mv, k), metas in sorted(by_member.items())
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


def stages(plan):
  """The why-and-repair stages of `plan`: none without a full int8 format or a user's file to
  analyse, nor on data without labels (docs/spec.md §8.8)."""
  formats = tuple(plan.quantizations) + tuple(plan.pruned_quantizations)
  if layer_analysis.FORMAT not in formats and not (plan.user and plan.user.candidates):
    return []
  if dataset_api.unlabelled(plan.dataset.spec.options):  # it ranks what was forgotten of labels
    return []
  out = [LayersStage()]
  if plan.repairs:
    out += [RepairStage(), EvaluateRepairsStage()]
  return out
