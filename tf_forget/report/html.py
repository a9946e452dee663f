"""The self-contained `report.html`: one page, read top to bottom (issue #6 "Outputs").

Order: the "nothing changed" view (top-line accuracy per variant) first, then what changed —
class level (000 Figure 2), #significant classes and #PIE, accuracy on PIE / non-PIE / all
(000 Table 6) and on Taxicab CIEs (004 Table 2), subgroups (004 Tables 3-5), over-indexing
(004 Figure 2), robustness (000 Table 3), recall distortion α (002), 002's study of one-shot
pruning (α per algorithm and ratio, its t-tests), deployment and the CIE gallery (004
Figure 3). Every figure sits beside the table of its numbers.

Self-contained: images are base64 PNG data URIs, the CSS is inline, nothing is fetched. Every
piece of text goes through `html.escape`. Undefined numbers (NaN) print as "n/a".
"""

import base64
import html
import math

import numpy as np

SECTIONS = (
    ("overview", "Overview"),
    ("topline", "1. Top-line accuracy: the \"nothing changed\" view"),
    ("class-level", "2. Class level: which classes changed (000 Figure 2)"),
    ("pie", "3. Pruning / compression identified exemplars (PIE)"),
    ("subgroups", "4. Subgroups: error, FPR, FNR (004 Tables 3-5)"),
    ("over-indexing", "5. Attribute over-indexing among CIEs (004 Figure 2)"),
    ("robustness", "6. Robustness to corruptions (000 Table 3)"),
    ("noise", "7. l-inf noise: accuracy, prune potential, similarity (003 §4.1, §5)"),
    ("recall-distortion", "8. Recall distortion slope α (002)"),
    ("recall-study", "9. Recall distortion after one-shot pruning (002)"),
    ("deployment", "10. Deployment: encoding, size, latency vs accuracy"),
    ("gallery", "11. Gallery: top Taxicab CIEs for human review (004 Figure 3)"),
    ("notes", "Notes"),
)

# Sections shown only when their measure applies (`sections.build` returns them then):
# (id, title, the section they follow). A run without them renders exactly as before.
OPTIONAL_SECTIONS = (
    ("published", "6b. Published test sets: ImageNet-A (000 Table 8), CIFAR-10.1", "robustness"),
    ("prune-retrain", "9b. Prune-retrain: how far each parent prunes, per distribution (003)",
     "recall-study"),
)

CSS = """
body{font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:0 auto;
max-width:1250px;padding:16px 24px;color:#222;background:#fff;line-height:1.4}
h1{font-size:1.6em;margin-bottom:.2em}h2{border-bottom:2px solid #8e4585;padding-bottom:4px;
margin-top:2em}h3{margin:1.2em 0 .4em}
.pair{display:flex;flex-wrap:wrap;gap:18px;align-items:flex-start}
.pair>figure{margin:0;flex:0 1 680px;max-width:760px}.stack>figure{flex:1 1 100%;
max-width:1200px}.pair>figure img{width:100%;height:auto;
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
"""


def esc(text):
  """HTML-escaped text (quotes included)."""
  return html.escape(str(text), quote=True)


