"""The report in a real browser: headless Chromium at 1400 px width.

`render_check` measures a page's layout in Chromium; these tests show on hand-written pages
that it catches what it claims to (an upscaled image, a clipped or too-wide table, a verdict
block that is missing or below the first screen, ...) and passes a page without them, then run
it on the reports of the fake runs (`fake_run.make_digits_run`, `make_biased_run`).

Skipped, with the reason in the log, where `/usr/bin/chromium` is missing (`make test` installs
it: tools/setup.sh, SETUP_CHROMIUM=1). Also a script for any report (exit status 1 on a
problem):

    .venv/bin/python tests/report/render_check_test.py runs/digits/report.html [shot.png] \
        [--width 1400] [--height 4000]
"""

import argparse
import base64
import io
import os
import sys

import pytest

if __name__ == "__main__" and not __package__:  # script mode: `tests.report` from the repo root
  sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from tests.report import render_check

pytestmark = pytest.mark.skipif(
  not render_check.available(),
  reason=f"render check NOT RUN: {render_check.CHROMIUM} is missing (Debian's chromium; "
  "`make test` installs it via tools/setup.sh unless apt-get cannot)",
)

VARIANTS = ("prune_0.9", "full_int8")  # the compressed variants of both fake runs (fake_run.py)


def _png(size, colour=(142, 69, 133)):
  """A `size` x `size` PNG as a data: URI (a checkerboard, so it is not one flat colour)."""
  from PIL import Image

  im = Image.new("RGB", (size, size), "white")
  for x in range(size):
    for y in range(size):
      if (x + y) % 2:
        im.putpixel((x, y), colour)
  buf = io.BytesIO()
  im.save(buf, format="PNG")
  return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _wide_table(cols=40):
  """A table some 5000 px wide (40 nowrap cells of 15 characters)."""
  cells = "".join(f"<td>column {i:02d} value</td>" for i in range(cols))
  return f"<table><tr>{cells}</tr></table>"


VERDICT = (
  "<section id=\"verdict\"><h2>Verdict</h2><table class=\"verdict\">"
  "<thead><tr><th>variant</th><th>ship?</th></tr></thead><tbody>"
  "<tr><td>full_int8</td><td>yes</td></tr><tr><td>prune_0.9</td><td>no</td></tr>"
  "</tbody></table><p class=\"recommendation\">Ship full_int8.</p></section>"
)
# Like the report: centred body at most 1250 px wide; a figure shown at its natural size and one
# shrunk to half; a ~5000 px table in an overflow-x: auto box; a table in a closed <details>.
RESULTS = (
  "<section id=\"results\"><h2>Results</h2>"
  "<img alt=\"natural\" src=\"{png10}\">"
  "<img alt=\"shrunk\" src=\"{png40}\" style=\"width:20px;border:1px solid #ccc\">"
  "<div style=\"overflow-x:auto\">{wide}</div>"
  "<details><summary>more</summary><table><tr><td>x</td></tr></table></details>"
  "</section>"
)


def _page(body, nav=("verdict", "results")):
  links = " · ".join(f"<a href=\"#{sid}\">{sid}</a>" for sid in nav)
  return (
    "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>t</title>"
    "<style>body{font-family:sans-serif;margin:0 auto;max-width:1250px;padding:16px 24px}"
    "td{white-space:nowrap;border:1px solid #ccc}</style></head><body><h1>audit</h1>"
    f"<nav>{links}</nav>{body}</body></html>"
  )


def _results(**kw):
  fields = {"png10": _png(10), "png40": _png(40), "wide": _wide_table()}
  fields.update(kw)
  return RESULTS.format(**fields)


