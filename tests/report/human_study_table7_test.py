"""human_study: a filled annotation file read back into 000 Table 7.

The export of the fake `digits` run (`human_study_run`) is filled by a planted rule; the table's
numbers are recomputed here by hand (Katz log interval, Wilson score interval, Fisher's p from
`math.comb`; tests/stats/representation_test.py has the same formulas), and report.json's
settings and the report's section are checked; without a study nothing changes, and a key
beside the sheet is found.
"""

import json
import math
import os
import shutil
import statistics

import pandas as pd
import pytest

from tests.report import human_study_run
from tests.report.human_study_run import export
from tests.report.human_study_run import filled_report
from tests.report.human_study_run import loaded
from tests.report.human_study_run import run_dir
from tf_forget.policy import human_study_options
from tf_forget.report import human_study
from tf_forget.report import write

CONFIG = human_study_run.CONFIG
PIES = human_study_run.PIES
RULE = human_study_run.RULE
Z95 = statistics.NormalDist().inv_cdf(0.975)


def _expected(filled, group, attr):
  x1 = sum(v[attr] for i, v in filled.items() if group[i] == "pie")
  x0 = sum(v[attr] for i, v in filled.items() if group[i] != "pie")
  n1 = sum(g == "pie" for g in group.values())
  return x1, n1, x0, len(group) - n1


def _katz(x1, n1, x0, n0, add=0.0):
  a, b, c, d = x1 + add, n1 + add, x0 + add, n0 + add
  r = (a / b) / (c / d)
  se = math.sqrt(1 / a - 1 / b + 1 / c - 1 / d)
  return r * math.exp(-Z95 * se), r * math.exp(Z95 * se)


def _wilson(x, n):
  p, z = x / n, Z95
  centre = (p + z * z / (2 * n)) / (1 + z * z / n)
  half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
  return centre - half, centre + half


def _fisher(x1, n1, x0, n0):
  k, n = x1 + x0, n1 + n0
  prob = lambda a: math.comb(k, a) * math.comb(n - k, n1 - a) / math.comb(n, n1)
  return min(
    1.0,
    sum(prob(a) for a in range(max(0, k - n0), min(k, n1) + 1) if prob(a) <= prob(x1) * (1 + 1e-7)),
  )


def test_table7_matches_an_independent_computation(filled_report):
  doc, out, filled, group, _ = filled_report
  table = pd.read_csv(os.path.join(out, "tables", "human_study.csv"))
  assert list(table.attribute) == list(human_study.VOCABULARY_NAMES) + ["blurry"]
  assert list(table.source)[-1] == "user" and list(table.source)[2] == "000 §3.3 (3)"
  assert doc["tables"]["human_study"] == json.loads(json.dumps(doc["tables"]["human_study"]))
  for row in table.itertuples():
    x1, n1, x0, n0 = _expected(filled, group, row.attribute)
    assert (row.flagged_count, row.flagged_n, row.other_count, row.other_n) == (x1, n1, x0, n0)
    assert (row.flagged_n, row.other_n) == (PIES, PIES)
    assert row.flagged_share == pytest.approx(x1 / n1)
    assert row.other_share == pytest.approx(x0 / n0)
    assert (row.flagged_share_low, row.flagged_share_high) == pytest.approx(_wilson(x1, n1))
    assert (row.other_share_low, row.other_share_high) == pytest.approx(_wilson(x0, n0))
    assert row.p_value == pytest.approx(_fisher(x1, n1, x0, n0), rel=1e-6)
    if x1 and x0:
      assert row.interval_method == "katz-log"
      assert row.ratio == pytest.approx((x1 / n1) / (x0 / n0), rel=1e-9)
      assert (row.ratio_low, row.ratio_high) == pytest.approx(_katz(x1, n1, x0, n0), rel=1e-9)
    elif x1 or x0:
      assert row.interval_method == "katz-log-adjusted"
      assert (row.ratio_low, row.ratio_high) == pytest.approx(
        _katz(x1, n1, x0, n0, add=0.5), rel=1e-9
      )
    else:
      assert row.interval_method == "undefined" and math.isnan(row.ratio)
  corrupted = table.set_index("attribute").loc["corrupted_image"]
  assert corrupted.ratio_low > 2  # the planted 0.8 vs 0.1 is found
  fine = table.set_index("attribute").loc["fine_grained"]  # planted 0.45 vs 0
  assert fine.interval_method == "katz-log-adjusted" and fine.ratio == math.inf
  assert fine.ratio_low > 1


def test_report_json_settings_and_page(filled_report):
  doc, out, _, _, path = filled_report
  s = doc["settings"]["human_study"]
  assert (s["variant"], s["group"], s["per_group"], s["seed"], s["items"]) == (
    "prune_0.9",
    "pie",
    PIES,
    0,
    2 * PIES,
  )
  assert s["annotations"] == path and s["attributes"][-1] == "blurry"
  assert "tables/human_study.csv" in doc["files"]["tables"]
  with open(os.path.join(out, "report.html")) as f:
    page = f.read()
  section = page[page.index("<section id=\"human-study\">") :]
  section = section[: section.index("</section>")]
  assert "000 Table 7" in section and "<img" in section and "corrupted_image" in section
  assert (
    page.index("id=\"pie\"") < page.index("id=\"human-study\"") < page.index("id=\"subgroups\"")
  )


def test_without_human_study_nothing_changes(run_dir, tmp_path):
  report = write.build_report(run_dir, CONFIG)
  assert "human_study" not in report.tables and "human-study" not in report.html
  assert "human_study" not in report.json["settings"]


def test_key_found_beside_the_sheet(loaded, export, tmp_path):
  where, _ = export
  copy = str(tmp_path / "copy")
  shutil.copytree(where, copy)
  human_study_run.fill(copy, os.path.join(copy, "sheet", "annotations.csv"))
  run, m = loaded
  study = human_study.compute(
    run, m, human_study_options.Options(annotations=os.path.join(copy, "sheet", "annotations.csv"))
  )
  assert len(study.tables["human_study"]) == len(RULE)
  # Re-exporting the same study there keeps the filled file.
  with open(os.path.join(copy, "sheet", "annotations.csv"), "rb") as f:
    before = f.read()
  again = human_study.compute(run, m, human_study_options.Options(export_dir=copy))
  assert again.export is None and "kept" in again.notes[0]
  with open(os.path.join(copy, "sheet", "annotations.csv"), "rb") as f:
    assert f.read() == before
