"""Layout checks of an HTML report in headless Chromium: it must look right in a real browser.

A temporary copy of the page gets a <script> that, once the page has loaded (with its images),
measures the layout and writes the measurements as JSON into the DOM; `chromium
--headless --dump-dom` returns that DOM. `problems` turns the measurements into one line per
problem:

* the verdict block: `section#verdict` exists, is the page's first <section>, starts within
  the first screen (top < 900 px at 1400 px width) and holds a `table.verdict` with a row per
  variant and a non-empty `p.recommendation`;
* every section the page's own <nav> links to exists (optional sections are simply not linked);
* every <img> loads (naturalWidth > 0 after `load`) and none is drawn larger than its natural
  size (CSS px; object-fit and transforms counted; every <details> is opened first, so collapsed
  content is checked too);
* no table is clipped: an ancestor with `overflow: hidden | clip` must not cut it off, and a
  table wider than the page needs a horizontally scrollable ancestor (`overflow-x: auto |
  scroll`) that itself fits the page; the document itself does not scroll horizontally.

Chromium is Debian's `/usr/bin/chromium` (`make test` installs it: tools/setup.sh), or the binary
named by the environment variable RENDER_CHECK_CHROMIUM. Everything Chromium writes (profile,
caches, HOME) goes to a temporary directory, so it runs inside Bazel's test sandbox.
"""

import json
import os
import re
import subprocess
import tempfile

CHROMIUM = os.environ.get("RENDER_CHECK_CHROMIUM", "/usr/bin/chromium")  # e.g. google-chrome
WIDTH = 1400  # CSS px (devicePixelRatio 1 in headless Chromium)
# px: the verdict must start within the first screen of a 1400x900 window. Headless
# Chromium, like a desktop browser, keeps part of the window for its bars: innerHeight is 757 px
# there; the bound is the window's 900 px, and it depends only on the layout above the verdict.
FIRST_SCREEN = 900
TIMEOUT = 60  # s per Chromium run
RESULT_ID = "tf-forget-render-check"
FLAGS = (
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-dev-shm-usage",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-extensions",
  "--disable-crash-reporter",
  "--no-first-run",
  "--no-default-browser-check",
  "--force-device-scale-factor=1",
  "--mute-audio",
)

