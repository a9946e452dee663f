"""The report of an audit without labels (docs/spec.md §8): the verdict, the measures per file and
the gallery of flipped images, from `tf_forget.report.unlabelled_audit`.

`registry.UNLABELLED` runs it, with the notes, instead of the labelled units when the run's data
has no labels (`dataset_api.unlabelled`): none of those has a label to read. It gives what the
report, the bundle and the summary read of every run: the per-file summaries (`variants`, of
design `unlabelled_gates.DESIGN`, which the gates read through `gates.verdict`), the verdict
(`recommendation`) and no CIE gallery (`gallery_cards`).
"""

import os

from tf_forget.artifacts import names
from tf_forget.policy import gates as gates_lib
from tf_forget.policy import unlabelled_gates
from tf_forget.report import collect
from tf_forget.report import gallery as gallery_lib
from tf_forget.report import gallery_view
from tf_forget.report import html
from tf_forget.report import unit
from tf_forget.report import unlabelled_audit

TABLES = (
  "unlabelled_files",
  "unlabelled_classes",
  "unlabelled_transitions",
  "unlabelled_confidence",
  "unlabelled_flips",
)


def file_names(config):
  """{variant: how the report names its file}: the user's paths, "made here" for conversions."""
  user = (config or {}).get("user") or {}
  out = {}
  if user.get("references"):
    out[names.DENSE] = f"{names.DENSE} ({os.path.basename(user['references'][0])})"
  for name, paths in user.get("candidates") or []:
    out[names.user_format(name)] = f"{names.user_format(name)} ({os.path.basename(paths[0])})"
  return out


def _files(run, config):
  """{variant: name} of every audited variant (conversions: "<format> (made here)")."""
  given = file_names(config)
  return {v: given.get(v, f"{v} (made here)") for v in run.eval}


def _compute(run, config, options):
  gates = gates_lib.Gates.from_json((config or {}).get("gates"))
  tables, summaries, notes = unlabelled_audit.compute(run, gates)
  flips = tables.get("unlabelled_flips")
  size = int(options.get("gallery_size") or 12)
  shown = flips[flips["rank"] <= size] if flips is not None and not flips.empty else flips
  ids = sorted({int(i) for i in shown["id"]}) if shown is not None else []
  images = (
    {i: gallery_lib.thumbnail(x) for i, x in zip(ids, collect.images_for(run, ids))}
    if ids and run.dataset is not None
    else {}
  )
  paths = collect.example_paths(run) or {}
  rec = unlabelled_audit.recommend(summaries, _files(run, config))
  return unit.Part(
    tables,
    notes={unlabelled_audit.SETTINGS_KEY: notes},
    settings={
      unlabelled_audit.SETTINGS_KEY: {
        "labels": "none",
        "confident_threshold": unlabelled_audit.CONFIDENT,
        "min_class_images": unlabelled_gates.MIN_CLASS_IMAGES,
        "rule_bounds": unlabelled_gates.bounds(gates),
        "gates_set": unlabelled_gates.bounds(gates, defaults=False),
      }
    },
    gives={
      "variants": summaries,
      "recommendation": rec,
      "gallery_cards": {},
      "unlabelled_gallery": {"size": size, "images": images, "paths": paths},
    },
  )


def _pct(x):
  return html.fmt(x, "pct")


def _verdict(recommendation, settings):
  rec, s = recommendation or {}, (settings or {}).get(unlabelled_audit.SETTINGS_KEY) or {}
  bounds = s.get("rule_bounds") or {}
  given = s.get("gates_set") or {}
  bound_words = ", ".join(
    f"{g} {_pct(b) if g != 'max_kl' else f'{b:g} nats'}" + ("" if g in given else " (default)")
    for g, b in bounds.items()
  )
  items = "".join(f"<li>{html.esc(line)}</li>" for line in rec.get("users", []))
  return (
    "<p class=\"lead\"><b>Without labels.</b> These images carry no labels: the yardstick is your "
    "model's own decisions. A flip is an image where the file decides otherwise than your model; "
    "it is a changed decision, not an error, and nothing here measures accuracy.</p>"
    f"<p><b>Verdict:</b> {html.esc(rec.get('file', ''))}: {html.esc(rec.get('why', ''))}.</p>"
    f"<p>Rule: {html.esc(unlabelled_gates.RULE)}; bounds: {html.esc(bound_words)}; a confident "
    f"flip is one where your model's softmax confidence is at least "
    f"{html.esc(s.get('confident_threshold'))}.</p><ul>{items}</ul>"
  )


FILE_COLUMNS = {
  "variant": None,
  "decides_like": None,
  "n": "int",
  "flips": "int",
  "flip_rate": "pct",
  "flip_low": "pct",
  "flip_high": "pct",
  "worst_class": None,
  "worst_class_flip_rate": "pct",
  "worst_class_n": "int",
  "confident_flips": "int",
  "confident_flip_rate": "pct",
  "classes_shifted": "int",
  "stuart_maxwell_p": "p",
  "bowker_p": "p",
  "kl_mean": "g",
  "gate_passed": None,
  "moved_classes": None,
}


