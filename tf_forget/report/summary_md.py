"""The verdict in Markdown, for a pull request or a CI job's summary.

`render(report, verdict_table, deployment_table, manifest, report_path)` writes, from a
finished run (its report.json, `tables/verdict.csv` and `tables/deployment.csv`, the bundle's
manifest), what a reviewer reads first in the report's verdict block
(`tf_forget.report.units.verdict.section`):

  * a heading: which variants failed a gate, passed when gates were set, or "no gate set";
  * the verdict sentence: the file to ship and why;
  * what the choice gives up against the front, whether the other size measure would choose
    another file, what it says of the user's own files (`--candidate`), then the caveats
    (repeats folded) and the rule;
  * the verdict table, one row per variant (`verdict_unit.verdict_rows`: the same cells as
    the HTML page);
  * with `--deployment_images`, both views side by side (`side_by_side.summary_cells`) and
    the sentences where they disagree;
  * every failed gate with its reason, and where the whole report is.

`write(output, text)` writes it at the user's path as `tf_forget.artifacts.user_output` says:
a regular file replaced atomically or appended to — GitHub's `$GITHUB_STEP_SUMMARY` file
collects the summaries of a step's commands —, a symlink's target, a device or a FIFO written
in place, never replaced. The audit command's `--summary` calls both (`tf_forget.commands`).
"""

import pandas as pd

from tf_forget.artifacts import names
from tf_forget.artifacts import user_output
from tf_forget.report import side_by_side
from tf_forget.report.units import verdict as verdict_unit
from tf_forget.report.words import folding
from tf_forget.report.words import summaries


def _cell(value):
  """A table cell: one line, `|` escaped."""
  return " ".join(str(value).split()).replace("|", "\\|")


def table(frame):
  """A DataFrame as a Markdown table (every cell as text)."""
  lines = [
    "| " + " | ".join(_cell(c) for c in frame.columns) + " |",
    "| " + " | ".join("---" for _ in frame.columns) + " |",
  ]
  for row in frame.itertuples(index=False):
    lines.append("| " + " | ".join(_cell(v) for v in row) + " |")
  return "\n".join(lines)


def _as_text(frame):
  """`frame` with the name columns (`names.NAME_COLUMNS`) as text where set: a CSV read
  without their dtype gives class 7 as the number 7.0."""
  frame = frame.copy()
  for column in names.NAME_COLUMNS:
    if column in frame.columns:
      frame[column] = [_name(v) for v in frame[column]]
  return frame


def _name(value):
  if value is None or value != value:
    return value
  if isinstance(value, float) and value.is_integer():
    return str(int(value))
  return str(value)


def _failed(manifest):
  """[(variant, reason)] of every failed gate, in the manifest's order."""
  out = []
  for entry in manifest.get("files") or []:
    gate = entry.get("gate") or {}
    if not gate.get("passed", True):
      out += [(entry["variant"], r) for r in gate.get("reasons") or ()]
  return list(dict.fromkeys(out))


def sentence(recommendation):
  """The verdict sentence: "Ship `<file>` — <why>" (the report's first line)."""
  rec = recommendation or {}
  if not rec.get("file"):
    return summaries.NO_RECOMMENDATION
  joint = ": " if rec.get("variant") == "dense" else " — "
  return f"**Ship `{rec['file']}`**{joint}{rec.get('why', '')}"


def render(report, verdict_table, deployment_table, manifest, report_path):
  """The Markdown summary of a finished audit (module docstring).

  Args:
    report: report.json as a dict.
    verdict_table: `tables/verdict.csv` as a DataFrame, or None.
    deployment_table: `tables/deployment.csv` as a DataFrame, or None.
    manifest: the bundle's manifest.json as a dict.
    report_path: where report.html is, named at the end.
  """
  failed = _failed(manifest)
  variants = sorted({v for v, _ in failed} | set(manifest.get("failed_variants") or ()))
  gated = any(v is not None for v in (manifest.get("gates") or {}).values())
  head = summaries.markdown_head(variants, gated)
  rec = report.get("recommendation") or {}
  out = [f"### tf_forget audit — {head}", "", sentence(rec), ""]
  lines = ([rec["front_note"]] if rec.get("front_note") else []) + list(rec.get("gives_up", []))
  lines += [rec["size_note"]] if rec.get("size_note") else []
  lines += list(rec.get("users", []))
  out += [f"- {_cell(line)}" for line in lines]
  out += [f"- ⚠ {_cell(line)}" for line in folding.fold(rec.get("caveats", []))]
  if lines or rec.get("caveats"):
    out.append("")
  if rec.get("rule"):
    out += [f"<sub>{_cell(rec['rule'])}</sub>", ""]
  if verdict_table is not None and len(verdict_table):
    out += [table(verdict_unit.verdict_rows(_as_text(verdict_table), deployment_table)), ""]
  out += _side_by_side(report)
  if failed:
    out += ["Failed gates:", ""] + [f"- `{v}`: {_cell(r)}" for v, r in failed] + [""]
  out.append(summaries.whole_report(report_path))
  return "\n".join(out) + "\n"


def _side_by_side(report):
  """The side-by-side block (`side_by_side.summary_cells`, docs/spec.md §8.11) as lines of
  Markdown ([] without deployment images)."""
  found = side_by_side.summary_cells(report)
  if found is None:
    return []
  title, cells, disagreements = found
  frame = pd.DataFrame(list(cells), columns=list(side_by_side.COLUMNS))
  out = [f"**{_cell(title[0].upper() + title[1:])}**", "", table(frame), ""]
  out += [f"<sub>{_cell(side_by_side.NOTE)}</sub>", ""]
  if disagreements:
    out += [f"- ⚠ {_cell(d)}" for d in disagreements] + [""]
  return out


def write(output, text):
  """Writes `text` to `output`, a `tf_forget.artifacts.user_output.Output` checked before the
  audit: a regular file replaced atomically or appended to, a device or FIFO written in place.

  Raises:
    errors.WriteError: the file cannot be written (one line).
  """
  user_output.write(output, text.encode("utf-8"))
