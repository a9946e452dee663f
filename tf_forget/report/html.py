"""The self-contained `report.html`: one page, read top to bottom.

The page's parts — tables, figure-beside-numbers pairs, the page itself — for the sections of
`units.registry.PAGE` (which gives their order: the verdict and the "nothing changed" view
first, then what changed). Every figure sits beside the table of its numbers.

Self-contained: images are base64 PNG data URIs, the CSS is inline, nothing is fetched. Every
piece of text goes through `html.escape`. Undefined numbers (NaN) print as "n/a".
"""

import base64
import html
import math

import numpy as np

# Figures are drawn at FIGURE_SCALE x their CSS size (`figure_kit.SCALE`) and shown at
# natural width / FIGURE_SCALE, so the browser only ever scales them down.
FIGURE_SCALE = 2
FILTER_MIN_ROWS = 10
# Cell formats of `fmt` whose names say little (the others: "int", "p", "g", "num").
PCT = "pct"  # a fraction, shown in percent
PTS = "pct_pts"  # a relative change already in percent
PTS_ABS = "pts"  # a difference of fractions, shown in points

CSS = """
body{font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:0 auto;
max-width:1250px;padding:16px 24px;color:#222;background:#fff;line-height:1.4}
h1{font-size:1.5em;margin:.2em 0}h2{border-bottom:2px solid #8e4585;padding-bottom:4px;
margin-top:2em}h3{margin:1.2em 0 .4em}
.pair{display:flex;flex-wrap:wrap;gap:18px;align-items:flex-start}
.pair>figure{margin:0;flex:0 1 680px;max-width:760px}.stack>figure{flex:1 1 100%;
max-width:1200px}.pair>figure img{max-width:100%;height:auto;
border:1px solid #ddd}.pair>.numbers{flex:1 1 380px;overflow-x:auto;max-height:560px;
overflow-y:auto}
table{border-collapse:collapse;font-size:12px;margin:4px 0}th,td{border:1px solid #ccc;
padding:2px 6px;text-align:right;white-space:nowrap}th{background:#f2eef5}
td.t,th.t{text-align:left}tr.sig td{background:#f6e8f3}.na{color:#999}
.lead{color:#555;max-width:1000px}.skip{color:#777;font-style:italic}
.gallery{display:flex;flex-wrap:wrap;gap:10px}.card{border:1px solid #ccc;padding:6px;
width:170px;font-size:11px;background:#fafafa}.card img{image-rendering:pixelated;
display:block;margin:0 auto 4px auto;max-width:128px}.card .changed{color:#c44e52;
font-weight:bold}code{background:#f4f4f4;padding:0 3px}
nav#toc{position:sticky;top:0;z-index:10;background:#fff;border-bottom:1px solid #ddd;
padding:6px 0;font-size:13px}nav#toc a{margin-right:10px;white-space:nowrap;color:#5a2a55}
section{scroll-margin-top:48px}.tablewrap{overflow-x:auto;max-width:100%}
table.sortable th{cursor:pointer}table.sortable th:after{content:" \\2195";color:#bbb}
input.filter{font-size:12px;margin:4px 0;padding:2px 4px;width:220px}
.verdict-pass{color:#2b7a3d}.verdict-fail{color:#b3261e;font-weight:bold}
.verdict-rec{background:#e5f4e8;font-weight:bold}.verdict-over{color:#a15c00}
p.recommendation{font-size:1.15em;background:#f3faf4;border-left:5px solid #2b7a3d;
padding:8px 12px;max-width:1150px}p.recommendation.none{background:#fdf1f0;
border-left-color:#b3261e}p.user-file{max-width:1150px;border-left:5px solid #8e4585;
padding:4px 12px;margin:4px 0;background:#faf5f9}.caveat{color:#8a5a00}dl.glossary dt{font-weight:bold;
margin-top:.5em}dl.glossary dd{margin-left:1.5em;max-width:1000px}
figure img{max-width:100%;height:auto}p.meta{font-size:12px;color:#555;margin:0 0 6px 0}table.verdict td{white-space:normal;text-align:left;
min-width:70px;max-width:260px;vertical-align:top}table.verdict th{white-space:normal}
"""

