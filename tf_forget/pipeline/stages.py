"""The audit's artifact-making stages 1-3 (members, `.tflite` files, predictions).

`audit_stages(plan)` is the list: training, then (002) g of the dense parents and the
one-shot members, (003) one stage per prune-retrain cycle
(`tf_forget.pipeline.member_stages`), then export, evaluation and robustness
(`tf_forget.pipeline.file_stages`), then the per-layer error of full int8 files and
repaired files (`tf_forget.pipeline.repair_stages`); the deployment encodings, report and bundle
follow (`tf_forget.pipeline.final_stages`). `run_sections` runs each with the one driver,
`tf_forget.pipeline.driver.run_stage`, on the audit's executor (`tf_forget.executor`: inline in this
process, a local process pool or Ray): the same tasks and the same bytes on each, since a task is a
pure function of its arguments and TensorFlow's threads come from the environment
(`tf_forget.compat.cpu_kernels`), which the workers inherit or are given.
"""

import dataclasses
import time

from tf_forget.cli import status
from tf_forget.pipeline import deployment_stage
from tf_forget.pipeline import driver
from tf_forget.pipeline import file_stages
from tf_forget.pipeline import import_stages
from tf_forget.pipeline import member_stages
from tf_forget.pipeline import repair_stages


@dataclasses.dataclass
class Context:
  """What the stages of one audit share: its plan and what earlier stages made.

  Attributes:
    plan: the `tf_forget.pipeline.audit_plan.Plan`.
    run_dir: the run directory.
    num_threads: interpreter threads of the evaluation tasks.
    workers: the executor's workers (chunks of corrupted splits per worker).
    num_gpus: the executor's GPUs (a TensorFlow task asks for one where there are any).
    log: callable(str).
    members: [(member variant, k)] made by the member stages.
    stored: audited variants of the user's own files, stored as they are.
    variants: audited variants whose files were exported or stored (every encoding).
    plain_variants: the plain-encoded ones (evaluated for robustness, reported).
    repaired: the repaired variants (`full_int8~float<N>`), also in `variants`.
    final: what the last stages read of the configuration (`final_stages.Final`), or None.
    results: {stage name: what its `finish` returned} (`run_sections`).
  """

  plan: object
  run_dir: str
  num_threads: int
  workers: int
  num_gpus: float
  log: object
  members: list = dataclasses.field(default_factory=list)
  stored: list = dataclasses.field(default_factory=list)
  variants: list = dataclasses.field(default_factory=list)
  plain_variants: list = dataclasses.field(default_factory=list)
  repaired: list = dataclasses.field(default_factory=list)
  final: object = None
  results: dict = dataclasses.field(default_factory=dict)

  @property
  def dataset(self):
    return self.plan.dataset

  @property
  def keras_members(self):
    """Whether the members have Keras models (all but `.tflite` references)."""
    return getattr(self.plan, "user", None) is None or self.plan.population.kind == "keras"

  def redo_log(self, line):
    self.log(f"  {line}")


def audit_stages(plan):
  """[(section title, [stages])] of `plan`, in order: the members, export, evaluation, and
  "why and repair" when a full int8 format is audited.

  An audit of the user's models (`plan.user`) imports them instead of training
  (`tf_forget.pipeline.import_stages`) and exports only what it converts from Keras references.
  """
  files = file_stages.stages(plan)
  why = repair_stages.stages(plan)
  first = (
    ("your models", import_stages.stages(plan))
    if plan.user is not None
    else ("populations", member_stages.stages(plan))
  )
  files += deployment_stage.stages(plan)  # the deployment's images, beside the test split
  return [first, ("TFLite export", files[:1]), ("TFLite evaluation", files[1:])] + (
    [("why and repair", why)] if why else []
  )


def header(log, index, name, t_start, stages):
  """Logs "== <index>/<stages> <name>  [<elapsed> s]" and marks the section as under way."""
  log(f"== {index}/{stages} {name}  [{time.time() - t_start:.0f} s]")
  status.section(name)


def context(p, run_dir, num_threads, executor, log, final=None):
  """The `Context` of an audit's stages on `executor`."""
  return Context(
    plan=p,
    run_dir=run_dir,
    num_threads=num_threads,
    workers=max(1, int(getattr(executor, "workers", 0) or 1)),
    num_gpus=getattr(executor, "num_gpus", 0) or 0,
    log=log,
    final=final,
  )


def run_sections(sections, ctx, executor, t_start, log, first=1, total=None):
  """Runs each stage of `sections` ([(title, [stages])]) with the one driver, numbered
  `first`.. out of `total`, keeping what each stage's `finish` returns in `ctx.results`."""
  total = total or first - 1 + len(sections)
  for index, (title, stages) in enumerate(sections, start=first):
    header(log, index, title, t_start, total)
    for stage in stages:
      ctx.results[stage.name] = driver.run_stage(stage, ctx, executor, log)
