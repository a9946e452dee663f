"""The deployment encodings (`tf_forget.report.deployment`, from `eval/encodings.json`): the
file each variant ships, its size and latency against its accuracy.
"""

from tf_forget.report import deployment
from tf_forget.report import sections
from tf_forget.report import unit


def _compute(run_dir, variants):
  tables, notes, settings = deployment.compute(run_dir, variants)
  return unit.Part(tables, {"deployment": notes}, {"deployment": settings})


def _render(deployment, settings, notes):  # pylint: disable=redefined-outer-name
  return sections.deployment(deployment, settings.get("deployment") or {},
                             notes.get("deployment"))


UNIT = unit.Unit(
    "deployment", reads=("run_dir", "variants"), makes=("deployment",), compute=_compute,
    sections=(unit.Section("deployment", "10. Deployment: encoding, size, latency vs accuracy",
                           "10 Deployment", ("deployment", "settings", "notes"), _render),))
