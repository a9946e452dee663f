"""The labelled test set and the deployment's images, side by side (docs/spec.md §8.11).

An audit of the user's model on labelled data that also names the images its deployment sees
(`--deployment_images`, `tf_forget.data.deployment_view`) has every file's predictions on both.
The labelled view is the report's own (the verdict table: top-1 change with its interval, the
classes whose recall changed significantly, the verdict of the ship rule); the deployment view
is the audit without labels over those images (`unlabelled_audit.compute`: flip rate with its
exact interval, the worst class flip rate, confident flips, "decides like your model" by the
rule of §8.9 at its default bounds). `compute` puts both in one row per file and says, in one
sentence per file, where they disagree: a file fine on the test set (the rule's verdict "pass",
"recommended" or "dominated") that does not decide like your model on the deployment's images,
or the other way round. `summary_lines` is the terminal's version, from report.json.

Numpy / pandas over the run's predictions; the deployment's data set is built when asked
(`deployment_run`: TensorFlow reads the images only for the gallery).
"""

import pandas as pd

from tf_forget.artifacts import names
from tf_forget.policy import gates as gates_lib
from tf_forget.policy import unlabelled_gates
from tf_forget.report import collect
from tf_forget.report import unlabelled_audit

TABLE = "side_by_side"
PREFIX = "deployment_images_"  # the tables without labels, renamed: `unlabelled_files` -> ...
SETTINGS_KEY = "deployment_images"
OPTION = "deployment_images"  # `deployment_view.OPTION` (whose module imports TensorFlow)
# The labelled verdicts of a file that is fine on the test set (`ship_rule.eligibility`).
FINE = ("pass", "recommended", "dominated")


def deployment_run(run):
  """The `collect.Run` of the deployment's images of `run` (its variants, split
  `names.DEPLOYMENT_SPLIT`), or None when its data set names none.

  Raises:
    collect.CollectError: predictions that are missing or do not align.
  """
  if run.dataset is None or not dict(run.dataset.spec.options or {}).get(OPTION):
    return None
  from tf_forget.data import dataset_api  # TensorFlow
  from tf_forget.data import deployment_view

  try:
    view = deployment_view.DeploymentView(run.dataset)
  except dataset_api.DataError as e:
    raise collect.CollectError(f"the deployment images: {e}") from e
  return collect.load_run(
    run.run_dir, dataset=view, variants=set(run.predictions), splits={names.DEPLOYMENT_SPLIT}
  )


def _pct(value):
  return f"{100 * value:.2f}%" if isinstance(value, (int, float)) and value == value else "n/a"


def _worst(s):
  """'worst class 7: 6.10%' of a summary without labels ('' without a class to gate)."""
  if not s.get("worst_class"):
    return ""
  return f"worst class {s['worst_class']}: {_pct(s['worst_class_flip_rate'])}"


def sentence(variant, labelled, s):
  """The sentence saying where the two views of one file disagree, or "".

  Args:
    variant: the file's variant.
    labelled: its row of the verdict table (`verdict`, `reason`).
    s: its summary on the deployment's images (`unlabelled_audit.compute`).
  """
  fine = labelled.get("verdict") in FINE
  if fine and not s["decides_like"]:
    worst = _worst(s)
    return (
      f"{variant} passes on the labelled test set but moves {_pct(s['flip_rate'])} of decisions "
      f"on your deployment images ({s['flips']} of {s['n']}"
      + (f"; {worst}" if worst else "")
      + f"): {'; '.join(s['reasons'])}"
    )
  if not fine and s["decides_like"]:
    return (
      f"{variant} decides like your model on your deployment images (flip rate "
      f"{_pct(s['flip_rate'])}, {s['flips']} of {s['n']}) but not on the labelled test set: "
      f"{labelled.get('verdict')}, {labelled.get('reason')}"
    )
  return ""