# Runs in the page. Verdict first, as the page loads (closed <details> stay closed); then every
# <details> is opened and images, tables and the document width are measured.
_SCRIPT = r"""
(function () {
  "use strict";
  const CLIP = new Set(["hidden", "clip"]), SCROLL = new Set(["auto", "scroll"]);
  const text = (e) => (e.textContent || "").replace(/\s+/g, " ").trim();
  const name = (e) => {
    let s = e.tagName.toLowerCase() + (e.id ? "#" + e.id : "");
    if (typeof e.className === "string" && e.className.trim()) {
      s += "." + e.className.trim().split(/\s+/).join(".");
    }
    return s;
  };
  const where = (e) => {
    const s = e.closest("section[id]"), n = e.closest("nav, header, footer");
    return s ? "#" + s.id : n ? name(n) : "outside any section";
  };
  function verdict() {
    const v = document.querySelector("section#verdict");
    if (!v) return null;
    const first = document.querySelector("section");
    const table = v.querySelector("table.verdict");
    const rec = v.querySelector("p.recommendation");
    return {
      first: first === v,
      first_section: name(first),
      top: v.getBoundingClientRect().top + window.scrollY,
      table: !!table,
      rows: table ? Array.from(table.rows).filter((r) => r.querySelector("td"))
                        .map((r) => Array.from(r.cells).map(text)) : [],
      recommendation: rec ? text(rec) : null,
    };
  }
  function images() {
    return Array.from(document.images).map((img) => {
      const r = img.getBoundingClientRect(), cs = getComputedStyle(img);
      const px = (p) => parseFloat(cs[p]) || 0;
      const w = r.width - px("borderLeftWidth") - px("borderRightWidth") - px("paddingLeft") -
                px("paddingRight");
      const h = r.height - px("borderTopWidth") - px("borderBottomWidth") - px("paddingTop") -
                px("paddingBottom");
      const nw = img.naturalWidth, nh = img.naturalHeight;
      let sx = nw ? w / nw : 0, sy = nh ? h / nh : 0;  // object-fit: fill
      if (cs.objectFit === "contain" || cs.objectFit === "scale-down") {
        sx = sy = Math.min(sx, sy, cs.objectFit === "scale-down" ? 1 : Infinity);
      } else if (cs.objectFit === "cover") {
        sx = sy = Math.max(sx, sy);
      } else if (cs.objectFit === "none") {
        sx = sy = 1;
      }
      return {alt: img.alt, where: where(img), complete: img.complete, natural: [nw, nh],
              drawn: [sx * nw, sy * nh], rendered: r.width > 0 && r.height > 0,
              inlined: (img.getAttribute("src") || "").startsWith("data:image/")};
    });
  }
  function tables() {
    const root = document.documentElement, body = document.body;
    const rootStyle = getComputedStyle(root);
    // The body's overflow is the viewport's when the root's is visible (CSS Overflow 3 §3.3).
    const bodyIsViewport = !!body && rootStyle.overflowX === "visible" &&
                           rootStyle.overflowY === "visible";
    const viewportStyle = bodyIsViewport ? getComputedStyle(body) : rootStyle;
    return Array.from(document.querySelectorAll("table")).map((t) => {
      const r = t.getBoundingClientRect();
      const out = {name: name(t), where: where(t), width: r.width, problems: []};
      if (!(r.width > 0 && r.height > 0)) return out;
      // Per axis, the box that must stay visible: the table, or its nearest scroll container.
      const box = {x: [r.left, r.right], y: [r.top, r.bottom]}, cut = {x: false, y: false};
      for (let a = t.parentElement; a && a !== root; a = a.parentElement) {
        if (a === body && bodyIsViewport) continue;
        const cs = getComputedStyle(a), ar = a.getBoundingClientRect();
        const inner = {x: [ar.left + a.clientLeft, ar.left + a.clientLeft + a.clientWidth],
                       y: [ar.top + a.clientTop, ar.top + a.clientTop + a.clientHeight]};
        for (const axis of ["x", "y"]) {
          const o = axis === "x" ? cs.overflowX : cs.overflowY;
          if (cut[axis]) continue;
          if (CLIP.has(o)) {
            const by = Math.max(inner[axis][0] - box[axis][0], box[axis][1] - inner[axis][1]);
            if (by > 1) {
              out.problems.push(`cut off by ${Math.round(by)} px (${axis}) by ${name(a)} ` +
                                `{overflow-${axis}: ${o}}`);
              cut[axis] = true;
            }
          } else if (SCROLL.has(o)) {
            box[axis] = axis === "x" ? [ar.left, ar.right] : [ar.top, ar.bottom];
          }
        }
      }
      const over = Math.max(-box.x[0], box.x[1] - root.clientWidth);
      if (!cut.x && over > 1) {
        const o = viewportStyle.overflowX;
        out.problems.push(CLIP.has(o)
            ? `cut off by ${Math.round(over)} px by the page {overflow-x: ${o}}`
            : `wider than the page by ${Math.round(over)} px with no horizontally scrollable ` +
              `ancestor`);
      }
      for (const c of t.querySelectorAll("th, td")) {
        const cs = getComputedStyle(c);
        if (CLIP.has(cs.overflowX) && c.scrollWidth > c.clientWidth + 1) {
          out.problems.push(`cell "${text(c).slice(0, 40)}" cut off {overflow: ${cs.overflowX}}`);
          break;
        }
      }
      return out;
    });
  }
  // Where the page's horizontal overflow starts: elements past the right (or left) edge whose
  // parent is not, outside any box that scrolls or clips horizontally.
  function sticking_out() {
    const root = document.documentElement, cw = root.clientWidth, out = [];
    const past = (e) => {
      const r = e.getBoundingClientRect();
      return r.right > cw + 1 || r.left < -1;
    };
    for (const e of document.body.querySelectorAll("*")) {
      if (!past(e) || (e.parentElement !== document.body && past(e.parentElement))) continue;
      let a = e.parentElement;
      while (a && a !== document.body && getComputedStyle(a).overflowX === "visible") {
        a = a.parentElement;
      }
      if (a && a !== document.body) continue;
      out.push(`${name(e)} in ${where(e)} (${Math.round(e.getBoundingClientRect().right)} px)`);
    }
    return out;
  }
  function run() {
    const root = document.documentElement;
    const result = {viewport: [window.innerWidth, window.innerHeight, window.devicePixelRatio]};
    try {
      result.verdict = verdict();
      result.sections = Array.from(document.querySelectorAll("section")).map((s) => s.id);
      result.nav = Array.from(document.querySelectorAll("nav a[href^='#']"))
                       .map((a) => decodeURIComponent(a.getAttribute("href").slice(1)));
      for (const d of document.querySelectorAll("details")) d.open = true;
      result.images = images();
      result.tables = tables();
      result.document = {scroll_width: root.scrollWidth, client_width: root.clientWidth,
                         sticking_out: root.scrollWidth > root.clientWidth ? sticking_out() : []};
    } catch (e) {
      result.error = String((e && e.stack) || e);
    }
    const s = document.createElement("script");
    s.type = "application/json";
    s.id = "%(result_id)s";
    s.textContent = JSON.stringify(result).replace(/</g, "\\u003c");
    (document.body || root).appendChild(s);
  }
  // After `load` every <img> has loaded (or failed: naturalWidth 0). Not img.decode(): it waits
  // for a frame near the image, which off-screen images never get in headless mode.
  const start = () => setTimeout(run, 0);
  if (document.readyState === "complete") start(); else window.addEventListener("load", start);
})();
""" % {"result_id": RESULT_ID}


