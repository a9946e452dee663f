"""The files of a blind-annotation export (000 §3.3 / appendix C human study; `human_study`).

    <export_dir>/sheet/annotations.csv   item, one empty 0/1 column per attribute, notes
    <export_dir>/sheet/sheet.html        every item's image, its label and the vocabulary;
                                         tick boxes, then "download annotations.csv" (offline:
                                         one self-contained file, nothing fetched; ticks are
                                         kept in the browser's local storage meanwhile)
    <export_dir>/sheet/images/<item>.png the same images as files
    <export_dir>/sheet/README.txt        what to do, the vocabulary
    <export_dir>/key.json                item -> example id, position, group (NOT for annotators)

Annotators get `sheet/` only: it names no example id, group, prediction or rank, and items
come in the key's shuffled order. The export is written to a staging directory and swapped in
(`swap`), `key.json` last; same run and study give the same bytes (PNGs without metadata).
"""

import base64
import csv
import io
import json

from tf_forget.artifacts import errors
from tf_forget.artifacts import fileio
from tf_forget.artifacts import filesystem
from tf_forget.artifacts import names
from tf_forget.artifacts import swap
from tf_forget.report import collect
from tf_forget.report import gallery
from tf_forget.report import html as html_lib
from tf_forget.report import human_study_sample as hs
from tf_forget.report.words import naming

MIN_SIDE = 128  # smaller images are upscaled (nearest) so their pixels stay visible
MAX_SIDE = 512  # larger images are downscaled
STAGING = ".export"
ENTRIES = (hs.SHEET_DIR, hs.KEY_FILE)  # swap order: key.json (the completion marker) last


def png(image):
  """PNG bytes of a uint8 `[H, W, C]` image for an annotator (larger than the gallery's)."""
  return gallery.thumbnail(image, MIN_SIDE, MAX_SIDE)


def key_bytes(key):
  """The key as written (indented, sorted keys)."""
  return (json.dumps(key, indent=2, sort_keys=True) + "\n").encode("utf-8")


def csv_text(key):
  """The empty annotation file: `item`, the attribute columns, `notes`; sheet order."""
  buf = io.StringIO()
  w = csv.writer(buf, lineterminator="\n")
  w.writerow([hs.ITEM] + list(key["attributes"]) + [hs.NOTES])
  for it in key["items"]:
    w.writerow([it["item"]] + [""] * len(key["attributes"]) + [""])
  return buf.getvalue()


def _definitions(key, vocabulary):
  known = {a.name: a for a in vocabulary}
  out = []
  for name in key["attributes"]:
    a = known.get(name)
    out.append(
      (
        name,
        a.title if a else name,
        a.definition if a else "(a column added for this study; see its instructions)",
      )
    )
  return out


def readme(key, vocabulary):
  """README.txt of the sheet: the task and the vocabulary."""
  lines = [
    "Blind annotation of images (a human study as in Hooker et al., 'What Do Compressed",
    "Deep Neural Networks Forget?', section 3.3 and appendix C).",
    "",
    f"{len(key['items'])} images, each with an item id and its label. For every image and",
    "every attribute below, write 1 if the attribute applies and 0 if it does not, in",
    "annotations.csv (one row per item; keep the item ids as they are; notes are free",
    "text). Or open sheet.html in a browser, tick the boxes and press 'download",
    "annotations.csv'. Every cell of an attribute column must be 0 or 1.",
    "",
    "Attributes:",
  ]
  for name, title, definition in _definitions(key, vocabulary):
    lines += [f"  {name}: {title}.", f"    {definition}"]
  return "\n".join(lines) + "\n"


