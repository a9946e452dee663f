"""The fake `digits` run, its human-study export and a filled annotation file.

Shared by the human-study tests (`human_study_export_test.py`, `human_study_table7_test.py`,
`human_study_refusals_test.py`). A test file imports the module-scoped fixtures it needs, and
those they need, into its own namespace (pytest finds fixtures there):

  from tests.report.human_study_run import export, loaded, run_dir

The fake run's PIEs are known without the code under test: prune_0.9's planted lost and gained
examples (`fake_run.planted_digits`, 40 of 500), the only examples whose modal label changes.
"""

import csv
import json
import os

import numpy as np
import pytest

from tests.report import fake_run
from tf_forget.policy import human_study_options
from tf_forget.report import collect
from tf_forget.report import human_study
from tf_forget.report import human_study_sheet
from tf_forget.report import write
from tf_forget.report.units import registry

CONFIG = {"dataset": "test"}
PIES = 40
# Planted rule: attribute -> (probability among PIEs, among non-PIEs); "blurry" is a column the
# user adds to the filled file.
RULE = {
  "incorrect_label": (0.3, 0.3),
  "multiple_objects": (0.5, 0.4),
  "corrupted_image": (0.8, 0.1),
  "fine_grained": (0.45, 0.0),
  "abstract_representation": (0.0, 0.0),
  "atypical": (0.6, 0.2),
  "blurry": (0.2, 0.6),
}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
  path = str(tmp_path_factory.mktemp("hs") / "run")
  fake_run.make_digits_run(path, corrupted=False)
  return path


@pytest.fixture(scope="module")
def loaded(run_dir):
  run = collect.load_run(run_dir)
  return run, registry.core(run)


def export_study(loaded, where, **options):
  """Builds the export in memory and writes it (as `write.save` does); returns its key."""
  run, m = loaded
  study = human_study.compute(run, m, human_study_options.Options(export_dir=where, **options))
  if study.export is not None:
    human_study_sheet.write(*study.export)
  with open(os.path.join(where, "key.json")) as f:
    return json.load(f)


@pytest.fixture(scope="module")
def export(loaded, tmp_path_factory):
  """(export directory, its key) of the study with the default options."""
  where = str(tmp_path_factory.mktemp("export") / "study")
  return where, export_study(loaded, where)


def sheet_rows(where):
  """The rows of the export's annotation file, header first."""
  with open(os.path.join(where, "sheet", "annotations.csv"), newline="") as f:
    return list(csv.reader(f))


def fill(where, path, seed=7, rule=RULE):
  """Fills the export's annotation file by `rule` (seeded) into `path`.

  Returns:
    ({item: {attribute: 0/1}}, {item: its group in the key}).
  """
  with open(os.path.join(where, "key.json")) as f:
    key = json.load(f)
  group = {it["item"]: it["group"] for it in key["items"]}
  rows = sheet_rows(where)
  header = rows[0][:-1] + ["blurry", "notes"]
  rng = np.random.default_rng(seed)
  filled = {}
  for row in rows[1:]:
    item = row[0]
    side = 0 if group[item] == "pie" else 1
    filled[item] = {a: int(rng.random() < p[side]) for a, p in rule.items()}
  with open(path, "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(header)
    for item, values in filled.items():
      w.writerow([item] + [values[a] for a in header[1:-1]] + ["a note, with a comma"])
  return filled, group


@pytest.fixture(scope="module")
def filled_report(run_dir, export, tmp_path_factory):
  """(report.json, report directory, filled values, groups, filled file) of a filled study."""
  where, _ = export
  root = tmp_path_factory.mktemp("filled")
  path, out = str(root / "filled.csv"), str(root / "out")
  filled, group = fill(where, path)
  doc = write.write_report(
    run_dir, out, CONFIG, human_study={"annotations": path, "key": os.path.join(where, "key.json")}
  )
  return doc, out, filled, group, path