def available():
  """True if the Chromium binary `CHROMIUM` is installed (executable)."""
  return os.access(CHROMIUM, os.X_OK)


def _chromium(args, tmp, timeout=TIMEOUT):
  """Runs headless Chromium with its profile, HOME and caches in `tmp`; returns stdout (bytes).

  Raises:
    RuntimeError: Chromium failed or timed out (with the end of its stderr).
  """
  env = dict(
    os.environ,
    HOME=tmp,
    XDG_CONFIG_HOME=os.path.join(tmp, "config"),
    XDG_CACHE_HOME=os.path.join(tmp, "cache"),
  )
  cmd = [CHROMIUM, *FLAGS, f"--user-data-dir={os.path.join(tmp, 'profile')}", *args]
  try:
    done = subprocess.run(cmd, capture_output=True, timeout=timeout, env=env, check=False)
  except subprocess.TimeoutExpired as e:
    raise RuntimeError(f"chromium timed out after {timeout} s: {' '.join(args)}") from e
  if done.returncode != 0:
    tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-5:]
    raise RuntimeError(f"chromium exited {done.returncode}: " + " | ".join(tail))
  return done.stdout


def _instrumented_copy(html_path, tmp):
  """Copy of the page with the measuring script (and a <base> so relative URLs still work)."""
  with open(html_path, encoding="utf-8") as f:
    page = f.read()
  base = "file://" + os.path.dirname(os.path.abspath(html_path)) + "/"
  head = re.search(r"<head\b[^>]*>", page, re.I)
  if head:
    page = page[: head.end()] + f'<base href="{base}">' + page[head.end() :]
  script = f"<script>{_SCRIPT}</script>"
  end = page.lower().rfind("</body>")
  page = page[:end] + script + page[end:] if end >= 0 else page + script
  path = os.path.join(tmp, "page.html")
  with open(path, "w", encoding="utf-8") as f:
    f.write(page)
  return path