SHEET_CSS = """
body{font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:0 auto;
max-width:1250px;padding:16px 24px;color:#222;line-height:1.4}
dl dt{font-weight:bold;margin-top:.4em}dl dd{margin-left:1.5em;max-width:1000px}
.items{display:flex;flex-wrap:wrap;gap:10px}.it{border:1px solid #bbb;border-radius:4px;
padding:6px;width:230px;font-size:12px;background:#fafafa}.it img{display:block;
margin:0 auto 4px auto;image-rendering:pixelated;max-width:216px;height:auto}
.it label{display:block}.it input[type=text]{width:95%}.bar{position:sticky;top:0;
background:#fff;padding:6px 0;border-bottom:1px solid #ddd}code{background:#f4f4f4}
"""

# Offline: ticks are kept in localStorage (per study) and turned into annotations.csv by a
# Blob download; nothing is fetched.
SHEET_SCRIPT = """
(function(){
var study=document.body.dataset.study,attrs=JSON.parse(document.body.dataset.attrs);
var store="tf_forget_study_"+study;var saved={};
try{saved=JSON.parse(localStorage.getItem(store)||"{}");}catch(e){}
var boxes=document.querySelectorAll("[data-item]");
boxes.forEach(function(el){var k=el.dataset.item+"|"+el.dataset.col;if(k in saved){
if(el.type==="checkbox")el.checked=saved[k];else el.value=saved[k];}
el.addEventListener("change",function(){saved[k]=el.type==="checkbox"?el.checked:el.value;
try{localStorage.setItem(store,JSON.stringify(saved));}catch(e){}});});
function q(s){s=String(s);return /[",\\n]/.test(s)?'"'+s.replace(/"/g,'""')+'"':s;}
document.getElementById("dl").addEventListener("click",function(){
var lines=[["item"].concat(attrs).concat(["notes"]).join(",")];
document.querySelectorAll(".it").forEach(function(card){var id=card.dataset.id,row=[id];
attrs.forEach(function(a){row.push(card.querySelector('[data-col="'+a+'"]').checked?"1":"0");});
row.push(q(card.querySelector('[data-col="notes"]').value));lines.push(row.join(","));});
var blob=new Blob([lines.join("\\n")+"\\n"],{type:"text/csv"});var a=document.createElement("a");
a.href=URL.createObjectURL(blob);a.download="annotations.csv";document.body.appendChild(a);
a.click();a.remove();});
})();
"""


def sheet_html(key, labels, pngs, vocabulary):
  """The self-contained annotation page.

  Args:
    key: the study's key (only item ids, attributes and the study prefix are used).
    labels: item -> label text shown to the annotator.
    pngs: item -> PNG bytes.
    vocabulary: `human_study.VOCABULARY`.
  """
  attrs = list(key["attributes"])
  defs = "".join(
    f"<dt><code>{html_lib.esc(n)}</code>: {html_lib.esc(t)}</dt><dd>{html_lib.esc(d)}</dd>"
    for n, t, d in _definitions(key, vocabulary)
  )
  cards = []
  for it in key["items"]:
    item = it["item"]
    data = base64.b64encode(pngs[item]).decode("ascii")
    w, h = html_lib.png_size(pngs[item])
    boxes = "".join(
      f"<label><input type=\"checkbox\" data-item=\"{html_lib.esc(item)}\" "
      f"data-col=\"{html_lib.esc(a)}\"> {html_lib.esc(a)}</label>"
      for a in attrs
    )
    cards.append(
      f"<div class=\"it\" data-id=\"{html_lib.esc(item)}\"><b>{html_lib.esc(item)}</b>"
      f"<img alt=\"{html_lib.esc(item)}\" width=\"{w}\" height=\"{h}\" "
      f"src=\"data:image/png;base64,{data}\"><div>label: <b>{html_lib.esc(labels[item])}"
      f"</b></div>{boxes}<input type=\"text\" placeholder=\"notes\" "
      f"data-item=\"{html_lib.esc(item)}\" data-col=\"notes\"></div>"
    )
  return (
    "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
    f"<title>Annotation sheet</title><style>{SHEET_CSS}</style></head>"
    f"<body data-study=\"{html_lib.esc(key['study']['study'])}\" "
    f"data-attrs=\"{html_lib.esc(json.dumps(attrs))}\"><h1>Annotation sheet</h1>"
    f"<p>{len(key['items'])} images. Tick every attribute that applies to an image "
    "(an unticked box is a 0), then download annotations.csv and send it back. Your "
    "ticks are kept in this browser until then.</p><dl>" + defs + "</dl>"
    "<div class=\"bar\"><button id=\"dl\" type=\"button\">download annotations.csv"
    "</button></div><div class=\"items\">" + "".join(cards) + "</div>"
    f"<script>{SHEET_SCRIPT}</script></body></html>\n"
  )


