"""human_study: 000's human study exported for blind annotation.

On the fake `digits` run (`human_study_run`): the export is balanced between PIEs and other
examples, shuffled, deterministic for a seed, its key kept apart from a sheet that reveals no
group, and the sheet's images are the keyed examples; the CIE group likewise.

The fake run's PIEs are known without the code under test: prune_0.9's planted lost and gained
examples (`fake_run.planted_digits`, 40 of 500), the only examples whose modal label changes.
"""

import os
import re

import numpy as np
from PIL import Image
import pytest

from tests.report import fake_run
from tests.report import human_study_run
from tests.report.human_study_run import export  # noqa: F401
from tests.report.human_study_run import loaded  # noqa: F401
from tests.report.human_study_run import run_dir  # noqa: F401
from tf_forget.data import registry
from tf_forget.report import human_study

PIES = human_study_run.PIES


@pytest.fixture(scope="module")
def pie_positions():
  labels = registry.get("digits").load("test").labels
  lost, gained = fake_run.planted_digits(labels)
  return set(np.concatenate([lost, gained]).tolist())


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
  key = human_study_run.export_study(loaded, str(tmp_path / "small"), per_group=10, seed=3)
  groups = [it["group"] for it in key["items"]]
  assert groups.count("pie") == groups.count("non_pie") == 10


def test_export_is_shuffled(export):
  where, key = export
  groups = [it["group"] for it in key["items"]]
  switches = sum(a != b for a, b in zip(groups, groups[1:]))
  assert switches >= 20  # 80 items of two groups in random order: about 40 switches
  positions = [it["position"] for it in key["items"]]
  assert positions != sorted(positions)
  assert [r[0] for r in human_study_run.sheet_rows(where)[1:]] == [
    it["item"] for it in key["items"]
  ]


def test_export_is_deterministic_for_a_seed(loaded, export, tmp_path):
  where, key = export
  again = str(tmp_path / "again")
  human_study_run.export_study(loaded, again)
  for base, _, names in os.walk(where):
    for name in names:
      rel = os.path.relpath(os.path.join(base, name), where)
      with open(os.path.join(where, rel), "rb") as a, open(os.path.join(again, rel), "rb") as b:
        assert a.read() == b.read(), rel
  other = human_study_run.export_study(loaded, str(tmp_path / "seed1"), seed=1, per_group=20)
  first = human_study_run.export_study(loaded, str(tmp_path / "seed0"), seed=0, per_group=20)
  assert {it["position"] for it in other["items"]} != {it["position"] for it in first["items"]}
  assert not {it["item"] for it in other["items"]} & {it["item"] for it in key["items"]}


def test_key_is_kept_apart_and_the_sheet_reveals_no_group(export):
  where, key = export
  sheet = os.path.join(where, "sheet")
  assert sorted(os.listdir(where)) == ["key.json", "sheet"]
  assert sorted(os.listdir(sheet)) == ["README.txt", "annotations.csv", "images", "sheet.html"]
  items = [it["item"] for it in key["items"]]
  assert sorted(os.listdir(os.path.join(sheet, "images"))) == sorted(f"{i}.png" for i in items)
  rows = human_study_run.sheet_rows(where)
  assert rows[0] == ["item"] + list(human_study.VOCABULARY_NAMES) + ["notes"]
  assert all(cell == "" for row in rows[1:] for cell in row[1:])
  for name in ("annotations.csv", "README.txt", "sheet.html"):
    with open(os.path.join(sheet, name)) as f:
      text = re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "", f.read())
    assert not re.search(
      r"\b(non_)?(pie|cie)\b|\"position\"|fingerprint|variant|prune", text, re.I
    ), name
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
  key = human_study_run.export_study(loaded, str(tmp_path / "cie"), group="cie")
  # Taxicab p90 selects 50 examples; only the 40 planted ones have d_T > 0 (fake_run).
  assert {it["position"] for it in key["items"] if it["group"] == "cie"} == pie_positions
  assert {it["group"] for it in key["items"]} == {"cie", "non_cie"}
  assert key["study"]["percentile"] == 90.0