def measure(html_path, width=WIDTH, height=FIRST_SCREEN, budget_ms=15000):
  """Layout measurements of a page in a `width` x `height` headless Chromium window.

  Args:
    html_path: the page (left unchanged; a temporary copy is instrumented).
    width, height: window size in CSS px (a vertical scrollbar takes 15 px of the width).
    budget_ms: Chromium's virtual time budget for loading the page and measuring.

  Returns:
    dict: `viewport` [innerWidth, innerHeight, devicePixelRatio], `verdict` (None without
    `section#verdict`, else `first`, `first_section`, `top`, `table`, `rows` (cell texts of
    the rows with a <td>), `recommendation` (None without one)), `sections` (ids of every
    <section> in order), `nav` (ids the <nav> links to), `images` (per <img>: `alt`, `where`,
    `complete`, `natural` [w, h], `drawn` [w, h], `rendered`, `inlined`), `tables` (per
    <table>: `name`, `where`, `width`, `problems`), `document` (`scroll_width`,
    `client_width`, `sticking_out`: where a horizontal overflow starts); `error` if the script
    failed.

  Raises:
    RuntimeError: Chromium failed, or the page never reported its measurements.
  """
  with tempfile.TemporaryDirectory() as tmp:
    url = "file://" + _instrumented_copy(html_path, tmp)
    dom = _chromium(
      [f"--window-size={width},{height}", f"--virtual-time-budget={budget_ms}", "--dump-dom", url],
      tmp,
    ).decode("utf-8")
  found = re.search(rf'<script type="application/json" id="{RESULT_ID}">(.*?)</script>', dom, re.S)
  if not found:
    raise RuntimeError(f"{html_path}: the page reported no measurements within {budget_ms} ms")
  return json.loads(found.group(1))


def screenshot(html_path, png_path, width=WIDTH, height=4000):
  """Writes a `width` x `height` PNG screenshot of the page's top (scrollbars hidden)."""
  with tempfile.TemporaryDirectory() as tmp:
    _chromium(
      [
        "--hide-scrollbars",
        f"--window-size={width},{height}",
        f"--screenshot={os.path.abspath(png_path)}",
        "file://" + os.path.abspath(html_path),
      ],
      tmp,
    )
  if not os.path.exists(png_path):
    raise RuntimeError(f"chromium wrote no screenshot {png_path}")


def ink(png_path):
  """(ink, colours, plum) of a screenshot.

  Returns:
    ink: share of non-white pixels (min channel < 235); colours: distinct colours among every
    97th pixel; plum: share of pixels within 30 (L1) of the report's plum #8e4585.
  """
  import numpy as np
  from PIL import Image

  with Image.open(png_path) as im:
    pixels = np.asarray(im.convert("RGB"), dtype=np.int16)
  ink_share = float((pixels.min(axis=2) < 235).mean())
  colours = len(np.unique(pixels.reshape(-1, 3)[::97], axis=0))
  plum = float(((np.abs(pixels - np.array([0x8E, 0x45, 0x85])).sum(axis=2)) < 30).mean())
  return ink_share, colours, plum


def _names(text, variant):
  """True if `variant` occurs in `text` as a whole name (prune_0.9 is not in prune_0.95)."""
  return re.search(rf"(?<![\w.@]){re.escape(variant)}(?![\w@]|\.\d)", text) is not None


