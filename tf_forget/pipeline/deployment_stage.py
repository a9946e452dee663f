"""The audit's stage that evaluates every file on the deployment's images (docs/spec.md §8.11).

When the audited data set names the images a deployment sees (`--deployment_images`,
`tf_forget.data.deployment_view`), each plain file of member 0 (the reference's float32 file and
every compressed file) is run over them once, with logits, into
`predictions/<variant>/<k>/deployment.npz` (`names.DEPLOYMENT_SPLIT`). A unit per member, as the
evaluation of the test split (`file_stages.EvaluateStage`); its check is the predictions file's
lineage (the `.tflite` file's sha256 and the split identity, which holds the images' content
digest), so changed images or a changed file redo exactly their predictions. The report reads
them as a run without labels (`tf_forget.report.units.side_by_side`).
"""

from tf_forget.data import deployment_view
from tf_forget.data import registry as data_registry
from tf_forget.evaluate import population_eval
from tf_forget.pipeline import driver
from tf_forget.pipeline import file_stages

SPLIT = deployment_view.SPLIT


def evaluate_deployment(run_dir, files, dataset, dataset_options, num_threads):
  """Task: evaluates some `.tflite` files on the deployment's images (predictions with logits).

  Args:
    files: [(variant, k)].
    dataset, dataset_options: the audited data set (its options name the images).
    num_threads: interpreter threads.

  Returns:
    {"files": number of files}.
  """
  view = deployment_view.DeploymentView(data_registry.get(dataset, **dict(dataset_options)))
  files = [(v, int(k)) for v, k in files]
  population_eval.evaluate_population(
    run_dir,
    dataset=view,
    splits=[SPLIT],
    num_threads=num_threads,
    check_keras=False,
    files=files,
    write_tables=False,
  )
  return {"files": len(files)}


class DeploymentStage(driver.Stage):
  """Member 0's plain files on the deployment's images, one unit per member."""

  name = "evaluate deployment images"
  noun = "members' files already evaluated on the deployment images"

  def units(self, ctx):
    split_id = deployment_view.identity(deployment_view.DeploymentView(ctx.dataset))
    members = file_stages.by_member(ctx.run_dir, ctx.plain_variants, members=(0,))
    return [
      driver.Unit(
        checks=[
          file_stages.predictions_check(ctx.run_dir, m, SPLIT, split_id, True) for m in metas
        ],
        task=lambda todo, mv=mv, k=k: driver.task(
          f"eval {mv}/{k} {SPLIT}",
          f"{__name__}:evaluate_deployment",
          cost=len(todo),
          files=[[v, k] for v in todo],
          num_threads=ctx.num_threads,
          **file_stages.dataset_kwargs(ctx),
        ),
      )
      for (mv, k), metas in sorted(members.items())
    ]


def stages(plan):
  """[DeploymentStage()] when the audited data set names deployment images, else []."""
  return [DeploymentStage()] if deployment_view.recorded(plan.dataset) else []
