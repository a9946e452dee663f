"""The report's one registry of units (`units.registry`): the recipe of docs/architecture.md
("A report unit") followed in a test — one more unit, reading an existing table, lands in
report.json, tables/ and report.html —; `check` refuses, in one line, a unit that reads what no
unit makes; a section renders from what it declares only, and says `Skip` instead of HTML."""

import json
import os

import pandas as pd
import pytest

from tests.report import fake_run
from tf_forget.report import html
from tf_forget.report import unit
from tf_forget.report import write
from tf_forget.report.units import registry

NOTE = "members per variant, from the top-line table"


def _members(topline):
  """The extra unit: one row per variant with its member count (from the `topline` table)."""
  top1 = topline[topline.metric == "top1"]
  frame = pd.DataFrame({"variant": list(top1.variant), "members": list(top1.members)})
  return unit.Part({"extra_members": frame}, {"extra": [NOTE]}, {"extra": {"rows": len(frame)}})


def _render(extra_members):
  return html.table(extra_members)


EXTRA = unit.Unit(
  "extra",
  reads=("topline",),
  makes=("extra_members",),
  compute=_members,
  sections=(
    unit.Section(
      "extra", "12. Extra: members per variant", "12 Extra", ("extra_members",), _render
    ),
  ),
)


def _with_extra(monkeypatch, extra=EXTRA):
  monkeypatch.setattr(registry, "UNITS", registry.UNITS + (extra,))
  monkeypatch.setattr(registry, "PAGE", registry.PAGE[:-1] + ("extra", registry.PAGE[-1]))


@pytest.fixture(name="run_dir", scope="module")
def _run_dir(tmp_path_factory):
  run_dir = str(tmp_path_factory.mktemp("extra") / "run")
  fake_run.make_digits_run(run_dir, members=3, corrupted=False, variants=("prune_0.9",))
  return run_dir


def test_the_registry_is_sound_and_in_order():
  assert registry.check() == []
  assert [u.name for u in registry.UNITS] == [
    "settings",
    "topline",
    "classes",
    "pie",
    "cie",
    "recall_distortion",
    "recall_study",
    "subgroups",
    "robustness",
    "published",
    "overview",
    "noise",
    "prune_retrain",
    "deployment",
    "single_network",
    "divergence",
    "repair",
    "verdict",
    "gallery",
    "human_study",
    "side_by_side",
    "glossary",
    "notes",
  ]
  assert [s.id for s in registry.sections()] == list(registry.PAGE)
  assert registry.PAGE[0] == "verdict" and registry.PAGE[-1] == "notes"
  made = [n for u in registry.UNITS for n in u.makes]
  assert len(made) == len(set(made)) and "topline" in made and "verdict" in made


def test_a_registered_unit_lands_in_the_report(run_dir, tmp_path, monkeypatch):
  _with_extra(monkeypatch)
  out = str(tmp_path / "out")
  doc = write.write_report(run_dir, out, {}, dataset_name="digits")
  with open(os.path.join(out, "report.json"), encoding="utf-8") as f:
    assert json.load(f) == doc
  assert doc["tables"]["extra_members"] == [
    {"variant": "dense", "members": 3},
    {"variant": "prune_0.9", "members": 3},
  ]
  assert "tables/extra_members.csv" in doc["files"]["tables"]
  with open(os.path.join(out, "tables", "extra_members.csv"), encoding="utf-8") as f:
    assert f.read() == "variant,members\ndense,3\nprune_0.9,3\n"
  # Merged after every registered unit: its notes and settings come last.
  assert list(doc["notes"])[-1] == "extra" and doc["notes"]["extra"] == [NOTE]
  assert list(doc["settings"])[-1] == "extra" and doc["settings"]["extra"] == {"rows": 2}
  with open(os.path.join(out, "report.html"), encoding="utf-8") as f:
    page = f.read()
  assert "<a href=\"#extra\" title=\"12. Extra: members per variant\">12 Extra</a>" in page
  body = page.split("<section id=\"extra\">")[1].split("</section>")[0]
  assert "<h2>12. Extra: members per variant</h2>" in body and ">prune_0.9<" in body
  assert page.index("<section id=\"extra\">") < page.index("<section id=\"notes\">")


def test_the_registry_is_restored_and_the_unit_is_gone(run_dir):
  assert EXTRA not in registry.UNITS and "extra" not in registry.PAGE
  report = write.build_report(run_dir, dataset_name="digits")
  assert "extra_members" not in report.tables and "extra" not in report.json["notes"]
  assert "id=\"extra\"" not in report.html


