"""html: escaping, n/a for undefined numbers, units, self-contained page with every section,
figures never upscaled, sortable / filterable tables that scroll instead of being clipped."""

import io
import re

import numpy as np
import pandas as pd
from PIL import Image

from tf_forget.report import html
from tf_forget.report.units import registry


def _png(width, height):
  buf = io.BytesIO()
  Image.new("RGB", (width, height), "white").save(buf, format="PNG")
  return buf.getvalue()


def test_every_text_is_escaped():
  frame = pd.DataFrame({"class_name": ["<script>alert(1)</script>", "a&b"], "value": [0.5, np.nan]})
  out = html.table(frame, {"value": "pct"})
  assert "<script>" not in out and "&lt;script&gt;" in out and "a&amp;b" in out
  assert "50.00%" in out and "n/a" in out
  page = html.page(
    "t<1>", [("run \"dir\"", "/x<y>")], [("overview", "Over<view>", "O&V", "<p>ok</p>")]
  )
  assert "<h2>Over&lt;view&gt;</h2>" in page and ">O&amp;V</a>" in page
  assert "t&lt;1&gt;" in page and "/x&lt;y&gt;" in page and "run &quot;dir&quot;" in page


def test_formats():
  assert html.fmt(float("nan")) == "n/a" and html.fmt(None) == "n/a"
  assert html.fmt(0.12345, "pct") == "12.35%"
  assert html.fmt(-3.5, "pct_pts") == "-3.50%"
  assert html.fmt(-0.0128, "pts") == "-1.28 pt" and html.fmt(0.004, "pts") == "+0.40 pt"
  assert html.fmt(3.0, "int") == "3"
  assert html.fmt(1e-5, "p") == "1.00e-05"
  assert html.fmt(True) == "True"


def test_page_has_every_section_in_order_and_no_external_resource():
  png = _png(40, 20)
  shown = [sec for sec in registry.sections() if not sec.optional]
  page = html.page(
    "audit",
    [],
    [(sec.id, sec.title, sec.nav, html.pair(png, sec.id, "<p>numbers</p>")) for sec in shown],
  )
  ids = re.findall(r"<section id=\"([^\"]+)\"", page)
  assert ids == [sec.id for sec in shown]
  assert ids[0] == "verdict"  # the answer first
  assert ids.index("topline") < ids.index("class-level") < ids.index("gallery")
  nav = re.search(r"<nav id=\"toc\">(.*?)</nav>", page).group(1)
  assert re.findall(r"href=\"#([^\"]+)\"", nav) == ids
  assert "position:sticky" in page and "<script>" in page
  assert "http://" not in page and "https://" not in page and "src=\"file" not in page
  assert page.count("src=\"data:image/png;base64,") == len(shown)
  # Figures are drawn at FIGURE_SCALE x and shown at natural / FIGURE_SCALE: never upscaled.
  size = f"width=\"{40 // html.FIGURE_SCALE}\" height=\"{20 // html.FIGURE_SCALE}\""
  assert page.count(size) == len(shown)


def test_png_size_and_img_never_upscale():
  assert html.png_size(_png(123, 45)) == (123, 45)
  assert "width=\"123\" height=\"45\"" in html.img(_png(123, 45), "x")
  try:
    html.png_size(b"\x89PNG\r\n\x1a\nfake")
  except ValueError:
    pass
  else:
    raise AssertionError("a non-PNG was accepted")


def test_tables_sort_filter_and_scroll():
  small = html.table(pd.DataFrame({"a": [1.0, 2.0]}))
  big = html.table(pd.DataFrame({"a": np.arange(html.FILTER_MIN_ROWS, dtype=float)}))
  assert "class=\"sortable\"" in small and "class=\"filter\"" not in small
  assert "<input class=\"filter\"" in big and big.index("filter") < big.index("<table")
  assert small.startswith("<div class=\"tablewrap\">")
  rows = html.table(pd.DataFrame({"a": [1.0, 2.0]}), row_classes=["verdict-rec", ""])
  assert "<tr class=\"verdict-rec\">" in rows and rows.count("<tr>") == 2  # header + row 2
