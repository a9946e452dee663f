"""000's human study round trip through the audit command (000 §3.3, Table 7).

`--annotation_export=DIR` writes a blind sheet and a key apart; the test fills the sheet by a
planted rule that only the key can tell (corrupted_image = 1 on every PIE, on 2 non-PIEs), the
same command with `--annotations=FILE` adds Table 7, and a file that does not match the run is
refused in one line with the previous report left as it was.
"""

import csv
import json
import math
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TINY = [
  "--preset=tiny",
  "--members=2",
  "--variants=dense,prune_0.5",
  "--steps=40",
  "--quantizations=",
  "--pruned_quantizations=none",
  "--corruptions=none",
  "--noise_levels=none",
  "--deploy_encoding=plain",
  "--executor=inline",
]
PER_GROUP = 20


def _audit(*args):
  return subprocess.run(
    [sys.executable, os.path.join(ROOT, "eval", "audit.py"), *TINY, *args],
    env=dict(os.environ, PYTHONPATH=ROOT),
    capture_output=True,
    text=True,
    timeout=900,
    check=False,
  )


def _fill(sheet_csv, key, out_csv, non_pie_flagged=2):
  """Writes the filled sheet: corrupted_image 1 on every PIE item and the first non-PIEs."""
  groups = {item["item"]: item["group"] for item in key["items"]}
  with open(sheet_csv, newline="", encoding="utf-8") as f:
    rows = list(csv.DictReader(f))
  seen_other = 0
  for row in rows:
    for column in key["attributes"]:
      row[column] = "0"
    if groups[row["item"]] == "pie":
      row["corrupted_image"] = "1"
    elif seen_other < non_pie_flagged:
      row["corrupted_image"], seen_other = "1", seen_other + 1
  with open(out_csv, "w", newline="", encoding="utf-8") as f:
    writer = csv.DictWriter(f, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
  return rows


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
  root = tmp_path_factory.mktemp("study")
  out, export = str(root / "run"), str(root / "export")
  done = _audit(
    f"--out={out}", f"--annotation_export={export}", f"--annotation_per_group={PER_GROUP}"
  )
  assert done.returncode == 0, done.stderr[-3000:]
  with open(os.path.join(export, "key.json"), encoding="utf-8") as f:
    key = json.load(f)
  return root, out, export, key


def test_the_export_is_blind_and_balanced(exported):
  _, _, export, key = exported
  groups = [item["group"] for item in key["items"]]
  assert groups.count("pie") == groups.count("non_pie") == PER_GROUP
  assert groups != sorted(groups), "the sample is not shuffled"
  sheet = os.path.join(export, "sheet")
  assert not os.path.exists(os.path.join(sheet, "key.json"))
  with open(os.path.join(sheet, "annotations.csv"), encoding="utf-8") as f:
    text = f.read()
  assert "pie" not in text.lower(), "the sheet gives the group away"
  assert len(os.listdir(os.path.join(sheet, "images"))) == 2 * PER_GROUP


def test_filled_annotations_give_table_7(exported):
  root, out, export, key = exported
  filled = str(root / "filled.csv")
  _fill(os.path.join(export, "sheet", "annotations.csv"), key, filled)
  done = _audit(
    f"--out={out}",
    f"--annotations={filled}",
    f"--annotation_key={os.path.join(export, 'key.json')}",
  )
  assert done.returncode == 0, done.stderr[-3000:]
  with open(os.path.join(out, "report.json"), encoding="utf-8") as f:
    rows = {r["attribute"]: r for r in json.load(f)["tables"]["human_study"]}
  row = rows["corrupted_image"]
  assert (row["flagged_count"], row["flagged_n"]) == (PER_GROUP, PER_GROUP)
  assert (row["other_count"], row["other_n"]) == (2, PER_GROUP)
  # By hand: ratio (20/20) / (2/20) = 10; Katz log interval
  # exp(ln 10 ± 1.959964 · sqrt(1/20 − 1/20 + 1/2 − 1/20)) = [2.686, 37.23].
  half = 1.959964 * math.sqrt(1 / 2 - 1 / 20)
  assert row["ratio"] == pytest.approx(10.0)
  assert row["ratio_low"] == pytest.approx(10 * math.exp(-half), rel=1e-6)
  assert row["ratio_high"] == pytest.approx(10 * math.exp(half), rel=1e-6)
  assert os.path.exists(os.path.join(out, "tables", "human_study.csv"))


def test_a_file_that_does_not_match_the_run_is_one_line(exported):
  root, out, export, key = exported
  bad = str(root / "bad.csv")
  rows = _fill(os.path.join(export, "sheet", "annotations.csv"), key, bad)
  rows[0]["item"] = "not-an-item"
  with open(bad, "w", newline="", encoding="utf-8") as f:
    writer = csv.DictWriter(f, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
  with open(os.path.join(out, "report.json"), "rb") as f:
    before = f.read()
  done = _audit(
    f"--out={out}", f"--annotations={bad}", f"--annotation_key={os.path.join(export, 'key.json')}"
  )
  assert done.returncode == 1
  lines = done.stderr.strip().splitlines()
  assert len(lines) == 1 and lines[0].startswith("audit: error:"), done.stderr[-2000:]
  assert "not-an-item" in lines[0]
  with open(os.path.join(out, "report.json"), "rb") as f:
    assert f.read() == before