# Sorting (click a header) and filtering (type in the box above a table): a few lines, no
# library, nothing fetched. Numbers sort by value ("n/a" last), text alphabetically.
SCRIPT = """
(function(){
function val(td){var t=td.textContent.trim();if(t==="n/a"||t==="")return null;
var m=t.replace(/\u2212/g,"-").match(/^[+-]?[0-9]*\\.?[0-9]+(e[+-]?[0-9]+)?/i);
return m?parseFloat(m[0]):t.toLowerCase();}
document.querySelectorAll("table.sortable").forEach(function(tb){
tb.querySelectorAll("thead th").forEach(function(th,i){var asc=true;
th.addEventListener("click",function(){var body=tb.tBodies[0];
var rows=Array.prototype.slice.call(body.rows);rows.sort(function(a,b){
var x=val(a.cells[i]),y=val(b.cells[i]);if(x===null)return 1;if(y===null)return -1;
if(typeof x!==typeof y){x=String(x);y=String(y);}
return (x<y?-1:x>y?1:0)*(asc?1:-1);});asc=!asc;rows.forEach(function(r){body.appendChild(r);});
});});});
document.querySelectorAll("input.filter").forEach(function(inp){
var tb=inp.nextElementSibling;inp.addEventListener("input",function(){
var q=inp.value.toLowerCase();Array.prototype.forEach.call(tb.tBodies[0].rows,function(r){
r.style.display=r.textContent.toLowerCase().indexOf(q)>=0?"":"none";});});});
})();
"""


def esc(text):
  """HTML-escaped text (quotes included)."""
  return html.escape(str(text), quote=True)


def fmt(value, kind="num"):
  """Formats a cell: "pct" fraction -> percent, "pts" a difference of fractions -> signed
  percentage points ("+1.20 pt"), "pct_pts" already percent (a relative change), "int", "p"
  (p-value), "g" (shortest, e.g. a ratio 10), "num"; NaN / None -> "n/a"."""
  if value is None or isinstance(value, str) or isinstance(value, (bool, np.bool_)):
    return "n/a" if value is None else str(value)
  v = float(value)
  if math.isnan(v):
    return "n/a"
  if kind == "pct":
    return f"{100 * v:.2f}%"
  if kind == "pct_pts":
    return f"{v:+.2f}%"
  if kind == "pts":
    return f"{100 * v:+.2f} pt"
  if kind == "int":
    return str(int(round(v)))
  if kind == "p":
    return f"{v:.2e}" if v < 1e-3 else f"{v:.4f}"
  if kind == "g":
    return f"{v:g}"
  return f"{v:.4f}"


def table(frame, formats=None, highlight=None, max_rows=None, classes="sortable", row_classes=None):
  """An HTML table of a DataFrame; `formats` col -> kind (see `fmt`); text columns left.

  Args:
    frame: DataFrame (its index is dropped; reset it first to keep it).
    formats: column -> format kind.
    highlight: optional bool sequence marking rows (class `sig`).
    max_rows: show at most this many rows and say how many were left out.
    classes: CSS classes of the table ("sortable": click a header to sort).
    row_classes: optional per-row CSS class (overrides `highlight`'s `sig`).

  Returns:
    The table's HTML, inside a horizontally scrollable box (never clipped); tables of
    `FILTER_MIN_ROWS` rows or more get a filter box.
  """
  formats = formats or {}
  cols = list(frame.columns)
  out = ["<div class=\"tablewrap\">"]
  if len(frame) >= FILTER_MIN_ROWS:
    out.append("<input class=\"filter\" placeholder=\"filter rows\" aria-label=\"filter rows\">")
  out.append(f"<table class=\"{esc(classes)}\"><thead><tr>")
  out += [f"<th class=\"t\">{esc(c)}</th>" for c in cols]
  out.append("</tr></thead><tbody>")
  rows = list(frame.itertuples(index=False))
  marks = list(highlight) if highlight is not None else [False] * len(rows)
  marks = [("sig" if m else "") for m in marks]
  if row_classes is not None:
    marks = list(row_classes)
  shown = rows if max_rows is None else rows[:max_rows]
  for row, mark in zip(shown, marks):
    out.append(f"<tr class=\"{esc(mark)}\">" if mark else "<tr>")
    for c, v in zip(cols, row):
      text = fmt(v, formats.get(c, "num"))
      cls = "t" if isinstance(v, str) else ("na" if text == "n/a" else "")
      out.append(f"<td class=\"{cls}\">{esc(text)}</td>")
    out.append("</tr>")
  out.append("</tbody></table></div>")
  if max_rows is not None and len(rows) > max_rows:
    out.append(f"<p class=\"skip\">{len(rows) - max_rows} more rows in the CSV.</p>")
  return "".join(out)


