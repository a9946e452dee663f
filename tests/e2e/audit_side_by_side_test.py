"""The labelled test set and the deployment's images side by side (`--deployment_images`).

The user of `audit_unlabelled_test` (a tiny digits classifier, its int8 file and a planted float
file that swaps classes 3 and 8 on four images the model is sure of) has a labelled test set
without those four images (`clean/<class>/`) and the deployment's 500 images (`images/`). The
side-by-side audit's two views equal the two audits run apart (the labelled one on `clean/`,
the one without labels on `images/`, the same files), and the planted file, fine on the test
set, is the one whose views disagree. Audits run through the command's `main` in this process.
"""

import json
import shutil

import numpy as np
import pytest

from tests.e2e import audit_binary
from tests.e2e.audit_unlabelled_test import _run
from tests.e2e.audit_unlabelled_test import unlabelled  # noqa: F401 (a fixture)
from tests.e2e.audit_unlabelled_test import user  # noqa: F401 (a fixture)

FILES = [
  "--candidate=int8=int8.tflite",
  "--candidate=planted=planted.tflite",
  "--compress=full_int8",
  "--calibration=folder:images",  # as the audit without labels calibrates
]


@pytest.fixture(scope="module")
def clean(user):  # noqa: F811
  """clean/<class>/<i>.png: the labelled test set without the planted file's four images."""
  root, _, _, chosen, _ = user
  shutil.copytree(root / "labelled", root / "clean")
  for i in chosen:
    for path in (root / "clean").glob(f"*/{i:04d}.png"):
      path.unlink()
  return root


@pytest.fixture(scope="module")
def side(clean):
  result = _run(
    clean,
    "--dataset=folder:clean",
    "--deployment_images=folder:images",
    *FILES,
    "--out=side",
    f"--summary={clean / 'side_summary.md'}",
  )
  return result, json.loads((clean / "side" / "report.json").read_text())


def test_both_views_equal_the_two_audits_run_apart(clean, side, unlabelled):  # noqa: F811
  result, report = side
  assert result.returncode == 0, result.stdout[-3000:] + result.stderr
  alone = _run(clean, "--dataset=folder:clean", *FILES, "--out=labelled_only")
  assert alone.returncode == 0, alone.stderr
  labelled = json.loads((clean / "labelled_only" / "report.json").read_text())
  verdict = {r["variant"]: r for r in labelled["tables"]["verdict"]}
  without = {r["variant"]: r for r in unlabelled[1]["tables"]["unlabelled_files"]}
  rows = {r["variant"]: r for r in report["tables"]["side_by_side"]}
  assert set(rows) == {"user_int8", "user_planted", "full_int8"}
  for variant, row in rows.items():
    for key in ("top1_change", "top1_low", "top1_high", "significant_classes"):
      assert row[key] == pytest.approx(verdict[variant][key], nan_ok=True), (variant, key)
    assert row["labelled_verdict"] == verdict[variant]["verdict"]
    for key in ("flips", "flip_rate", "flip_low", "flip_high", "worst_class_flip_rate"):
      assert row[key] == pytest.approx(without[variant][key]), (variant, key)
    assert row["confident_flips"] == without[variant]["confident_flips"]
    assert row["deployment_n"] == 500
  # The labelled report is the labelled audit's: the same verdict and the same tables.
  assert report["recommendation"]["variant"] == labelled["recommendation"]["variant"]
  assert set(labelled["tables"]) < set(report["tables"])
  mine = {r["variant"]: r for r in report["tables"]["deployment_images_files"]}
  assert mine["user_planted"]["flips"] == without["user_planted"]["flips"] == 4
  assert report["settings"]["deployment_images"]["images"] == 500


def test_a_file_fine_on_the_test_set_that_moves_deployment_decisions_is_named(side):
  result, report = side
  rows = {r["variant"]: r for r in report["tables"]["side_by_side"]}
  planted = rows["user_planted"]
  assert planted["labelled_verdict"] in ("pass", "recommended", "dominated")
  assert planted["top1_change"] == 0 and planted["decides_like"] is False
  said = planted["disagreement"]
  assert said.startswith(
    "user_planted passes on the labelled test set but moves 0.80% of decisions on your "
    "deployment images (4 of 500"
  )
  assert "confident flips 0.80%" in said
  assert f"disagree: {said}" in result.stdout
  assert "side by side: the labelled test set and your deployment images" in result.stdout
  assert not rows["user_int8"]["disagreement"] or rows["user_int8"]["decides_like"] is False


def test_the_markdown_summary_has_both_views(clean, side):
  # --summary: the same block as the terminal, as a Markdown table (one row per file), and the
  # sentence where the views disagree.
  _, report = side
  text = (clean / "side_summary.md").read_text()
  assert "**Side by side: the labelled test set and your deployment images" in text
  rows = [line for line in text.splitlines() if line.startswith("| user_planted |")]
  assert len(rows) == 1
  planted = {r["variant"]: r for r in report["tables"]["side_by_side"]}["user_planted"]
  cells = [c.strip() for c in rows[0].strip("|").split("|")]
  assert cells[4] == f"{100 * planted['flip_rate']:.2f}%" == "0.80%"
  assert cells[-1] == "no" and cells[3] == planted["labelled_verdict"]
  assert f"- ⚠ {planted['disagreement']}" in text


def test_the_page_shows_both_views_and_the_flipped_deployment_images(clean, side):
  page = (clean / "side" / "report.html").read_text()
  assert "Side by side: your labelled test set and your deployment images" in page
  assert "Where they disagree" in page and "user_planted passes on the labelled" in page
  assert "flipped deployment images" in page and "flipped image" in page
  assert (clean / "side" / "data" / "deployment_images.json").exists()
  flips = np.asarray(
    [
      r["position"]
      for r in side[1]["tables"]["deployment_images_flips"]
      if r["variant"] == "user_planted"
    ]
  )
  assert flips.size == 4


@pytest.mark.parametrize(
  "args, message",
  [
    (["--dataset=folder:images", "--deployment_images=folder:images"], "has no labels"),
    (["--dataset=folder:clean", "--deployment_images=folder:empty"], "holds no image"),
    (["--dataset=folder:clean", "--deployment_images=digits"], "give your own images"),
    (["--dataset=folder:clean", "--deployment_images=folder:images", "--out=images/x"], "inside"),
  ],
)
def test_bad_input_is_one_line_before_anything_is_written(clean, args, message):
  (clean / "empty").mkdir(exist_ok=True)
  out = [a for a in args if a.startswith("--out=")] or ["--out=bad_side"]
  args = [a for a in args if not a.startswith("--out=")]
  result = _run(clean, *args, "--candidate=int8=int8.tflite", *out)
  assert message in audit_binary.one_line(result)
  assert not (clean / out[0][len("--out=") :]).exists()