def _render(unlabelled_files, unlabelled_classes, unlabelled_transitions, unlabelled_confidence):
  if unlabelled_files is None:
    return unit.Skip("no compressed file")
  files = unlabelled_files[[c for c in FILE_COLUMNS if c in unlabelled_files]]
  parts = [
    "<h3>Each file against your model</h3>",
    html.table(files, {c: f for c, f in FILE_COLUMNS.items() if f}),
    "<p>Flip rates with exact (Clopper–Pearson) 95% intervals; classes_shifted: classes whose "
    "share of the decisions changed (exact McNemar per class, Benjamini–Hochberg over the "
    "classes); Stuart–Maxwell: did the distribution of decisions shift; Bowker: are the moves "
    "between two classes symmetric (docs/spec.md §8.2–8.4).</p>",
  ]
  moved = unlabelled_classes[(unlabelled_classes["left"] > 0) | (unlabelled_classes["entered"] > 0)]
  if not moved.empty:
    parts += [
      "<h3>Classes with a flip (by your model's decision)</h3>",
      html.table(
        moved,
        {
          "flip_rate": "pct",
          "low": "pct",
          "high": "pct",
          "share_change": "pts",
          "class": "int",
          "p_value": "p",
          "p_adjusted": "p",
          "n": "int",
          "n_candidate": "int",
          "left": "int",
          "entered": "int",
        },
        highlight=list(moved["significant"]),
      ),
    ]
  if unlabelled_transitions is not None and not unlabelled_transitions.empty:
    parts += [
      "<h3>Largest moves: your model's class → the file's</h3>",
      html.table(
        unlabelled_transitions,
        {
          "reference": "int",
          "candidate": "int",
          "count": "int",
          "share_of_flips": "pct",
          "share_of_reference": "pct",
        },
      ),
    ]
  if unlabelled_confidence is not None:
    parts += [
      "<h3>Flips by your model's confidence</h3>",
      html.table(
        unlabelled_confidence,
        {
          "low_edge": "g",
          "high_edge": "g",
          "n": "int",
          "flips": "int",
          "flip_rate": "pct",
          "low": "pct",
          "high": "pct",
          "share_of_flips": "pct",
        },
      ),
    ]
  return "".join(parts)


def _card(row, png, path):
  def shown(name, conf):
    return f"{name}" + ("" if conf != conf else f" ({100 * conf:.0f}%)")

  thumb = html.img(png, f"flipped image {path or row['id']}") if png else ""
  kind = gallery_lib.CHANGED
  return (
    f"<div class=\"gal-card {gallery_view.CLASS[kind]}\"><div class=\"gal-head\">"
    f"<span class=\"gal-badge {gallery_view.CLASS[kind]}\">flip</span><span>#"
    f"{html.esc(row['rank'])} · id {html.esc(row['id'])}</span></div>{thumb}"
    f"{gallery_view.path_line(path)}"
    f"<div>your model: <b>{html.esc(shown(row['reference_name'], row['reference_confidence']))}"
    f"</b></div><div>file: <b>{html.esc(shown(row['candidate_name'], row['candidate_confidence']))}"
    "</b></div></div>"
  )


def _gallery(unlabelled_flips, unlabelled_gallery):
  if unlabelled_flips is None or unlabelled_flips.empty:
    return unit.Skip("no file flipped a decision of your model")
  g = unlabelled_gallery or {}
  size, images, paths = g.get("size", 12), g.get("images", {}), g.get("paths", {})
  parts = [
    "<p class=\"gal-intro\">Per file, the images whose decision it flipped, those your model was "
    f"most confident of first (at most {size}), with both decisions and their softmax "
    "confidence.</p>"
  ]
  for variant, rows in unlabelled_flips.groupby("variant", sort=True):
    parts.append(
      f"<h3>{html.esc(variant)} <span class=\"gal-intro\">({len(rows)} flips)</span></h3>"
    )
    parts.append("<div class=\"gal-cards\">")
    for _, row in rows[rows["rank"] <= size].iterrows():
      parts.append(_card(row, images.get(int(row["id"])), paths.get(int(row["id"]))))
    parts.append("</div>")
  return "".join(parts)


UNIT = unit.Unit(
  "unlabelled",
  reads=("run", "config", "options"),
  makes=TABLES,
  gives=("variants", "recommendation", "gallery_cards", "unlabelled_gallery"),
  compute=_compute,
  sections=(
    unit.Section(
      "verdict",
      "Verdict without labels: which file decides like your model on these images",
      "Verdict",
      ("recommendation", "settings"),
      _verdict,
    ),
    unit.Section(
      "unlabelled",
      "1. Each file against your model, without labels (K = 1)",
      "1 Files",
      ("unlabelled_files", "unlabelled_classes", "unlabelled_transitions", "unlabelled_confidence"),
      _render,
    ),
    unit.Section(
      "unlabelled-gallery",
      "2. Gallery: the flipped images, most confident first",
      "2 Gallery",
      ("unlabelled_flips", "unlabelled_gallery"),
      _gallery,
    ),
  ),
)