def without_empty(frame, column="topk"):
  """The frame without `column` when it is entirely NaN (top-5 of a task with <= 5 classes)."""
  if column in frame and frame[column].isna().all():
    return frame.drop(columns=[column])
  return frame


def png_size(png):
  """(width, height) in pixels of PNG bytes, read from the IHDR chunk."""
  if png[:8] != b"\x89PNG\r\n\x1a\n" or png[12:16] != b"IHDR":
    raise ValueError("not a PNG")
  return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


def img(png, alt, scale=1):
  """An <img> with the PNG inlined as a base64 data URI, shown at its natural size / `scale`
  CSS px (width and height set: never upscaled; CSS may only shrink it to the column)."""
  data = base64.b64encode(png).decode("ascii")
  w, h = png_size(png)
  return (
    f"<img alt=\"{esc(alt)}\" width=\"{w // scale}\" height=\"{h // scale}\" "
    f"src=\"data:image/png;base64,{data}\">"
  )


def pair(png, alt, numbers_html, stacked=False):
  """A figure (drawn at `FIGURE_SCALE`) with its numbers beside it (`stacked`: a full-width
  figure, numbers below)."""
  cls = "pair stack" if stacked else "pair"
  return (
    f"<div class=\"{cls}\"><figure>{img(png, alt, FIGURE_SCALE)}</figure>"
    f"<div class=\"numbers\">{numbers_html}</div></div>"
  )


def skipped(reasons):
  """The line shown for a section that does not apply."""
  text = "; ".join(reasons) if reasons else "not applicable to this run"
  return f"<p class=\"skip\">Not shown: {esc(text)}.</p>"


def page(title, intro_rows, sections, css=""):
  """Assembles the page.

  Args:
    title: page title (escaped here).
    intro_rows: list of (label, value) pairs shown under the title (escaped here).
    sections: [(id, title, short name, inner HTML)] in page order (`unit.render`): the
      title and short name are escaped here, the inner HTML is not.
    css: more style rules (e.g. `gallery_view.CSS`).

  Returns:
    str, the whole document.
  """
  out = [
    "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">",
    f"<title>{esc(title)}</title><style>{CSS}{css}</style></head><body>",
    f"<h1>{esc(title)}</h1><p class=\"meta\">",
  ]
  out.append(" · ".join(f"<b>{esc(k)}</b>: {esc(v)}" for k, v in intro_rows))
  out.append("</p><nav id=\"toc\">")
  out.append(
    " ".join(
      f"<a href=\"#{sid}\" title=\"{esc(name)}\">{esc(nav)}</a>" for sid, name, nav, _ in sections
    )
  )
  out.append("</nav>")
  for sid, name, _, inner in sections:
    out.append(f"<section id=\"{sid}\"><h2>{esc(name)}</h2>{inner}</section>")
  out.append(f"<script>{SCRIPT}</script></body></html>\n")
  return "".join(out)