def problems(m, variants=None):
  """One line per layout problem in measurements `m` (see `measure`); [] if the page is fine.

  Args:
    m: `measure`'s result.
    variants: names that need a row in `table.verdict` (None: at least one row).
  """
  if "error" in m:
    return [f"the measuring script failed: {m['error']}"]
  out = []
  width = m["viewport"][0]
  if not m["nav"]:
    out.append("sections: the page has no <nav> linking to its sections")
  for sid in m["nav"]:
    if sid not in m["sections"]:
      out.append(f"sections: <nav> links to #{sid}, but there is no <section id=\"{sid}\">")
  v = m["verdict"]
  if v is None:
    out.append("verdict: no section#verdict")
  else:
    if not v["first"]:
      out.append(f"verdict: section#verdict is not the first <section> ({v['first_section']} is)")
    if v["top"] >= FIRST_SCREEN:
      out.append(
        f"verdict: section#verdict starts at y = {v['top']:.0f} px, below the first "
        f"screen ({width}x{FIRST_SCREEN})"
      )
    if not v["table"]:
      out.append("verdict: no table.verdict in section#verdict")
    elif not v["rows"]:
      out.append("verdict: table.verdict has no row with data cells")
    for variant in variants or ():
      if v["table"] and not any(_names(" | ".join(row), variant) for row in v["rows"]):
        out.append(f"verdict: table.verdict has no row for variant {variant}")
    if v["recommendation"] is None:
      out.append("verdict: no p.recommendation in section#verdict")
    elif not v["recommendation"]:
      out.append("verdict: p.recommendation is empty")
  for img in m["images"]:
    label = f"image \"{img['alt']}\" in {img['where']}"
    (nw, nh), (dw, dh) = img["natural"], img["drawn"]
    if not img["complete"] or not nw:
      out.append(f"{label} does not load (naturalWidth 0)")
    elif img["rendered"] and (dw > nw + 1 or dh > nh + 1):
      out.append(f"{label} is upscaled: drawn {dw:.0f}x{dh:.0f} px from {nw}x{nh}")
  for table in m["tables"]:
    for p in table["problems"]:
      out.append(f"table {table['name']} in {table['where']} ({table['width']:.0f} px wide): {p}")
  doc = m["document"]
  if doc["scroll_width"] > doc["client_width"]:
    out.append(
      f"the page scrolls horizontally: {doc['scroll_width']} px of content in "
      f"{doc['client_width']} px; sticking out: " + (", ".join(doc["sticking_out"][:4]) or "?")
    )
  return out


def report_variants(html_path):
  """The compressed variants of `report.json` beside the page (all but `dense`), else None."""
  path = os.path.join(os.path.dirname(os.path.abspath(html_path)), "report.json")
  try:
    with open(path, encoding="utf-8") as f:
      return [v for v in json.load(f)["variants"] if v != "dense"]
  except (OSError, ValueError, KeyError, TypeError):
    return None


def check(html_path, screenshot_path=None, width=WIDTH, height=4000, variants=None):
  """Measures a page at `width` px (and screenshots it); every problem found.

  Args:
    html_path: the page.
    screenshot_path: where to write a `width` x `height` screenshot (None: no screenshot). A
      screenshot with little ink (< 5% non-white) or few colours (<= 20) is a problem.
    width, height: window width for both runs; screenshot height.
    variants: as in `problems`.

  Returns:
    (summary, problems): summary has `sections`, `nav`, `images` (decoded <img> count),
    `inlined` (decoded data: images), `tables`, `viewport`, and with a screenshot `ink`,
    `colours`, `plum` (see `ink`); problems as in `problems`.
  """
  m = measure(html_path, width=width)
  found = problems(m, variants)
  decoded = [i for i in m.get("images", ()) if i["complete"] and i["natural"][0]]
  summary = {
    "viewport": m["viewport"],
    "sections": m.get("sections"),
    "nav": m.get("nav"),
    "images": len(decoded),
    "inlined": sum(i["inlined"] for i in decoded),
    "tables": len(m.get("tables", ())),
  }
  if screenshot_path:
    screenshot(html_path, screenshot_path, width=width, height=height)
    summary["ink"], summary["colours"], summary["plum"] = ink(screenshot_path)
    if summary["ink"] <= 0.05 or summary["colours"] <= 20:
      found.append(
        f"screenshot looks blank (ink {summary['ink']:.3f}, {summary['colours']} colours)"
      )
  return summary, found
