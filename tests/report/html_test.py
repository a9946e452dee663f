"""html: escaping, n/a for undefined numbers, self-contained page with every section."""

import re

import numpy as np
import pandas as pd

from tf_forget.report import html


def test_every_text_is_escaped():
  frame = pd.DataFrame({"class_name": ["<script>alert(1)</script>", "a&b"],
                        "value": [0.5, np.nan]})
  out = html.table(frame, {"value": "pct"})
  assert "<script>" not in out and "&lt;script&gt;" in out and "a&amp;b" in out
  assert "50.00%" in out and "n/a" in out
  page = html.page("t<1>", [("run \"dir\"", "/x<y>")], {"overview": "<p>ok</p>"})
  assert "t&lt;1&gt;" in page and "/x&lt;y&gt;" in page and "run &quot;dir&quot;" in page


def test_formats():
  assert html.fmt(float("nan")) == "n/a" and html.fmt(None) == "n/a"
  assert html.fmt(0.12345, "pct") == "12.35%"
  assert html.fmt(-3.5, "pct_pts") == "-3.50%"
  assert html.fmt(3.0, "int") == "3"
  assert html.fmt(1e-5, "p") == "1.00e-05"
  assert html.fmt(True) == "True"


def test_page_has_every_section_in_order_and_no_external_resource():
  png = b"\x89PNG\r\n\x1a\nfake"
  sections = {sid: html.pair(png, sid, "<p>numbers</p>") for sid, _ in html.SECTIONS}
  page = html.page("audit", [], sections)
  ids = re.findall(r"<section id=\"([^\"]+)\"", page)
  assert ids == [sid for sid, _ in html.SECTIONS]
  assert ids.index("topline") < ids.index("class-level") < ids.index("gallery")
  assert "http://" not in page and "https://" not in page and "src=\"file" not in page
  assert page.count("src=\"data:image/png;base64,") == len(html.SECTIONS)


def test_gallery_cards():
  entry = {"rank": 1, "id": 7, "distance": 4, "max_distance": 4, "label_name": "1",
           "dense_modal": 1, "dense_modal_name": "1", "compressed_modal": 0,
           "compressed_modal_name": "0", "attributes": {"Male": False, "Smiling": True,
                                                        "Bald": False},
           "png": b"\x89PNG"}
  out = html.gallery_html({"prune_0.9": [entry], "float16": []}, protected=("Male",))
  assert "Male=0" in out and "Smiling=1" in out and "Bald" not in out
  assert "class=\"changed\"" in out and "No example changed" in out
