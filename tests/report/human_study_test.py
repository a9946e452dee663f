"""human_study (issue #26): 000's human study round trip on the fake `digits` run.

Export for blind annotation (balanced, shuffled, deterministic, key apart), then a file filled
by a planted rule read back into 000 Table 7, whose numbers are recomputed here by hand (Katz
log interval, Wilson score interval, Fisher's p from `math.comb`; tests/stats/
representation_test.py has the same formulas), and every mismatch refused in one line with nothing written.

The fake run's PIEs are known without the code under test: prune_0.9's planted lost and gained
examples (`fake_run.planted_digits`, 40 of 500), the only examples whose modal label changes.
"""

import csv
import json
import math
import os
import re
import shutil
import statistics

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from tests.report import fake_run
from tf_forget.artifacts import errors
from tf_forget.data import registry
from tf_forget.report import collect
from tf_forget.report import human_study
from tf_forget.report import human_study_sample
from tf_forget.report import measures as measures_lib
from tf_forget.report import write

CONFIG = {"dataset": "test"}
PIES = 40
Z95 = statistics.NormalDist().inv_cdf(0.975)
# Planted rule: attribute -> (probability among PIEs, among non-PIEs); "blurry" is a column the
# user adds to the filled file.
RULE = {"incorrect_label": (0.3, 0.3), "multiple_objects": (0.5, 0.4),
        "corrupted_image": (0.8, 0.1), "fine_grained": (0.45, 0.0),
        "abstract_representation": (0.0, 0.0), "atypical": (0.6, 0.2), "blurry": (0.2, 0.6)}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
  path = str(tmp_path_factory.mktemp("hs") / "run")
  fake_run.make_digits_run(path, corrupted=False)
  return path


@pytest.fixture(scope="module")
def loaded(run_dir):
  run = collect.load_run(run_dir)
  return run, measures_lib.compute(run)


@pytest.fixture(scope="module")
def pie_positions():
  labels = registry.get("digits").load("test").labels
  lost, gained = fake_run.planted_digits(labels)
  return set(np.concatenate([lost, gained]).tolist())


def _export(loaded, where, **options):
  """Builds the export in memory and writes it (as `write.save` does); returns its key."""
  run, m = loaded
  study = human_study.compute(run, m, human_study.Options(export_dir=where, **options))
  if study.export is not None:
    from tf_forget.report import human_study_sheet  # pylint: disable=g-import-not-at-top
    human_study_sheet.write(*study.export)
  with open(os.path.join(where, "key.json")) as f:
    return json.load(f)


@pytest.fixture(scope="module")
def export(loaded, tmp_path_factory):
  where = str(tmp_path_factory.mktemp("export") / "study")
  return where, _export(loaded, where)


def _sheet_rows(where):
  with open(os.path.join(where, "sheet", "annotations.csv"), newline="") as f:
    return list(csv.reader(f))


def _fill(where, path, seed=7, rule=RULE):
  """Fills the export's annotation file by `rule` (seeded); returns {item: {attr: 0/1}}."""
  with open(os.path.join(where, "key.json")) as f:
    key = json.load(f)
  group = {it["item"]: it["group"] for it in key["items"]}
  rows = _sheet_rows(where)
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


def _one_line_error(fn):
  with pytest.raises(errors.Error) as e:
    fn()
  assert isinstance(e.value, human_study_sample.HumanStudyError)
  assert "\n" not in str(e.value)
  return str(e.value)


# --- the export ------------------------------------------------------------------------------


def test_export_is_balanced_and_holds_the_planted_pies(export, pie_positions):
  _, key = export
  groups = [it["group"] for it in key["items"]]
  assert groups.count("pie") == groups.count("non_pie") == PIES  # min(100, 40 PIE, 460)
  assert {it["position"] for it in key["items"] if it["group"] == "pie"} == pie_positions
  assert not pie_positions & {it["position"] for it in key["items"] if it["group"] != "pie"}
  assert key["study"]["variant"] == "prune_0.9"  # the variant with the most PIEs
  assert key["study"]["flagged_total"] == PIES and key["study"]["other_total"] == 460
  ids = registry.get("digits").load("test").ids
  assert all(it["id"] == int(ids[it["position"]]) for it in key["items"])


def test_smaller_sample_is_balanced(loaded, tmp_path):
  key = _export(loaded, str(tmp_path / "small"), per_group=10, seed=3)
  groups = [it["group"] for it in key["items"]]
  assert groups.count("pie") == groups.count("non_pie") == 10


def test_export_is_shuffled(export):
  where, key = export
  groups = [it["group"] for it in key["items"]]
  switches = sum(a != b for a, b in zip(groups, groups[1:]))
  assert switches >= 20  # 80 items of two groups in random order: about 40 switches
  positions = [it["position"] for it in key["items"]]
  assert positions != sorted(positions)
  assert [r[0] for r in _sheet_rows(where)[1:]] == [it["item"] for it in key["items"]]


