"""human_study: every mismatch of 000's human study refused in one line.

Annotation files that do not fit their key (unknown, missing or duplicate items, values other
than 0 / 1, missing columns, not UTF-8), keys of another study, run or data set, edited or
missing keys, an export directory of another study and bad options are each refused with a
one-line `HumanStudyError`, and a refused report writes nothing. The study is that of the fake
`digits` run (`human_study_run`).
"""

import csv
import json
import os
import re

import numpy as np
import pytest

from tests.report import fake_run
from tests.report import human_study_run
from tests.report.human_study_run import export
from tests.report.human_study_run import filled_report
from tests.report.human_study_run import loaded
from tests.report.human_study_run import run_dir
from tf_forget.artifacts import errors
from tf_forget.policy import human_study_options
from tf_forget.report import collect
from tf_forget.report import human_study
from tf_forget.report import human_study_sample
from tf_forget.report import write
from tf_forget.report.units import registry

CONFIG = human_study_run.CONFIG


def _one_line_error(fn):
  with pytest.raises(errors.Error) as e:
    fn()
  assert isinstance(e.value, human_study_sample.HumanStudyError)
  assert "\n" not in str(e.value)
  return str(e.value)


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
  "unknown item": (
    lambda rows: _set(rows, 3, 0, rows[3][0].split("-")[0] + "-00000000"),
    r"row 4: unknown item '\w+-00000000' \(not in the key\)",
  ),
  "another export": (
    lambda rows: _set(rows, 3, 0, "zzzzzz-00000000"),
    r"belong to another export \(row 4: item 'zzzzzz-00000000'",
  ),
  "missing rows": (lambda rows: rows[:1] + rows[4:], r"lack 3 of the key's 80 items"),
  "duplicate": (lambda rows: rows + [rows[5]], r"row 82: item '\S+' appears twice"),
  "value 2": (
    lambda rows: _set(rows, 2, 3, "2"),
    r"row 3 \(item \S+\), column "
    r"'corrupted_image': '2' is not 0 or 1",
  ),
  "value yes": (lambda rows: _set(rows, 2, 1, "yes"), r"'yes' is not 0 or 1"),
  "blank": (lambda rows: _set(rows, 2, 7, ""), r"column 'blurry': '' is not 0 or 1"),
  "missing column": (lambda rows: [r[:4] + r[5:] for r in rows], r"lack column 'fine_grained'"),
  "no item column": (lambda rows: [["id"] + rows[0][1:]] + rows[1:], r"no 'item' column"),
}


@pytest.mark.parametrize("case", sorted(EDITS))
def test_bad_annotation_files_are_refused_in_one_line(
  loaded, export, filled_report, tmp_path, case
):
  where, _ = export
  edit, message = EDITS[case]
  bad = str(tmp_path / "bad.csv")
  _rewrite(filled_report[4], bad, edit)
  run, m = loaded
  text = _one_line_error(
    lambda: human_study.compute(
      run, m, human_study_options.Options(annotations=bad, key=os.path.join(where, "key.json"))
    )
  )
  assert re.search(message, text), text


def test_annotations_that_are_not_utf8_are_refused_in_one_line(
  loaded, export, filled_report, tmp_path
):
  """A sheet re-saved in Latin-1 names the byte, its offset and the fix."""
  where, _ = export
  with open(filled_report[4], "rb") as f:
    data = f.read()
  bad = tmp_path / "latin.csv"
  bad.write_bytes(data + "café\n".encode("latin-1"))  # é = 0xe9
  run, m = loaded
  text = _one_line_error(
    lambda: human_study.compute(
      run, m, human_study_options.Options(annotations=str(bad), key=os.path.join(where, "key.json"))
    )
  )
  assert text == (
    f"annotations {bad} are not UTF-8 text (byte 0xe9 at offset {len(data) + 3}):"
    " re-save them as UTF-8"
  ), text


def _another_run(path):
  """The fake digits run with one more lost example in prune_0.9 (41 PIEs)."""
  ids, labels, lost, _ = fake_run.make_digits_run(path, corrupted=False)
  extra = int(
    np.flatnonzero((np.arange(labels.size) % fake_run.NOISE_PERIOD >= 10) & (labels == 2))[0]
  )
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
    ({"group": "cie"}, r"asked for group cie \(key: pie\)"),
  ):
    text = _one_line_error(
      lambda: human_study.compute(
        run, m, human_study_options.Options(annotations=path, key=key, **options)
      )
    )
    assert re.search(message, text), text
  # A key made with another seed: the filled file's items are not its items.
  other = str(tmp_path / "seed1")
  human_study_run.export_study(loaded, other, seed=1)
  text = _one_line_error(
    lambda: human_study.compute(
      run, m, human_study_options.Options(annotations=path, key=os.path.join(other, "key.json"))
    )
  )
  assert "belong to another export" in text
  # A key for another run of the same data set: its PIE set differs.
  run_2 = str(tmp_path / "run2")
  _another_run(run_2)
  r2 = collect.load_run(run_2)
  text = _one_line_error(
    lambda: human_study.compute(
      r2, registry.core(r2), human_study_options.Options(annotations=path, key=key)
    )
  )
  assert re.search(
    r"made for another run: the PIEs of prune_0.9 differ \(key: 40 of 500 "
    r"examples; this run: 41 of 500\)",
    text,
  ), text
  # A key for another data set.
  run_3 = str(tmp_path / "biased")
  fake_run.make_biased_run(run_3)
  r3 = collect.load_run(run_3)
  text = _one_line_error(
    lambda: human_study.compute(
      r3, registry.core(r3), human_study_options.Options(annotations=path, key=key)
    )
  )
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
  text = _one_line_error(
    lambda: human_study.compute(
      run, m, human_study_options.Options(annotations=filled_report[4], key=edited)
    )
  )
  assert "does not match the sample this run draws" in text
  text = _one_line_error(
    lambda: human_study.compute(run, m, human_study_options.Options(annotations=filled_report[4]))
  )
  assert "no key for annotations" in text
  with open(str(tmp_path / "foreign.json"), "w") as f:
    json.dump({"schema": "x"}, f)
  text = _one_line_error(
    lambda: human_study.compute(
      run,
      m,
      human_study_options.Options(annotations=filled_report[4], key=str(tmp_path / "foreign.json")),
    )
  )
  assert "is not a human-study key" in text


def test_export_dir_of_another_study_is_refused(loaded, export):
  where, _ = export
  run, m = loaded
  text = _one_line_error(
    lambda: human_study.compute(run, m, human_study_options.Options(export_dir=where, seed=5))
  )
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
    ({"export_dir": str(tmp_path / "e"), "group": "other"}, "group must be one of pie, cie"),
  ):
    text = _one_line_error(
      lambda: human_study.check_options(human_study_options.Options(**options))
    )
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
    write.write_report(
      run_dir,
      out,
      CONFIG,
      human_study={
        "annotations": bad,
        "key": os.path.join(where, "key.json"),
        "export_dir": new_export,
      },
    )
  assert fake_run.listing(out) == before and not os.path.exists(new_export)
  with open(os.path.join(out, "report.json"), "rb") as f:
    assert f.read() == report_json