# name -> (page body, nav, problems expected: a substring of each, and nothing else)
CASES = {
  "fine": (VERDICT + _results(), ("verdict", "results"), []),
  "upscaled_png": (
    VERDICT + _results(png10=_png(10) + "\" style=\"width:40px;height:40px"),
    ("verdict", "results"),
    ["image \"natural\" in #results is upscaled: drawn 40x40 px from 10x10"],
  ),
  "clipped_table": (
    VERDICT + _results(wide=f"<div style=\"overflow:hidden;width:300px\">{_wide_table()}</div>"),
    ("verdict", "results"),
    ["in #results", "cut off by", "(x) by div {overflow-x: hidden}"],
  ),
  "table_wider_than_page": (
    VERDICT + _results().replace("overflow-x:auto", "margin:0"),
    ("verdict", "results"),
    ["wider than the page by", "the page scrolls horizontally", "sticking out: table in #results"],
  ),
  "verdict_below_first_screen": (
    "<div style=\"height:1200px\">intro</div>" + VERDICT + _results(),
    ("verdict", "results"),
    ["verdict: section#verdict starts at y = "],
  ),
  "verdict_missing": (_results(), ("results",), ["verdict: no section#verdict"]),
  "verdict_incomplete": (  # also: not first, a nav link to nowhere, an image that fails
    _results(png10="data:image/png;base64,iVBORw0KGgo=")
    + VERDICT.replace("<tr><td>prune_0.9</td><td>no</td></tr>", "").replace("Ship full_int8.", " "),
    ("verdict", "results", "gallery"),
    [
      "verdict: section#verdict is not the first <section> (section#results is)",
      "verdict: table.verdict has no row for variant prune_0.9",
      "verdict: p.recommendation is empty",
      "sections: <nav> links to #gallery, but there is no <section id=\"gallery\">",
      "image \"natural\" in #results does not load",
    ],
  ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_checker_on_hand_written_pages(case, tmp_path):
  body, nav, expected = CASES[case]
  path = tmp_path / "page.html"
  path.write_text(_page(body, nav), encoding="utf-8")
  m = render_check.measure(str(path))
  found = render_check.problems(m, VARIANTS)
  assert m["viewport"][:1] + m["viewport"][2:] == [render_check.WIDTH, 1]
  missed = [e for e in expected if not any(e in p for p in found)]
  unexpected = [p for p in found if not any(e in p for e in expected)]
  assert not missed and not unexpected, {"missed": missed, "unexpected": unexpected}
  if case == "fine":  # the measurements behind the verdicts
    natural, shrunk = m["images"]
    assert natural["natural"] == natural["drawn"] == [10, 10]
    assert shrunk["natural"] == [40, 40] and shrunk["drawn"] == [20, 20]
    wide = max(m["tables"], key=lambda t: t["width"])
    assert wide["width"] > 2000 and not wide["problems"]  # scrolls in its box
    assert len(m["tables"]) == 3 and m["verdict"]["rows"] == [
      ["full_int8", "yes"],
      ["prune_0.9", "no"],
    ]


@pytest.mark.parametrize("kind", ["digits", "digits_biased"])
def test_report_renders_in_chromium(kind, tmp_path):
  """The report of a fake run: the layout checks, every figure loads, a screenshot with ink."""
  from tests.report import fake_run
  from tf_forget.report import write

  run_dir, out = str(tmp_path / "run"), str(tmp_path / "out")
  (fake_run.make_digits_run if kind == "digits" else fake_run.make_biased_run)(run_dir)
  write.write_report(run_dir, out, {"dataset": kind})
  page = os.path.join(out, "report.html")
  shot = str(tmp_path / "shot.png") if kind == "digits_biased" else None  # one is enough (~4 s)
  summary, found = render_check.check(page, shot, variants=VARIANTS)
  with open(page, encoding="utf-8") as f:
    inlined = f.read().count("src=\"data:image/png;base64,")
  # Figures: top-line, 2 class-level (one per variant), 2 PIE, recall distortion, and
  # robustness (digits: corrupted splits) or subgroups + over-indexing (digits_biased:
  # attributes); + 12 gallery thumbnails of prune_0.9. 000 Figure 2's significant bars are plum.
  least = {"digits": 7, "digits_biased": 8}[kind] + 12
  if summary["inlined"] != inlined or inlined < least:
    found.append(f"{summary['inlined']} of {inlined} inlined images loaded (expected >= {least})")
  if shot and not summary["plum"] > 0:
    found.append("no plum (significant class) bar in the top 4000 px of the screenshot")
  assert not found, "\n".join(found)


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("page", help="report.html")
  parser.add_argument("screenshot", nargs="?", help="PNG to write (default: <page>_screenshot.png)")
  parser.add_argument("--width", type=int, default=render_check.WIDTH, help="window width, px")
  parser.add_argument("--height", type=int, default=4000, help="screenshot height, px")
  args = parser.parse_args(argv)
  shot = args.screenshot or os.path.splitext(args.page)[0] + "_screenshot.png"
  variants = render_check.report_variants(args.page)
  summary, found = render_check.check(
    args.page, shot, width=args.width, height=args.height, variants=variants
  )
  for key, value in summary.items():
    print(f"{key}: {value}")
  print(f"variants: {variants if variants is not None else '(no report.json: any row)'}")
  print(f"screenshot: {shot} ({args.width}x{args.height})")
  print("\n".join(["PROBLEMS:", *found]) if found else "OK: no problem found")
  return 1 if found else 0


if __name__ == "__main__":
  sys.exit(main())
