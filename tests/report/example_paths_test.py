"""Examples named by their file: the `path` column of `flips`,
`divergence_examples`, the gallery cards and `cie_annotation`, shown in the page, on a K = 1 run
over a folder of PNGs (`fake_run.make_folder_run`: `full_int8` flips the folder's positions 0,
7 and 13). The expected paths are the files the builder wrote, listed here with `os.walk`
(not through the data set). Registered data sets have no paths (tests/report/
verdict_users_test.py checks that a digits report has no `path` column).
"""

import os

import pytest

from tests.report import fake_run
from tf_forget.data import dataset_api
from tf_forget.report import write


@pytest.fixture(scope="module")
def folder_run(tmp_path_factory):
  run_dir = str(tmp_path_factory.mktemp("folder_run"))
  root = str(tmp_path_factory.mktemp("images"))
  data, flipped = fake_run.make_folder_run(run_dir, root)
  files = sorted(
    os.path.relpath(os.path.join(d, f), root).replace(os.sep, "/")
    for d, _, names in os.walk(root)
    for f in names
  )
  report = write.build_report(run_dir, dataset=data)
  return {"report": report, "files": files, "flipped": flipped, "data": data}


def test_paths_are_the_files_relative_to_the_root(folder_run):
  paths = dataset_api.example_paths(folder_run["data"], "test")
  assert [paths[i] for i in sorted(paths)] == folder_run["files"]


def test_flips_name_their_files(folder_run):
  flips = folder_run["report"].measures.tables["flips"]
  assert list(flips.columns[:3]) == ["variant", "id", "path"]
  want = [folder_run["files"][i] for i in folder_run["flipped"]]
  assert list(flips.path) == want and list(flips.id) == list(folder_run["flipped"])
  csv = folder_run["report"].tables["flips"].splitlines()
  assert csv[0].startswith("variant,id,path,label") and want[0] in csv[1]


def test_divergence_examples_gallery_and_annotation_name_their_files(folder_run):
  report = folder_run["report"]
  want = {folder_run["files"][i] for i in folder_run["flipped"]}
  examples = report.measures.tables["divergence_examples"]
  assert "path" in examples and want <= set(examples.path)
  cards = report.json["gallery"]["dense"]["cards"]
  assert {c["path"] for c in cards} == want
  assert set(report.measures.tables["gallery"].path) == want
  assert set(report.measures.tables["cie_annotation"].path) == want


def test_the_page_shows_the_paths(folder_run):
  page = folder_run["report"].html
  k1 = page[page.index('<section id="k1">') :]
  k1 = k1[: k1.index("</section>")]
  gallery = page[page.index('<section id="gallery">') :]
  gallery = gallery[: gallery.index("</section>")]
  for i in folder_run["flipped"]:
    path = folder_run["files"][i]
    assert path in k1  # "Flipped examples, by file"
    assert f'<div class="gal-path">{path}</div>' in gallery
  assert "Flipped examples, by file" in k1
  assert " (" not in gallery.split("true: <b>")[1].split("</b>")[0]  # "3", not "3 (3)"
