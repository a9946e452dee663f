"""Output divergence from the logits (`divergence_report`): KL, Δp and flips of every compressed
file against its reference, per class and subgroup, and the largest-KL examples (with their
thumbnails, `divergence_images`, for the gallery).

The "divergence" section renders `divergence_report`'s tables: a lead saying what KL and Δp are and
which reference each variant is compared with ("same network" or "independent member k"), one row
per variant (KL and Δp with their interval and percentiles, agreement, flips), the classes of
largest mean KL, the subgroups of the protected attributes, and the largest-KL examples (a table
here; their thumbnails as cards in the gallery section, `gallery`). Always shown: without a row it
says why (no saved logits, no compressed variant).
"""

from tf_forget.report import divergence_report
from tf_forget.report import gallery_view
from tf_forget.report import html
from tf_forget.report import unit
from tf_forget.report.words import naming
from tf_forget.report.words import paragraphs

# KL and Δp in "g" (6 significant digits): a quantized file's KL is often ~1e-6.
FORMATS = {
  "n": "int",
  "pairs": "int",
  "broken": "int",
  "fixed": "int",
  "changed": "int",
  "class": "int",
  "rank": "int",
  "id": "int",
  "label": "int",
  "k_dense": "int",
  "k_variant": "int",
  "reference_prediction": "int",
  "candidate_prediction": "int",
  "agreement": html.PCT,
  "flip_rate": html.PCT,
  **{
    c: "g"
    for c in divergence_report.COLUMNS + divergence_report.EXAMPLE_COLUMNS
    if c.startswith(("kl", "delta_p"))
  },
}
WORST_CLASSES = 5  # classes of largest mean KL shown per variant
KL_COLUMNS = [
  "variant",
  "reference",
  "pair_members",
  "design",
  "n",
  "kl_mean",
  "kl_low",
  "kl_high",
  "kl_p50",
  "kl_p90",
  "kl_p99",
  "kl_max",
]
FLIP_COLUMNS = [
  "variant",
  "delta_p_mean",
  "delta_p_low",
  "delta_p_high",
  "delta_p_min",
  "delta_p_p1",
  "delta_p_p10",
  "delta_p_p50",
  "delta_p_p90",
  "agreement",
  "flip_rate",
  "broken",
  "fixed",
  "changed",
]


def references(top):
  """A list: which reference each variant is compared with, and the baseline row's meaning."""
  items = []
  for _, r in top.iterrows():
    if r["variant"] == divergence_report.BASELINE:
      items.append(
        "dense (independent): dense member k against dense member k + 1 — what two "
        "networks of the same recipe differ by, the yardstick for independent "
        "members"
      )
      continue
    what = (
      "its own network before compression"
      if r["reference"] == divergence_report.SAME
      else "an independently trained dense network"
    )
    items.append(
      f"{r['variant']} against {r['reference']}: {what} (dense member → "
      f"{r['variant']} member: {r['pair_members']})"
    )
  return (
    "<p class=\"lead\">Each file against its reference, the dense float32 file:</p><ul "
    "class=\"lead\">" + "".join(f"<li>{html.esc(i)}</li>" for i in items) + "</ul>"
  )


def worst_classes(classes):
  """The `WORST_CLASSES` classes of largest mean KL per variant."""
  head = f"<h3>Classes of largest mean KL (at most {WORST_CLASSES} per variant)</h3>"
  moved = classes[classes.kl_mean > 0]
  if moved.empty:
    return "" if classes.empty else head + html.skipped(["every class's mean KL is 0"])
  worst = (
    moved.sort_values(["variant", "kl_mean", "class"], ascending=[True, False, True], kind="stable")
    .groupby("variant", sort=False)
    .head(WORST_CLASSES)
  )
  cols = [
    "variant",
    "class_name",
    "n",
    "kl_mean",
    "kl_low",
    "kl_high",
    "kl_p90",
    "delta_p_mean",
    "delta_p_p10",
    "flip_rate",
  ]
  return (
    head
    + html.table(worst[cols], FORMATS)
    + "<p class=\"lead\">Every class in tables/divergence_classes.csv.</p>"
  )


def subgroups(groups):
  """The subgroup table (protected attributes only), or nothing."""
  if groups is None or groups.empty:
    return ""
  cols = ["variant", "subgroup"] + [c for c in divergence_report.GROUP_STATS]
  return "<h3>Subgroups of the protected attributes</h3>" + html.table(groups[cols], FORMATS)


