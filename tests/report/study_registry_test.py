"""The report's study registry (`studies.STUDIES`): the recipe of docs/architecture.md
("A report section") followed in a test: one more study and its section, registered, land in
report.json, tables/ and report.html; a study naming what does not exist is refused."""

import json
import os

import pandas as pd
import pytest

from tests.report import fake_run
from tf_forget.report import html
from tf_forget.report import section_registry
from tf_forget.report import studies
from tf_forget.report import write

NOTE = "members per variant, from the summary"


def _members(measures):
  """The extra study: one row per variant with its member count (from the core summary)."""
  frame = pd.DataFrame(
    {
      "variant": list(measures.variants),
      "members": [s["members"] for s in measures.variants.values()],
    }
  )
  return studies.Part({"extra_members": frame}, {"extra": [NOTE]}, {"extra": {"rows": 2}})


EXTRA = studies.Study("extra", ("measures",), _members, ("extra",))
SECTION = section_registry.Section(
  "extra",
  "12. Extra: members per variant",
  "12 Extra",
  lambda v: html.table(v.measures.tables["extra_members"]),
)


@pytest.fixture(name="run_dir", scope="module")
def _run_dir(tmp_path_factory):
  run_dir = str(tmp_path_factory.mktemp("extra") / "run")
  fake_run.make_digits_run(run_dir, members=3, corrupted=False, variants=("prune_0.9",))
  return run_dir


def test_the_registry_is_in_merge_order_and_consistent():
  assert [s.name for s in studies.STUDIES] == [
    "noise",
    "prune_retrain",
    "deployment",
    "single_network",
    "divergence",
    "repair",
    "verdict",
    "gallery",
    "human_study",
  ]
  studies.check(studies.STUDIES)  # every need an input, every section in the registry
  viewed = {sid for s in studies.STUDIES for sid in s.sections}
  assert viewed <= {sec.id for sec in section_registry.SECTIONS}


def test_a_registered_study_lands_in_the_report(run_dir, tmp_path, monkeypatch):
  sections = list(section_registry.SECTIONS)
  monkeypatch.setattr(studies, "STUDIES", studies.STUDIES + (EXTRA,))
  monkeypatch.setattr(section_registry, "SECTIONS", tuple(sections[:-1] + [SECTION, sections[-1]]))
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
  # Merged after every registered study: its notes and settings come last.
  assert list(doc["notes"])[-1] == "extra" and doc["notes"]["extra"] == [NOTE]
  assert list(doc["settings"])[-1] == "extra" and doc["settings"]["extra"] == {"rows": 2}
  with open(os.path.join(out, "report.html"), encoding="utf-8") as f:
    page = f.read()
  assert "<a href=\"#extra\" title=\"12. Extra: members per variant\">12 Extra</a>" in page
  body = page.split("<section id=\"extra\">")[1].split("</section>")[0]
  assert "<h2>12. Extra: members per variant</h2>" in body and ">prune_0.9<" in body
  assert page.index("<section id=\"extra\">") < page.index("<section id=\"notes\">")


def test_the_registries_are_restored_and_the_study_is_gone(run_dir):
  assert EXTRA not in studies.STUDIES and SECTION not in section_registry.SECTIONS
  report = write.build_report(run_dir, dataset_name="digits")
  assert "extra_members" not in report.tables and "extra" not in report.json["notes"]
  assert "id=\"extra\"" not in report.html


@pytest.mark.parametrize(
  "study",
  [
    studies.Study("extra", ("measures", "weather"), _members, ("extra",)),
    studies.Study("extra", ("measures",), _members, ("no-such-section",)),
    studies.Study("noise", ("measures",), _members),
  ],
)
def test_a_study_naming_what_does_not_exist_is_refused(run_dir, monkeypatch, study):
  monkeypatch.setattr(studies, "STUDIES", studies.STUDIES + (study,))
  with pytest.raises(ValueError, match="report study"):
    write.build_report(run_dir, dataset_name="digits")
