"""The HTML of the family galleries of Taxicab CIEs (004 Figure 3; `gallery.build_families`).

One block per variant family: a heading with the family's variants, a legend line counting
the cards of each kind, then one card per example. A card's kind ("broken", "fixed",
"changed", "same modal"; `gallery.kind_of`) shows three ways: its border colour, a badge with
the word, and the word again on every variant row (colour is never the only cue). Thumbnails
are `<img>` data URIs with `width` / `height` equal to the PNG's own size, and no CSS resizes
them. Every piece of text goes through `html.escape`; class names start with `gal-`, and
`CSS` holds their rules (appended to the page's stylesheet).
"""

from tf_forget.report import gallery as gallery_lib
from tf_forget.report import html as html_lib
from tf_forget.report.words import naming

ORDER = (gallery_lib.BROKEN, gallery_lib.FIXED, gallery_lib.CHANGED, gallery_lib.SAME)
CLASS = {
  gallery_lib.BROKEN: "gal-broken",
  gallery_lib.FIXED: "gal-fixed",
  gallery_lib.CHANGED: "gal-changed",
  gallery_lib.SAME: "gal-same",
}
MEANING = {
  gallery_lib.BROKEN: "dense modal label right, compressed modal label wrong",
  gallery_lib.FIXED: "dense modal label wrong, compressed modal label right",
  gallery_lib.CHANGED: "both modal labels wrong, and different",
  gallery_lib.SAME: "the label counts differ (d_T > 0) but the modal label is the same",
}

CSS = """
.gal-intro{color:#555;max-width:1000px;font-size:13px}
.gal-legend{font-size:12px;margin:4px 0 8px 0}
.gal-legend .gal-badge{margin:0 2px 0 10px}
.gal-cards{display:flex;flex-wrap:wrap;gap:10px;align-items:flex-start}
.gal-card{flex:0 0 auto;width:186px;box-sizing:border-box;border:3px solid #999;
border-radius:4px;padding:5px;font-size:11px;background:#fafafa}
.gal-card img{display:block;margin:2px auto 4px auto;max-width:none;
image-rendering:pixelated;border:1px solid #ddd}
.gal-badge{display:inline-block;padding:0 5px;border-radius:3px;font-weight:bold;
font-size:11px;text-transform:uppercase;letter-spacing:.03em;color:#fff}
.gal-head{display:flex;justify-content:space-between;align-items:center;margin-bottom:2px}
.gal-rows{list-style:none;margin:4px 0 2px 0;padding:0}
.gal-rows li{border-left:4px solid #999;padding:1px 0 1px 4px;margin:2px 0;
background:#fff;overflow-wrap:anywhere}
.gal-v{font-family:monospace;font-weight:bold}
.gal-word{font-weight:bold}
.gal-attrs{color:#555;margin-top:2px;overflow-wrap:anywhere}
.gal-path{color:#333;font-family:monospace;font-size:10px;overflow-wrap:anywhere}
.gal-empty{color:#777;font-style:italic}
.gal-card.gal-broken{border-color:#c62828}.gal-badge.gal-broken{background:#c62828}
.gal-rows li.gal-broken{border-left-color:#c62828}.gal-word.gal-broken{color:#b71c1c}
.gal-card.gal-fixed{border-color:#2e7d32}.gal-badge.gal-fixed{background:#2e7d32}
.gal-rows li.gal-fixed{border-left-color:#2e7d32}.gal-word.gal-fixed{color:#1b5e20}
.gal-card.gal-changed{border-color:#e69f00}.gal-badge.gal-changed{background:#f0b400;
color:#222}.gal-rows li.gal-changed{border-left-color:#e69f00}
.gal-word.gal-changed{color:#8a5a00}
.gal-card.gal-same{border-color:#9e9e9e;border-style:dashed}
.gal-badge.gal-same{background:#757575}.gal-rows li.gal-same{border-left-color:#9e9e9e}
.gal-word.gal-same{color:#555}
"""


def badge(kind):
  """The kind as a coloured word."""
  return f"<span class=\"gal-badge {CLASS[kind]}\">{html_lib.esc(kind)}</span>"