def examples(rows):
  """The largest-KL examples (their thumbnails are in the gallery section)."""
  if rows.empty:
    return html.skipped(["no example's output changed (every KL is 0)"])
  cols = (
    ["variant", "rank", "id"]
    + (["path"] if "path" in rows else [])
    + [
      "label_name",
      "reference_prediction",
      "candidate_prediction",
      "kind",
      "kl",
      "delta_p",
      "k_dense",
      "k_variant",
    ]
  )
  shown = rows[cols].assign(
    label_name=[naming.shown_label(n, c) for n, c in zip(rows["label_name"], rows["label"])]
  )
  return (
    "<h3>Examples of largest KL</h3>"
    + html.table(shown, FORMATS, max_rows=60)
    + "<p class=\"lead\">Their images: <a href=\"#gallery\">gallery</a>; every one in "
    "tables/divergence_examples.csv.</p>"
  )


def section(top, divergence_classes, divergence_examples, divergence_subgroups, notes):
  """The "divergence" section's HTML (`unit.Skip` with why when there is no row).

  Args:
    top, divergence_classes, divergence_examples, divergence_subgroups: the tables of
      `divergence_report.compute` (None when not made).
    notes: its notes (a list).
  """
  if top is None or top.empty:
    return unit.Skip.of(notes or ["no compressed variant"])
  out = [
    f"<p class=\"lead\">{html.esc(paragraphs.DIVERGENCE_LEAD)}</p>",
    references(top),
    "<h3>KL(reference ‖ file), nats</h3>",
    html.table(top[KL_COLUMNS], FORMATS),
    "<h3>Δp of the true class, and flips</h3>",
    html.table(top[FLIP_COLUMNS], FORMATS),
    worst_classes(divergence_classes),
    subgroups(divergence_subgroups),
    examples(divergence_examples),
  ]
  if notes:
    out.append(html.skipped(notes))
  return "".join(out)


def _card(row, png):
  """One largest-KL example: kind badge, thumbnail, label, both predictions, KL, Δp, pair."""
  kind = row["kind"]
  badge = (
    gallery_view.badge(kind)
    if kind in gallery_view.CLASS
    else f"<span class=\"gal-badge gal-same\">{html.esc(kind)}</span>"
  )
  css = gallery_view.CLASS.get(kind, "gal-same")
  label = naming.shown_label(row["label_name"], row["label"])
  path = row.get("path") if isinstance(row.get("path"), str) else None
  thumb = html.img(png, f"example {path or row['id']}, true label {label}") if png else ""
  return (
    f"<div class=\"gal-card {css}\"><div class=\"gal-head\">{badge}<span>#"
    f"{int(row['rank'])} · id {int(row['id'])}</span></div>{thumb}"
    f"{gallery_view.path_line(path)}<div>true: <b>{html.esc(label)}</b></div>"
    f"<div>reference {int(row['reference_prediction'])} → file "
    f"{int(row['candidate_prediction'])}</div>"
    f"<div>KL {row['kl']:.4g} nats · Δp {row['delta_p']:+.3f}</div>"
    f"<div class=\"gal-attrs\">dense {int(row['k_dense'])} → member "
    f"{int(row['k_variant'])}</div></div>"
  )


def gallery(rows, images):
  """The gallery section's largest-KL cards, one block per variant ("" without rows).

  Args:
    rows: the `divergence_examples` table, or None.
    images: {example id: PNG bytes} (`divergence_report.thumbnails`).
  """
  if rows is None or rows.empty:
    return ""
  parts = [
    "<h3>Largest output divergence (KL) per variant (section 1c)</h3>"
    "<p class=\"gal-intro\">The test examples whose softmax output moved most from the "
    "reference's, largest KL first, each once (at its largest KL over the member "
    "pairs).</p>"
  ]
  for variant, group in rows.groupby("variant", sort=False):
    parts.append(f"<h3>{html.esc(variant)}</h3><div class=\"gal-cards\">")
    parts += [_card(r, images.get(int(r["id"]))) for _, r in group.iterrows()]
    parts.append("</div>")
  return "".join(parts)


TABLES = ("divergence", "divergence_classes", "divergence_examples", "divergence_subgroups")


def _compute(run, options):
  tables, notes, settings = divergence_report.compute(run, size=options["gallery_size"])
  images = divergence_report.thumbnails(run, tables.get("divergence_examples"))
  return unit.Part(tables, notes, settings, {"divergence_images": images})


def _render(divergence, divergence_classes, divergence_examples, divergence_subgroups, notes):
  return section(
    divergence,
    divergence_classes,
    divergence_examples,
    divergence_subgroups,
    notes.get(divergence_report.KEY, []),
  )


UNIT = unit.Unit(
  "divergence",
  reads=("run", "options"),
  makes=TABLES,
  gives=("divergence_images",),
  compute=_compute,
  sections=(
    unit.Section(
      "divergence",
      "1c. Output divergence: how far each file's outputs moved (KL, Δp)",
      "1c Divergence",
      TABLES + ("notes",),
      _render,
    ),
  ),
)