def test_export_is_deterministic_for_a_seed(loaded, export, tmp_path):
  where, key = export
  again = str(tmp_path / "again")
  _export(loaded, again)
  for base, _, names in os.walk(where):
    for name in names:
      rel = os.path.relpath(os.path.join(base, name), where)
      with open(os.path.join(where, rel), "rb") as a, open(os.path.join(again, rel), "rb") as b:
        assert a.read() == b.read(), rel
  other = _export(loaded, str(tmp_path / "seed1"), seed=1, per_group=20)
  first = _export(loaded, str(tmp_path / "seed0"), seed=0, per_group=20)
  assert ({it["position"] for it in other["items"]}
          != {it["position"] for it in first["items"]})
  assert not {it["item"] for it in other["items"]} & {it["item"] for it in key["items"]}


def test_key_is_kept_apart_and_the_sheet_reveals_no_group(export):
  where, key = export
  sheet = os.path.join(where, "sheet")
  assert sorted(os.listdir(where)) == ["key.json", "sheet"]
  assert sorted(os.listdir(sheet)) == ["README.txt", "annotations.csv", "images", "sheet.html"]
  items = [it["item"] for it in key["items"]]
  assert sorted(os.listdir(os.path.join(sheet, "images"))) == sorted(f"{i}.png" for i in items)
  rows = _sheet_rows(where)
  assert rows[0] == ["item"] + list(human_study.VOCABULARY_NAMES) + ["notes"]
  assert all(cell == "" for row in rows[1:] for cell in row[1:])
  for name in ("annotations.csv", "README.txt", "sheet.html"):
    with open(os.path.join(sheet, name)) as f:
      text = re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "", f.read())
    assert not re.search(r"\b(non_)?(pie|cie)\b|\"position\"|fingerprint|variant|prune", text,
                         re.I), name
  # Item ids are opaque: the same study prefix for every item, then 8 hex digits of a hash.
  assert len({i.split("-")[0] for i in items}) == 1
  assert all(re.fullmatch(r"[0-9a-f]{6}-[0-9a-f]{8}", i) for i in items)


def test_sheet_images_are_the_keyed_examples(export):
  where, key = export
  test = registry.get("digits").load("test")
  for it in key["items"][:12]:
    with Image.open(os.path.join(where, "sheet", "images", f"{it['item']}.png")) as img:
      shown = np.asarray(img)
    original = test.images[it["position"]][:, :, 0]
    assert shown.shape == (128, 128)  # 8x8 digits upscaled x16, nearest
    np.testing.assert_array_equal(shown[::16, ::16], original)


def test_cie_group(loaded, tmp_path, pie_positions):
  key = _export(loaded, str(tmp_path / "cie"), group="cie")
  # Taxicab p90 selects 50 examples; only the 40 planted ones have d_T > 0 (fake_run).
  assert {it["position"] for it in key["items"] if it["group"] == "cie"} == pie_positions
  assert {it["group"] for it in key["items"]} == {"cie", "non_cie"}
  assert key["study"]["percentile"] == 90.0


# --- reading back: 000 Table 7 ---------------------------------------------------------------


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
  return min(1.0, sum(prob(a) for a in range(max(0, k - n0), min(k, n1) + 1)
                      if prob(a) <= prob(x1) * (1 + 1e-7)))


@pytest.fixture(scope="module")
def filled_report(run_dir, export, tmp_path_factory):
  where, _ = export
  root = tmp_path_factory.mktemp("filled")
  path, out = str(root / "filled.csv"), str(root / "out")
  filled, group = _fill(where, path)
  doc = write.write_report(run_dir, out, CONFIG, human_study={
      "annotations": path, "key": os.path.join(where, "key.json")})
  return doc, out, filled, group, path


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
          _katz(x1, n1, x0, n0, add=0.5), rel=1e-9)
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
      "prune_0.9", "pie", PIES, 0, 2 * PIES)
  assert s["annotations"] == path and s["attributes"][-1] == "blurry"
  assert "tables/human_study.csv" in doc["files"]["tables"]
  with open(os.path.join(out, "report.html")) as f:
    page = f.read()
  section = page[page.index("<section id=\"human-study\">"):]
  section = section[:section.index("</section>")]
  assert "000 Table 7" in section and "<img" in section and "corrupted_image" in section
  assert page.index("id=\"pie\"") < page.index("id=\"human-study\"") < page.index(
      "id=\"subgroups\"")


def test_without_human_study_nothing_changes(run_dir, tmp_path):
  report = write.build_report(run_dir, CONFIG)
  assert "human_study" not in report.tables and "human-study" not in report.html
  assert "human_study" not in report.json["settings"]