def files(run, key, vocabulary):
  """{relative path: bytes} of the whole export (images read from the data set by id).

  Raises:
    collect.CollectError: the run has no data set, or it lacks an id.
  """
  ids = [it["id"] for it in key["items"]]
  images = collect.images_for(run, ids)
  labels, pngs = {}, {}
  pop = run.eval[names.DENSE]
  for it, image in zip(key["items"], images):
    label = int(pop.labels[it["position"]])
    named = len(run.class_names) == run.num_classes
    labels[it["item"]] = naming.class_label(label, run.class_names[label] if named else None)
    pngs[it["item"]] = png(image)
  sheet = hs.SHEET_DIR
  out = {
    f"{sheet}/annotations.csv": csv_text(key).encode("utf-8"),
    f"{sheet}/README.txt": readme(key, vocabulary).encode("utf-8"),
    f"{sheet}/sheet.html": sheet_html(key, labels, pngs, vocabulary).encode("utf-8"),
  }
  out.update({f"{sheet}/images/{item}.png": data for item, data in pngs.items()})
  out[hs.KEY_FILE] = key_bytes(key)
  return out


def existing_key(export_dir):
  """The key of an export already in `export_dir`, or None if it is missing or empty.

  Raises:
    HumanStudyError: `export_dir` is a file, a non-empty directory without a key, or holds a
      key that cannot be read.
  """
  if not filesystem.exists(export_dir):
    return None
  if not filesystem.isdir(export_dir):
    raise hs.HumanStudyError(f"export directory {export_dir} is a file")
  path = filesystem.join(export_dir, hs.KEY_FILE)
  if not filesystem.exists(path):
    if [e for e in filesystem.listdir(export_dir) if not e.startswith(STAGING)]:
      raise hs.HumanStudyError(
        f"export directory {export_dir} is not empty and holds no {hs.KEY_FILE}: choose another"
      )
    return None
  try:
    return hs.read_key(path)
  except hs.HumanStudyError as e:
    raise hs.HumanStudyError(f"export directory {export_dir}: {errors.one_line(e)}") from e


def kept(export_dir, key):
  """True if `export_dir` holds this study's export already (then it is not rewritten).

  Raises:
    HumanStudyError: see `existing_key`; or `export_dir` holds another study's key (it would
      be lost).
  """
  old = existing_key(export_dir)
  if old is None:
    return False
  if old != key:
    theirs, mine = old["study"], key["study"]
    diff = [
      f"{k} {theirs.get(k)}"
      for k in ("variant", "group", "per_group", "seed", "percentile", "fingerprint")
      if theirs.get(k) != mine.get(k)
    ]
    raise hs.HumanStudyError(
      f"export directory {export_dir} holds another study ({', '.join(diff) or 'columns'}"
      "); its key would be lost: choose another directory"
    )
  return True


def write(export_dir, contents):
  """Writes `files(...)` under `export_dir`, whole (staging, then renames; key.json last).

  Raises:
    errors.WriteError: a write or rename failed; nothing of the export is left.
  """
  filesystem.makedirs(export_dir)
  swap.clean_staging(export_dir, STAGING, ENTRIES)
  with swap.staging(export_dir, STAGING) as tmp:
    filesystem.makedirs(filesystem.join(tmp, hs.SHEET_DIR, "images"))
    for rel, data in sorted(contents.items()):
      fileio.write_bytes(filesystem.join(tmp, *rel.split("/")), data)
    swap.swap_in(tmp, ENTRIES)
