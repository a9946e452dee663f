"""The stages that bring the user's models and files into a run, instead of training.

Stage contract and driver: `tf_forget.pipeline.driver`. With `--reference`
(`tf_forget.pipeline.user_plan`):
  * references: one unit per reference k: a Keras model is imported as dense member k
    (`tf_forget.train.imported`: model.keras and metadata.json, lineage the file's sha256); a
    float `.tflite` reference is stored as dense member k's float32 file
    (`tf_forget.export.candidates`); finish: run.json;
  * candidates: one unit per (candidate, k): the user's `.tflite` file stored unchanged as the
    export `user_<name>` of dense member k (`tf_forget.export.candidates`).
With `--pruning=oneshot` (Keras references, `tf_forget.pipeline.user_prune_plan`) the one-shot
stages of a trained population follow, unchanged (`member_stages.oneshot_stages`: g of each imported
dense member, then the `oneshot_<alg>_r<r>` members, fine-tuned on the user's `--train` data). The
export stage then converts the float32 file (and `--compress` formats) of Keras references and
float32 files of the one-shot members; evaluation, report and bundle follow as for trained members.
"""

from tf_forget.artifacts import filesystem
from tf_forget.artifacts import names
from tf_forget.artifacts import run_json
from tf_forget.export import candidates as candidates_lib
from tf_forget.pipeline import driver
from tf_forget.pipeline import member_stages
from tf_forget.train import imported


def _data_kwargs(ctx):
  return {
    "run_dir": ctx.run_dir,
    "dataset": ctx.dataset.spec.name,
    "dataset_options": dict(ctx.dataset.spec.options),
  }


def _store_unit(ctx, variant, k, path, what):
  """A unit storing the user's `.tflite` file `path` as `variant` of dense member k."""
  (shape, classes) = ctx.plan.population.signature
  return driver.Unit(
    checks=[
      driver.Check(f"{what}/{k}", lambda: candidates_lib.status(ctx.run_dir, variant, k, path))
    ],
    task=lambda _: driver.task(
      f"store {variant.name}/{k}",
      "store_user_file",
      k=int(k),
      file_format=variant.format,
      path=path,
      shape=list(shape),
      classes=int(classes),
      output_index=ctx.plan.user.output_index,
      **_data_kwargs(ctx),
    ),
  )


class ReferenceStage(driver.Stage):
  """The user's reference models as the dense members 0..K-1."""

  name = "import"
  noun = "references already imported"

  def units(self, ctx):
    user, kind = ctx.plan.user, ctx.plan.population.kind
    if kind == "tflite":
      return [
        _store_unit(ctx, candidates_lib.reference_variant(), k, path, names.DENSE)
        for k, path in enumerate(user.references)
      ]
    return [
      driver.Unit(
        checks=[
          driver.Check(f"members dense/{k}", lambda k=k, p=path: imported.status(ctx.run_dir, k, p))
        ],
        task=lambda _, k=k, p=path: driver.task(
          f"import dense/{k}",
          "import_reference",
          k=int(k),
          path=p,
          output_index=user.output_index,
          trust_model_code=user.trust_model_code,
          **_data_kwargs(ctx),
        ),
      )
      for k, path in enumerate(user.references)
    ]

  def describe(self, ctx, done, total):
    pop = ctx.plan.population
    return (
      f"references: {total} {pop.kind} model{'' if total == 1 else 's'} as the dense "
      f"member{'' if total == 1 else 's'} ({done} already imported) in {ctx.run_dir}"
    )

  def finish(self, ctx, results):
    pop, user = ctx.plan.population, ctx.plan.user
    run_json.write(
      run_json.path(ctx.run_dir),
      {
        "dataset": pop.dataset,
        "dataset_options": dict(pop.dataset_options),
        "model": pop.model,
        "variants": list(pop.variants),
        "members": pop.members,
        "references": [filesystem.abspath(p) for p in user.references],
      },
    )
    ctx.members = [(names.DENSE, k) for k in range(pop.members)]
    if pop.kind == "tflite":  # stored as the dense float32 files, not converted
      ctx.stored.append(names.DENSE)


class CandidateStage(driver.Stage):
  """The user's `.tflite` candidates, stored unchanged as exports of the dense members."""

  name = "store"
  noun = "candidate files already stored"

  def units(self, ctx):
    return [
      _store_unit(
        ctx,
        candidates_lib.candidate_variant(name),
        k,
        path,
        candidates_lib.candidate_variant(name).name,
      )
      for name, paths in ctx.plan.user.candidates
      for k, path in enumerate(paths)
    ]

  def finish(self, ctx, results):
    ctx.stored += [
      candidates_lib.candidate_variant(name).name for name, _ in ctx.plan.user.candidates
    ]


def stages(plan):
  """The import stages of an audit of the user's models, then its one-shot stages, if any."""
  out = [ReferenceStage()]
  if plan.user.candidates:
    out.append(CandidateStage())
  return out + member_stages.oneshot_stages(plan)