def fmt(value, kind="num"):
  """Formats a cell: "pct" fraction -> percent, "pct_pts" already percent, "int", "p"
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
  if kind == "int":
    return str(int(round(v)))
  if kind == "p":
    return f"{v:.2e}" if v < 1e-3 else f"{v:.4f}"
  if kind == "g":
    return f"{v:g}"
  return f"{v:.4f}"


def table(frame, formats=None, highlight=None, max_rows=None):
  """An HTML table of a DataFrame; `formats` col -> kind (see `fmt`); text columns left.

  Args:
    frame: DataFrame (its index is dropped; reset it first to keep it).
    formats: column -> format kind.
    highlight: optional bool sequence marking rows (class `sig`).
    max_rows: show at most this many rows and say how many were left out.
  """
  formats = formats or {}
  cols = list(frame.columns)
  out = ["<table><thead><tr>"]
  out += [f"<th class=\"t\">{esc(c)}</th>" for c in cols]
  out.append("</tr></thead><tbody>")
  rows = list(frame.itertuples(index=False))
  marks = list(highlight) if highlight is not None else [False] * len(rows)
  shown = rows if max_rows is None else rows[:max_rows]
  for row, mark in zip(shown, marks):
    out.append("<tr class=\"sig\">" if mark else "<tr>")
    for c, v in zip(cols, row):
      text = fmt(v, formats.get(c, "num"))
      cls = "t" if isinstance(v, str) else ("na" if text == "n/a" else "")
      out.append(f"<td class=\"{cls}\">{esc(text)}</td>")
    out.append("</tr>")
  out.append("</tbody></table>")
  if max_rows is not None and len(rows) > max_rows:
    out.append(f"<p class=\"skip\">{len(rows) - max_rows} more rows in the CSV.</p>")
  return "".join(out)


def img(png, alt):
  """An <img> with the PNG inlined as a base64 data URI."""
  data = base64.b64encode(png).decode("ascii")
  return f"<img alt=\"{esc(alt)}\" src=\"data:image/png;base64,{data}\">"


def pair(png, alt, numbers_html, stacked=False):
  """A figure with its numbers beside it (`stacked`: a full-width figure, numbers below)."""
  cls = "pair stack" if stacked else "pair"
  return (f"<div class=\"{cls}\"><figure>{img(png, alt)}</figure>"
          f"<div class=\"numbers\">{numbers_html}</div></div>")


def skipped(reasons):
  """The line shown for a section that does not apply."""
  text = "; ".join(reasons) if reasons else "not applicable to this run"
  return f"<p class=\"skip\">Not shown: {esc(text)}.</p>"


def gallery_html(gallery, protected):
  """Cards of the top CIEs per variant: thumbnail, true / dense / compressed labels, attributes.

  Args:
    gallery: variant -> list of `gallery.entries` dicts (with `png`).
    protected: attribute names to always show (others are shown when True).
  """
  parts = []
  for variant, items in gallery.items():
    parts.append(f"<h3>{esc(variant)}</h3>")
    if not items:
      parts.append("<p class=\"skip\">No example changed between the dense and this "
                   "population (every Taxicab distance is 0).</p>")
      continue
    parts.append("<div class=\"gallery\">")
    for e in items:
      attrs = [f"{a}={int(v)}" for a, v in e["attributes"].items()
               if a in protected or v]
      thumb = img(e["png"], f"example {e['id']}") if "png" in e else ""
      cls = " class=\"changed\"" if e["dense_modal"] != e["compressed_modal"] else ""
      parts.append(
          f"<div class=\"card\">{thumb}<div>#{e['rank']} id {e['id']} · d<sub>T</sub> "
          f"{e['distance']}/{e['max_distance']}</div>"
          f"<div>true: <b>{esc(e['label_name'])}</b></div>"
          f"<div>dense modal: {esc(e['dense_modal_name'])}</div>"
          f"<div{cls}>{esc(variant)} modal: "
          f"{esc(e['compressed_modal_name'])}</div>"
          f"<div>{esc(', '.join(attrs) or 'no attributes')}</div></div>")
    parts.append("</div>")
  return "".join(parts)


def page(title, intro_rows, sections):
  """Assembles the page.

  Args:
    title: page title (escaped here).
    intro_rows: list of (label, value) pairs shown under the title (escaped here).
    sections: dict section id -> inner HTML (already escaped), for the ids of `SECTIONS`
      and those of `OPTIONAL_SECTIONS` that apply (the others are left out).

  Returns:
    str, the whole document.
  """
  out = ["<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">",
         f"<title>{esc(title)}</title><style>{CSS}</style></head><body>",
         f"<h1>{esc(title)}</h1><table>"]
  out += [f"<tr><th class=\"t\">{esc(k)}</th><td class=\"t\">{esc(v)}</td></tr>"
          for k, v in intro_rows]
  layout = []
  for sid, name in SECTIONS:
    layout.append((sid, name))
    layout += [(o, n) for o, n, after in OPTIONAL_SECTIONS if after == sid and o in sections]
  out.append("</table><nav><p>")
  out.append(" · ".join(f"<a href=\"#{sid}\">{esc(name)}</a>" for sid, name in layout))
  out.append("</p></nav>")
  for sid, name in layout:
    out.append(f"<section id=\"{sid}\"><h2>{esc(name)}</h2>{sections.get(sid, '')}</section>")
  out.append("</body></html>\n")
  return "".join(out)