def compute(run, verdict):
  """The side-by-side table, the deployment's tables and settings, or None without them.

  Args:
    run: the report's `collect.Run` (labelled).
    verdict: the verdict table (`tf_forget.report.verdict.table`, verdicts filled).

  Returns:
    (tables {name: DataFrame}, summaries {variant: dict}, settings dict, the deployment's
    `collect.Run`), or None.

  Raises:
    collect.CollectError: the deployment's predictions that cannot be read or aligned.
  """
  deployed = deployment_run(run)
  if deployed is None:
    return None
  # The deployment view informs: its rule at the §8.9 default bounds, no gate of its own.
  tables, summaries, notes = unlabelled_audit.compute(deployed, gates_lib.Gates())
  rows = []
  labelled = {} if verdict is None else {r["variant"]: r for _, r in verdict.iterrows()}
  for variant in sorted(v for v in summaries if v != names.DENSE):
    s, mine = summaries[variant], dict(labelled.get(variant, {}))
    rows.append(
      {
        "variant": variant,
        "top1_change": mine.get("top1_change"),
        "top1_low": mine.get("top1_low"),
        "top1_high": mine.get("top1_high"),
        "significant_classes": mine.get("significant_classes"),
        "labelled_verdict": mine.get("verdict"),
        "labelled_reason": mine.get("reason"),
        "deployment_n": s["n"],
        "flips": s["flips"],
        "flip_rate": s["flip_rate"],
        "flip_low": s["flip_low"],
        "flip_high": s["flip_high"],
        "worst_class": s.get("worst_class"),
        "worst_class_flip_rate": s.get("worst_class_flip_rate"),
        "confident_flips": s.get("confident_flips"),
        "confident_flip_rate": s.get("confident_flip_rate"),
        "decides_like": s["decides_like"],
        "deployment_reasons": "; ".join(s["reasons"]),
        "disagreement": sentence(variant, mine, s),
      }
    )
  out = {PREFIX + name[len("unlabelled_") :]: frame for name, frame in tables.items()}
  out[TABLE] = pd.DataFrame(rows)
  options = deployed.dataset.source.spec.options
  settings = {
    "source": deployed.dataset.source.spec.name,
    "where": options.get("path") or options.get("pattern") or options.get("tfds_name"),
    "images": int(deployed.eval[names.DENSE].ids.size),
    "labels": "none",
    "rule_bounds": unlabelled_gates.bounds(gates_lib.Gates()),
    "confident_threshold": unlabelled_audit.CONFIDENT,
    "notes": notes,
  }
  return out, summaries, settings, deployed


COLUMNS = (
  "file",
  "top-1",
  "#signif",
  "test set",
  "flips",
  "95% CI",
  "worst class",
  "confident",
  "decides like your model",
)
NOTE = (
  "(test set: top-1 change vs your model and the ship rule's verdict; deployment images: "
  "flips = decisions that differ from your model's, exact 95% interval, no labels)"
)


def summary_cells(report):
  """The summaries' side-by-side block from report.json, or None without deployment images:
  (title, one row of `COLUMNS` cells per file, the sentences where the views disagree)."""
  rows = (report.get("tables") or {}).get(TABLE)
  if not rows:
    return None
  s = (report.get("settings") or {}).get(SETTINGS_KEY) or {}
  title = (
    f"side by side: the labelled test set and your deployment images ({s.get('source')}:"
    f"{s.get('where')}, {s.get('images')} images, no labels)"
  )
  cells = []
  for r in rows:
    change, signif = r.get("top1_change"), r.get("significant_classes")
    worst = r.get("worst_class")
    cells.append(
      (
        r["variant"],
        "n/a" if change is None else format(100 * change, "+.2f") + "pt",
        "n/a" if signif is None else str(int(signif)),
        str(r.get("labelled_verdict")),
        _pct(r["flip_rate"]),
        _pct(r["flip_low"]) + "-" + _pct(r["flip_high"]),
        f"{worst}: {_pct(r['worst_class_flip_rate'])}" if worst else "n/a",
        _pct(r.get("confident_flip_rate")),
        "yes" if r.get("decides_like") else "no",
      )
    )
  return title, cells, [r["disagreement"] for r in rows if r.get("disagreement")]


_WIDTHS = (-22, 8, 7, -12, 6, 16, 18, 9, 0)  # negative: left-aligned


def summary_lines(report):
  """The terminal's side-by-side block from report.json ([] without deployment images): one row
  per file, both views, then the sentences where they disagree."""
  found = summary_cells(report)
  if found is None:
    return []
  title, cells, disagreements = found

  def line(row):
    parts = [f"{c:{'<' if w < 0 else '>'}{abs(w)}}" for c, w in zip(row, _WIDTHS)]
    return " ".join(parts[:4]) + " | " + " ".join(parts[4:8]) + "  " + parts[8]

  out = [f"\n{title}", line(COLUMNS)] + [line(row) for row in cells] + [NOTE]
  return out + [f"disagree: {d}" for d in disagreements]