def legend(cards):
  """The line above a family's cards: how many cards of each kind."""
  counts = {k: sum(e["kind"] == k for e in cards) for k in ORDER}
  parts = "".join(f"{badge(k)} {counts[k]}" for k in ORDER)
  return f"<p class=\"gal-legend\">{len(cards)} card{'s' if len(cards) != 1 else ''}:{parts}</p>"


def _row(row):
  """One variant flagging the example: its rank, d_T, dense -> compressed modal, kind."""
  kind = row["kind"]
  dense = naming.shown_label(row["dense_modal_name"], row["dense_modal"])
  compressed = naming.shown_label(row["compressed_modal_name"], row["compressed_modal"])
  return (
    f"<li class=\"{CLASS[kind]}\"><span class=\"gal-v\">"
    f"{html_lib.esc(row['variant'])}</span>"
    f"<br>#{html_lib.esc(row['rank'])} · d<sub>T</sub> {html_lib.esc(row['distance'])}/"
    f"{html_lib.esc(row['max_distance'])} · <span class=\"gal-word {CLASS[kind]}\">"
    f"{html_lib.esc(kind)}"
    f"</span><br>modal: dense {html_lib.esc(dense)} → {html_lib.esc(compressed)}</li>"
  )


def path_line(path):
  """The example's file under the data root, on its card ("" without one)."""
  return f"<div class=\"gal-path\">{html_lib.esc(path)}</div>" if path else ""


def card(entry, protected):
  """One example: kind badge, thumbnail, true label, one row per flagging variant, attributes.

  Args:
    entry: a `gallery.family_entries` dict (optionally with `png`).
    protected: attribute names always shown (the others only when True).
  """
  kind = entry["kind"]
  label = naming.shown_label(entry["label_name"], entry["label"])
  thumb = (
    html_lib.img(entry["png"], f"example {entry.get('path') or entry['id']}, true label {label}")
    if "png" in entry
    else ""
  )
  attrs = [f"{a}={int(v)}" for a, v in entry["attributes"].items() if a in protected or v]
  attrs_html = (
    f"<div class=\"gal-attrs\">{html_lib.esc(', '.join(attrs) or 'no attributes')}</div>"
    if entry["attributes"]
    else ""
  )
  rows = "".join(_row(r) for r in entry["variants"])
  return (
    f"<div class=\"gal-card {CLASS[kind]}\" title=\"{html_lib.esc(kind)}: "
    f"{html_lib.esc(MEANING[kind])}\">"
    f"<div class=\"gal-head\">{badge(kind)}<span>#{html_lib.esc(entry['rank'])} · id "
    f"{html_lib.esc(entry['id'])}</span></div>{thumb}{path_line(entry.get('path'))}"
    f"<div>true: <b>{html_lib.esc(label)}</b></div>"
    f"<ul class=\"gal-rows\">{rows}</ul>{attrs_html}</div>"
  )


def html(gallery, protected):
  """The gallery section's inner HTML.

  Args:
    gallery: family -> {"variants", "cards"} (`gallery.build_families`, cards with `png`).
    protected: attribute names shown on every card (others only when True).

  Returns:
    str.
  """
  meanings = "; ".join(f"<b>{html_lib.esc(k)}</b>: {html_lib.esc(MEANING[k])}" for k in ORDER)
  parts = [
    f"<p class=\"gal-intro\">One gallery per family: a trained variant and its "
    f"quantized or encoded children. Each example is shown once, with every variant of "
    f"the family that changes its label counts (Taxicab distance d<sub>T</sub> &gt; 0 "
    f"out of 2N), ordered by its best rank in any of them. A card's kind is the first "
    f"of broken, changed, fixed, same modal among its variants. {meanings}.</p>"
  ]
  for fam, g in gallery.items():
    variants = ", ".join(g["variants"])
    parts.append(
      f"<h3>{html_lib.esc(fam)} <span class=\"gal-intro\">(variants: "
      f"{html_lib.esc(variants)})</span></h3>"
    )
    if not g["cards"]:
      parts.append(
        "<p class=\"gal-empty\">No example changed between dense and any variant "
        "of this family (every Taxicab distance is 0).</p>"
      )
      continue
    parts.append(legend(g["cards"]))
    parts.append("<div class=\"gal-cards\">")
    parts += [card(e, protected) for e in g["cards"]]
    parts.append("</div>")
  return "".join(parts)