def test_key_found_beside_the_sheet(loaded, export, tmp_path):
  where, _ = export
  copy = str(tmp_path / "copy")
  shutil.copytree(where, copy)
  _fill(copy, os.path.join(copy, "sheet", "annotations.csv"))
  run, m = loaded
  study = human_study.compute(run, m, human_study.Options(
      annotations=os.path.join(copy, "sheet", "annotations.csv")))
  assert len(study.tables["human_study"]) == len(RULE)
  # Re-exporting the same study there keeps the filled file.
  with open(os.path.join(copy, "sheet", "annotations.csv"), "rb") as f:
    before = f.read()
  again = human_study.compute(run, m, human_study.Options(export_dir=copy))
  assert again.export is None and "kept" in again.notes[0]
  with open(os.path.join(copy, "sheet", "annotations.csv"), "rb") as f:
    assert f.read() == before


# --- refusals --------------------------------------------------------------------------------


def _rewrite(src, dst, edit):
  with open(src, newline="") as f:
    rows = list(csv.reader(f))
  rows = edit(rows)
  with open(dst, "w", newline="") as f:
    csv.writer(f).writerows(rows)


def _set(rows, r, c, value):
  rows[r][c] = value
  return rows


EDITS = {
    "unknown item": (lambda rows: _set(rows, 3, 0, rows[3][0].split("-")[0] + "-00000000"),
                     r"row 4: unknown item '\w+-00000000' \(not in the key\)"),
    "another export": (lambda rows: _set(rows, 3, 0, "zzzzzz-00000000"),
                       r"belong to another export \(row 4: item 'zzzzzz-00000000'"),
    "missing rows": (lambda rows: rows[:1] + rows[4:], r"lack 3 of the key's 80 items"),
    "duplicate": (lambda rows: rows + [rows[5]], r"row 82: item '\S+' appears twice"),
    "value 2": (lambda rows: _set(rows, 2, 3, "2"), r"row 3 \(item \S+\), column "
                r"'corrupted_image': '2' is not 0 or 1"),
    "value yes": (lambda rows: _set(rows, 2, 1, "yes"), r"'yes' is not 0 or 1"),
    "blank": (lambda rows: _set(rows, 2, 7, ""), r"column 'blurry': '' is not 0 or 1"),
    "missing column": (lambda rows: [r[:4] + r[5:] for r in rows],
                       r"lack column 'fine_grained'"),
    "no item column": (lambda rows: [["id"] + rows[0][1:]] + rows[1:], r"no 'item' column"),
}


@pytest.mark.parametrize("case", sorted(EDITS))
def test_bad_annotation_files_are_refused_in_one_line(loaded, export, filled_report, tmp_path,
                                                      case):
  where, _ = export
  edit, message = EDITS[case]
  bad = str(tmp_path / "bad.csv")
  _rewrite(filled_report[4], bad, edit)
  run, m = loaded
  text = _one_line_error(lambda: human_study.compute(run, m, human_study.Options(
      annotations=bad, key=os.path.join(where, "key.json"))))
  assert re.search(message, text), text


def test_annotations_that_are_not_utf8_are_refused_in_one_line(loaded, export, filled_report,
                                                               tmp_path):
  """Issue #35: a sheet re-saved in Latin-1 names the byte, its offset and the fix."""
  where, _ = export
  with open(filled_report[4], "rb") as f:
    data = f.read()
  bad = tmp_path / "latin.csv"
  bad.write_bytes(data + "café\n".encode("latin-1"))  # é = 0xe9
  run, m = loaded
  text = _one_line_error(lambda: human_study.compute(run, m, human_study.Options(
      annotations=str(bad), key=os.path.join(where, "key.json"))))
  assert text == (f"annotations {bad} are not UTF-8 text (byte 0xe9 at offset {len(data) + 3}):"
                  " re-save them as UTF-8"), text


def _another_run(path):
  """The fake digits run with one more lost example in prune_0.9 (41 PIEs)."""
  ids, labels, lost, _ = fake_run.make_digits_run(path, corrupted=False)
  extra = int(np.flatnonzero((np.arange(labels.size) % fake_run.NOISE_PERIOD >= 10)
                             & (labels == 2))[0])
  gained = fake_run.planted_digits(labels)[1]
  for k in range(5):
    pred = fake_run.noisy(labels, k, 10)
    pred[lost] = 8
    pred[extra] = 7
    fake_run.write_member(path, "prune_0.9", k, "test", ids, labels, pred, 10, "digits")
  assert extra not in set(gained.tolist()) | set(lost.tolist())


