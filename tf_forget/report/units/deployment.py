"""The deployment encodings (`tf_forget.report.deployment`, from `eval/encodings.json`): the
file each variant ships, its size and latency against its accuracy.
"""

from tf_forget.report import deployment
from tf_forget.report import html
from tf_forget.report import plots
from tf_forget.report import unit


def _compute(run_dir, variants):
  tables, notes, settings = deployment.compute(run_dir, variants)
  return unit.Part(tables, {"deployment": notes}, {"deployment": settings})


def section(t, settings, notes):
  """The deployment section: `t` the table (None: no encodings), `settings` its settings."""
  if t is None:
    return unit.Skip.of(notes)
  lead = (
    "<p class=\"lead\">The file each variant ships (member "
    f"{settings.get('k', 0)}; deploy encoding {html.esc(settings.get('mode'))}): the "
    "sparse-encoded twin only if its predictions equal the plain file's on the "
    f"{html.esc(settings.get('split'))} split, it is smaller, and it is not slower than "
    f"{settings.get('max_sparse_latency_ratio')}× the plain file beyond the measurement's spread "
    "at every measured batch size (sparse / plain ratios over interleaved rounds with "
    "fresh interpreters, refused when their low quartile exceeds the bound; "
    f"{settings.get('num_threads')} threads, as on a device: XNNPACK, else the built-in "
    "kernels; runtime says which ran). Sizes are raw bytes; shipped_vs_dense_float32 "
    "is the shipped file over the dense float32 file.</p>"
  )
  formats = {c: "num" for c in t.columns if "_ms_b" in c}
  formats.update(
    {
      "sparsity": html.PCT,
      "top1": html.PCT,
      "top1_change": html.PCT,
      "plain_bytes": "int",
      "sparse_bytes": "int",
    }
  )
  return lead + html.pair(
    plots.size_accuracy(t), "size vs accuracy per variant", html.table(t, formats), stacked=True
  )


def _render(deployment, settings, notes):
  return section(deployment, settings.get("deployment") or {}, notes.get("deployment"))


UNIT = unit.Unit(
  "deployment",
  reads=("run_dir", "variants"),
  makes=("deployment",),
  compute=_compute,
  sections=(
    unit.Section(
      "deployment",
      "10. Deployment: encoding, size, latency vs accuracy",
      "10 Deployment",
      ("deployment", "settings", "notes"),
      _render,
    ),
  ),
)
