"""The labelled test set and the deployment's images side by side (docs/spec.md §8.11;
`tf_forget.report.side_by_side`): one row per file with both views, the sentences where they
disagree, the measures without labels on the deployment's images and their flipped images.

Left out of the page when the audit names no deployment images. It reads the verdict table, so
it runs after the verdict unit; its settings (`side_by_side.SETTINGS_KEY`) and its table
`side_by_side` are what the terminal summary reads from report.json.
"""

from tf_forget.report import collect
from tf_forget.report import gallery as gallery_lib
from tf_forget.report import html
from tf_forget.report import side_by_side as sbs
from tf_forget.report import unit
from tf_forget.report.units import unlabelled

P = sbs.PREFIX
TABLES = (sbs.TABLE,) + tuple(P + t[len("unlabelled_") :] for t in unlabelled.TABLES)


def _compute(run, options, verdict):
  found = sbs.compute(run, verdict)
  if found is None:
    return unit.Part()
  tables, _, settings, deployed = found
  flips = tables.get(P + "flips")
  size = int(options.get("gallery_size") or 12)
  shown = flips[flips["rank"] <= size] if flips is not None and not flips.empty else None
  ids = sorted({int(i) for i in shown["id"]}) if shown is not None else []
  images = {i: gallery_lib.thumbnail(x) for i, x in zip(ids, collect.images_for(deployed, ids))}
  paths = collect.example_paths(deployed) or {}
  return unit.Part(
    tables,
    notes={sbs.SETTINGS_KEY: settings.pop("notes")},
    settings={sbs.SETTINGS_KEY: settings},
    gives={"deployment_gallery": {"size": size, "images": images, "paths": paths}},
  )


COLUMNS = {
  "variant": None,
  "top1_change": "pts",
  "top1_low": "pts",
  "top1_high": "pts",
  "significant_classes": "int",
  "labelled_verdict": None,
  "flips": "int",
  "flip_rate": "pct",
  "flip_low": "pct",
  "flip_high": "pct",
  "worst_class": None,
  "worst_class_flip_rate": "pct",
  "confident_flips": "int",
  "confident_flip_rate": "pct",
  "decides_like": None,
}


def _render(side_by_side, settings):
  if side_by_side is None:
    return unit.Skip("no --deployment_images")
  s = (settings or {}).get(sbs.SETTINGS_KEY) or {}
  said = [x for x in side_by_side["disagreement"] if x]
  shown = side_by_side[[c for c in COLUMNS if c in side_by_side]]
  bounds = ", ".join(f"{g} {html.fmt(b, 'pct')}" for g, b in (s.get("rule_bounds") or {}).items())
  return (
    "<p class=\"lead\">Two views of each file. <b>Labelled test set:</b> the top-1 change "
    "against your model, the classes whose recall changed significantly and the verdict of the "
    "ship rule. <b>Your deployment images</b> "
    f"({html.esc(s.get('source'))}:{html.esc(s.get('where'))}, {html.esc(s.get('images'))} "
    "images, no labels): how often the file decides otherwise than your model (a flip is a "
    "changed decision, not an error), with its exact 95% interval, the worst class flip rate "
    "and the confident flips; a file decides like your model when every rate is within the "
    f"rule's bounds ({html.esc(bounds)}; docs/spec.md §8.9).</p>"
    + (
      "<p><b>Where they disagree:</b></p><ul>"
      + "".join(f"<li>{html.esc(x)}</li>" for x in said)
      + "</ul>"
      if said
      else "<p>The two views agree on every file.</p>"
    )
    + html.table(shown, {c: f for c, f in COLUMNS.items() if f})
  )


def _render_all(
  side_by_side,
  deployment_images_files,
  deployment_images_classes,
  deployment_images_transitions,
  deployment_images_confidence,
  settings,
):
  found = _render(side_by_side, settings)
  if isinstance(found, unit.Skip):
    return found
  more = unlabelled._render(
    deployment_images_files,
    deployment_images_classes,
    deployment_images_transitions,
    deployment_images_confidence,
  )
  return found + (
    "" if isinstance(more, unit.Skip) else "<h3>On your deployment images</h3>" + more
  )


def _gallery(deployment_images_flips, deployment_gallery):
  if deployment_images_flips is None:
    return unit.Skip("no --deployment_images")
  return unlabelled._gallery(deployment_images_flips, deployment_gallery)


UNIT = unit.Unit(
  "side_by_side",
  reads=("run", "options", "verdict"),
  makes=TABLES,
  gives=("deployment_gallery",),
  compute=_compute,
  sections=(
    unit.Section(
      "side-by-side",
      "Side by side: your labelled test set and your deployment images",
      "Side by side",
      TABLES[:-1] + ("settings",),
      _render_all,
      optional=True,
    ),
    unit.Section(
      "deployment-gallery",
      "Gallery: the flipped deployment images, most confident first",
      "Deployment gallery",
      (P + "flips", "deployment_gallery"),
      _gallery,
      optional=True,
    ),
  ),
)
