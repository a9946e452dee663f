"""The audit's last three stages, under the same contract as the others:
deployment encodings (`tf_forget.evaluate.encodings`), the report (`tf_forget.report.write`) and the
deployment bundle (`tf_forget.evaluate.deploy`).

Each runs in the driver's process (no units: a latency measurement must not share the CPU with
a pool's workers, and the report and bundle are one write each); its `finish` writes the
stage-wide files and returns what the next one reads, kept by the driver in
`Context.results[<stage name>]`: the encodings' decision dict, then report.json's dict, then
the bundle's manifest. What they need of the configuration is `Context.final` (`Final`).
"""

import dataclasses
from typing import Optional

from tf_forget.config import tree
from tf_forget.evaluate import deploy
from tf_forget.evaluate import encodings as encodings_lib
from tf_forget.pipeline import driver
from tf_forget.policy import gates as gates_lib
from tf_forget.policy import human_study_options


@dataclasses.dataclass(frozen=True)
class Final:
  """What the last stages read of the audit's configuration.

  Attributes:
    deployment: the `tf_forget.config.tree.Deployment` section.
    gates: the `gates_lib.Gates`.
    config_json: the whole configuration's JSON (recorded in report.json).
    human_study: the `human_study_options.Options`, or None.
  """

  deployment: tree.Deployment
  gates: gates_lib.Gates
  config_json: dict
  human_study: Optional[human_study_options.Options] = None


class EncodingsStage(driver.Stage):
  """Per variant, the shipped encoding: plain or its sparse twin."""

  name = "encodings"

  def units(self, ctx):
    return []

  def finish(self, ctx, results):
    dep = ctx.final.deployment
    return encodings_lib.choose(
      ctx.run_dir,
      ctx.plain_variants,
      ctx.dataset.spec.eval_split,
      mode=dep.encoding,
      max_sparse_latency_ratio=dep.max_sparse_latency_ratio,
      num_threads=dep.num_threads,
      batch_sizes=tuple(sorted({1, dep.latency_batch})),
      remeasure=dep.remeasure_latency,
      log=ctx.redo_log,
    )


class ReportStage(driver.Stage):
  """report.json, tables/*.csv and report.html (`tf_forget.report.write`)."""

  name = "report"

  def units(self, ctx):
    return []

  def finish(self, ctx, results):
    p = ctx.plan
    from tf_forget.report import write as report_write  # its units' libraries, when it runs

    return report_write.write_report(
      ctx.run_dir,
      ctx.run_dir,
      ctx.final.config_json,
      log=ctx.log,
      dataset=p.dataset,
      human_study=ctx.final.human_study,
      variants=ctx.plain_variants,
      splits=[p.dataset.spec.eval_split] + list(p.corrupted) + list(p.extra_splits),
    )


class BundleStage(driver.Stage):
  """deploy/: the chosen files and the manifest with the gate verdicts
  (`tf_forget.evaluate.deploy`)."""

  name = "bundle"

  def units(self, ctx):
    return []

  def finish(self, ctx, results):
    report = ctx.results[ReportStage.name]
    chosen = ctx.results[EncodingsStage.name]
    manifest = deploy.write_bundle(
      ctx.run_dir,
      ctx.run_dir,
      report,
      ctx.final.gates,
      log=ctx.log,
      members=ctx.final.deployment.members,
      encodings=chosen["variants"],
    )
    from tf_forget.report import summary_terminal

    summary_terminal.print_summary(report, manifest, ctx.log)
    return manifest


def sections():
  """[(section title, [stages])] of the last stages, in order."""
  return [
    ("deployment encodings", [EncodingsStage()]),
    ("report", [ReportStage()]),
    ("deployment bundle", [BundleStage()]),
  ]