def test_a_read_nobody_makes_is_refused_in_one_line(run_dir, monkeypatch):
  renamed = unit.Unit(
    "extra", reads=("top_line",), makes=("extra_members",), compute=lambda top_line: unit.Part()
  )
  assert registry.check(registry.UNITS + (renamed,), registry.PAGE) == [
    "extra: reads ['top_line'], which no earlier unit makes"
  ]
  monkeypatch.setattr(registry, "UNITS", registry.UNITS + (renamed,))
  with pytest.raises(
    ValueError,
    match=r"^report units: extra: reads \['top_line'\], which no "
    r"earlier unit makes$",
  ):
    write.build_report(run_dir, dataset_name="digits")


def _section(reads, render, **kwargs):
  return unit.Section("extra", "Extra", "Extra", reads, render, **kwargs)


@pytest.mark.parametrize(
  "bad, problem",
  [
    (unit.Unit("topline"), "topline: a unit of that name comes before"),
    (
      unit.Unit("extra", makes=("pie",), compute=lambda: unit.Part()),
      "extra: makes ['pie'], made before (or an input)",
    ),
    (
      unit.Unit("extra", reads=("topline",), compute=lambda run: unit.Part()),
      "extra: compute takes ['run'], declares ['topline']",
    ),
    (
      unit.Unit("extra", sections=(_section(("extra_members",), _render),)),
      "extra: section 'extra' reads ['extra_members'], which no unit makes",
    ),
    (
      unit.Unit("extra", sections=(_section(("topline",), _render),)),
      "extra: section 'extra': render takes ['extra_members'], declares ['topline']",
    ),
    (
      unit.Unit("extra", sections=(_section((), lambda: "", designs=("k2",)),)),
      "extra: section 'extra' serves ['k2'], not some of ['population', 'k1']",
    ),
    (
      unit.Unit(
        "extra",
        sections=(
          _section(
            (),
            lambda: "",
          ),
          unit.Section("pie", "P", "P", (), lambda: ""),
        ),
      ),
      "sections ['pie'] are shown by more than one unit",
    ),
  ],
)
def test_check_names_each_unsound_unit(bad, problem):
  page = registry.PAGE + tuple(s.id for s in bad.sections if s.id not in registry.PAGE)
  assert problem in registry.check(registry.UNITS + (bad,), page)


def test_the_page_order_names_every_section_once():
  assert registry.check(page_order=registry.PAGE[1:]) == [
    f"the page order {list(registry.PAGE[1:])} does not name each section "
    f"{sorted(registry.PAGE)} once"
  ]


def test_a_render_reads_only_what_it_declares():
  reads = unit.Reads(("topline", "pie"), {"topline": 1, "pie": None, "verdict": 2})
  assert reads["topline"] == 1 and reads.get("pie") is None and dict(reads) == {"topline": 1}
  for read in (lambda: reads["verdict"], lambda: reads.get("verdict"), lambda: "verdict" in reads):
    with pytest.raises(unit.UndeclaredRead, match="'verdict', which is not declared"):
      read()


def _toy(shown, **kwargs):
  """A one-unit registry whose section "a" renders `shown`, then the closing "notes"."""
  return (
    unit.Unit("a", sections=(unit.Section("a", "A", "A nav", (), lambda: shown, **kwargs),)),
    unit.Unit(
      "notes", sections=(unit.Section("notes", "Notes", "Notes", (), lambda: "<ul></ul>"),)
    ),
  )


def _render_toy(units, design):
  measures = unit.Measures(tables={}, notes={}, config={})
  return [(s.id, text) for s, text in unit.render(units, ("a", "notes"), measures, design)]


def test_a_skip_is_shown_folded_or_left_out_by_its_value():
  skip = unit.Skip("no corrupted splits in the run")
  assert _render_toy(_toy(skip), unit.POPULATION) == [
    ("a", "<p class=\"skip\">Not shown: no corrupted splits in the run.</p>"),
    ("notes", "<ul></ul>"),
  ]
  # One network: folded into one line before the last section, with its reason.
  assert _render_toy(_toy(skip), unit.K1) == [
    (
      "left-out",
      "<p class=\"lead\">not measured in this run: A nav (no corrupted splits in the run).</p>",
    ),
    ("notes", "<ul></ul>"),
  ]
  # A section that serves populations only is named as such.
  (left, line), _ = _render_toy(_toy("<p>x</p>", designs=(unit.POPULATION,)), unit.K1)
  assert left == "left-out" and line.startswith("<p class=\"lead\">A nav: these compare")
  # An optional section with nothing to show is left out, with no line.
  assert _render_toy(_toy(skip, optional=True), unit.K1) == [("notes", "<ul></ul>")]
  with pytest.raises(ValueError, match="report section 'a' rendered NoneType"):
    _render_toy(_toy(None), unit.POPULATION)
