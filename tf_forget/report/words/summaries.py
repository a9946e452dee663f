"""The summaries' fixed lines: the terminal table's legend and the Markdown summary's heading,
its line without a recommendation and its pointer to the whole report.

Standard library only.
"""

NO_RECOMMENDATION = "No file is recommended (no verdict was computed)."


def terminal_legend(gated):
  """The line under the terminal's summary table: what its columns measure."""
  return (
    "(shipped size: the bundled file over the dense float32 file; flips: top-1 flip rate "
    "and KL: mean KL(reference ‖ file) in nats, vs the dense reference; verdict: the ship "
    "rule's" + ("; gate: the gates set" if gated else "; no gate set") + ")"
  )


def markdown_head(failed_variants, gated):
  """The Markdown summary's heading: the variants a gate failed, every gate held, or none set."""
  if failed_variants:
    return f"a gate failed: {', '.join(failed_variants)}"
  return "passed: every gate holds" if gated else "no gate set"


def whole_report(report_path):
  """The Markdown summary's last line: where report.html is."""
  return f"The whole report: `{report_path}`"