def test_keys_of_another_study_or_run_are_refused(loaded, export, filled_report, tmp_path):
  where, _ = export
  key, path = os.path.join(where, "key.json"), filled_report[4]
  run, m = loaded
  for options, message in (
      ({"seed": 1}, r"made for another study: asked for seed 1 \(key: 0\)"),
      ({"variant": "full_int8"}, r"asked for variant full_int8 \(key: prune_0.9\)"),
      ({"group": "cie"}, r"asked for group cie \(key: pie\)")):
    text = _one_line_error(lambda: human_study.compute(run, m, human_study.Options(
        annotations=path, key=key, **options)))
    assert re.search(message, text), text
  # A key made with another seed: the filled file's items are not its items.
  other = str(tmp_path / "seed1")
  _export(loaded, other, seed=1)
  text = _one_line_error(lambda: human_study.compute(run, m, human_study.Options(
      annotations=path, key=os.path.join(other, "key.json"))))
  assert "belong to another export" in text
  # A key for another run of the same data set: its PIE set differs.
  run_2 = str(tmp_path / "run2")
  _another_run(run_2)
  r2 = collect.load_run(run_2)
  text = _one_line_error(lambda: human_study.compute(r2, measures_lib.compute(r2),
                                                     human_study.Options(annotations=path,
                                                                         key=key)))
  assert re.search(r"made for another run: the PIEs of prune_0.9 differ \(key: 40 of 500 "
                   r"examples; this run: 41 of 500\)", text), text
  # A key for another data set.
  run_3 = str(tmp_path / "biased")
  fake_run.make_biased_run(run_3)
  r3 = collect.load_run(run_3)
  text = _one_line_error(lambda: human_study.compute(r3, measures_lib.compute(r3),
                                                     human_study.Options(annotations=path,
                                                                         key=key)))
  assert "made for data set digits (test), this run is digits_biased" in text


def test_edited_or_missing_keys_are_refused(loaded, export, filled_report, tmp_path):
  where, _ = export
  run, m = loaded
  with open(os.path.join(where, "key.json")) as f:
    key = json.load(f)
  key["items"][0]["id"], key["items"][1]["id"] = key["items"][1]["id"], key["items"][0]["id"]
  edited = str(tmp_path / "edited.json")
  with open(edited, "w") as f:
    json.dump(key, f)
  text = _one_line_error(lambda: human_study.compute(run, m, human_study.Options(
      annotations=filled_report[4], key=edited)))
  assert "does not match the sample this run draws" in text
  text = _one_line_error(lambda: human_study.compute(run, m, human_study.Options(
      annotations=filled_report[4])))
  assert "no key for annotations" in text
  with open(str(tmp_path / "foreign.json"), "w") as f:
    json.dump({"schema": "x"}, f)
  text = _one_line_error(lambda: human_study.compute(run, m, human_study.Options(
      annotations=filled_report[4], key=str(tmp_path / "foreign.json"))))
  assert "is not a human-study key" in text


def test_export_dir_of_another_study_is_refused(loaded, export):
  where, _ = export
  run, m = loaded
  text = _one_line_error(lambda: human_study.compute(run, m, human_study.Options(
      export_dir=where, seed=5)))
  assert re.search(r"holds another study \(.*seed 0.*\); its key would be lost", text), text


def test_options_checked_without_a_run(tmp_path):
  foreign = tmp_path / "foreign"
  foreign.mkdir()
  (foreign / "notes.txt").write_text("mine")
  for options, message in (
      ({"export_dir": str(foreign)}, "is not empty and holds no key.json"),
      ({"annotations": str(tmp_path / "nope.csv")}, "no annotations file"),
      ({"export_dir": str(tmp_path / "e"), "columns": ("item",)}, "column 'item'"),
      ({"export_dir": str(tmp_path / "e"), "columns": ("fine_grained",)}, "given twice"),
      ({"export_dir": str(tmp_path / "e"), "group": "other"}, "group must be one of pie, cie")):
    text = _one_line_error(lambda: human_study.check_options(human_study.Options(**options)))
    assert message in text, text
  assert (foreign / "notes.txt").read_text() == "mine"


def test_refused_report_writes_nothing(run_dir, export, filled_report, tmp_path):
  where, _ = export
  _, out, _, _, path = filled_report
  before = fake_run.listing(out)
  with open(os.path.join(out, "report.json"), "rb") as f:
    report_json = f.read()
  bad = str(tmp_path / "bad.csv")
  _rewrite(path, bad, lambda rows: rows[:-1])
  new_export = str(tmp_path / "new_export")
  with pytest.raises(human_study_sample.HumanStudyError, match="lack 1 of the key's 80 items"):
    write.write_report(run_dir, out, CONFIG, human_study={
        "annotations": bad, "key": os.path.join(where, "key.json"), "export_dir": new_export})
  assert fake_run.listing(out) == before and not os.path.exists(new_export)
  with open(os.path.join(out, "report.json"), "rb") as f:
    assert f.read() == report_json
