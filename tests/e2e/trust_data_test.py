"""The user's data identified by content, validated before anything is written, and
the user's own files in the run directory kept — through the audit command (its `main` in this
process; one refusal through the binary, as a user runs it).

The user's files (`tests/e2e/user_files.py`): a tiny tf_keras model, its plain-converter int8
file and 200 digits test images as a PNG folder. Each case checks the exit status, the one
stderr line and the run directory's files before and after (`tests/files.snapshot`).
"""

import io
import json
import os
import shutil

import numpy as np
from PIL import Image
import pytest

from tests import files
from tests.e2e import audit_binary
from tests.e2e import user_files
from tf_forget.artifacts import layout


@pytest.fixture(scope="module")
def user(tmp_path_factory):
  return user_files.make(tmp_path_factory.mktemp("user"))


@pytest.fixture(scope="module")
def run(user):
  """A finished audit of the user's files into `run/`."""
  result = audit_binary.in_process(user_files.args("run"), user)
  assert result.returncode == 0, result.stderr[-3000:]
  return user / "run"


def _report(run_dir):
  return json.loads((run_dir / "report.json").read_text())


def test_the_users_files_in_replaced_folders_are_never_deleted(user, run):
  mine = {
    "deploy/notes.txt": b"my notes\n",
    "tables/mine.csv": b"a,b\n",
    "deploy/extra/readme.md": b"kept\n",
  }
  for rel, data in mine.items():
    (run / rel).parent.mkdir(parents=True, exist_ok=True)
    (run / rel).write_bytes(data)
  before = files.snapshot(str(run))
  try:
    result = audit_binary.in_process(user_files.args("run"), user)
    line = audit_binary.one_line(result)
    assert "holds files tf_forget did not write in the folders it replaces" in line
    for rel in mine:
      assert rel in line
    assert files.snapshot(str(run)) == before  # nothing written, nothing deleted
  finally:
    shutil.rmtree(run / "deploy" / "extra")
    (run / "deploy" / "notes.txt").unlink()
    (run / "tables" / "mine.csv").unlink()
  again = audit_binary.in_process(user_files.args("run"), user)
  assert again.returncode == 0, again.stderr[-3000:]


def test_an_unchanged_folder_is_not_read_again(user, run):
  os.remove(layout.finished_file(str(run)))  # the stages' own reuse: no finished-run record
  result = audit_binary.in_process(user_files.args("run"), user)
  assert result.returncode == 0, result.stderr[-3000:]
  assert (
    f"data: test split of folder:{user / 'images'}: 200 files, 0 read (200 unchanged "
    "since the last run)"
  ) in result.stdout
  assert "redo" not in result.stdout


def _edit(images):
  """Moves 10 images of class 3 to class 5, adds 20 (other images' pixels, flipped: new bytes)
  and edits 5 in place (inverted); returns the number of images afterwards."""
  threes = sorted((images / "3").iterdir())[:10]
  for path in threes:
    path.rename(images / "5" / f"moved_{path.name}")
  sources = sorted((images / "1").iterdir())[:10] + sorted((images / "7").iterdir())[:10]
  for i, path in enumerate(sources):
    pixels = np.asarray(Image.open(path))
    Image.fromarray(pixels[:, ::-1]).save(path.parent / f"added_{i}.png")
  for path in sorted((images / "0").iterdir())[:5]:
    pixels = np.asarray(Image.open(path))
    buffer = io.BytesIO()
    Image.fromarray(255 - pixels).save(buffer, format="PNG")
    path.write_bytes(buffer.getvalue())
  return sum(1 for _ in images.rglob("*.png"))


def test_changed_images_redo_what_depends_on_them_as_a_fresh_run(user, tmp_path):
  work = tmp_path / "work"
  work.mkdir()
  for name in ("model.keras", "int8.tflite"):
    shutil.copy(user / name, work / name)
  shutil.copytree(user / "images", work / "images")
  first = audit_binary.in_process(user_files.args("run"), work)
  assert first.returncode == 0, first.stderr[-3000:]
  count = _edit(work / "images")
  assert count == 220
  rerun = audit_binary.in_process(user_files.args("run"), work)
  assert rerun.returncode == 0, rerun.stderr[-3000:]
  assert (
    f"the test split of folder:{work / 'images'} changed since the last run "
    "(10 moved, 20 added, 5 edited)"
  ) in rerun.stdout
  assert "data: test split" in rerun.stdout and "220 files, 35 read" in rerun.stdout
  for what in ("dense/0 test", "user_int8/0 test", "keras:dense/0 test"):
    assert f"redo {what}: its input split changed since it was evaluated" in rerun.stdout
  assert "1 of 1 candidate files already stored" in rerun.stdout  # the model files did not change
  fresh = audit_binary.in_process(user_files.args("fresh"), work)
  assert fresh.returncode == 0, fresh.stderr[-3000:]
  again, new = _report(work / "run"), _report(work / "fresh")
  assert again["tables"]["k1_topline"] == new["tables"]["k1_topline"]
  assert again["tables"]["k1_topline"][0]["n"] == 220
  for variant in ("dense", "user_int8"):
    assert again["variants"][variant]["top1"] == new["variants"][variant]["top1"]
    for run_dir in ("run", "fresh"):
      got = np.load(work / run_dir / "predictions" / variant / "0" / "test.npz")
      assert got["labels"].shape == (220,)
    a = np.load(work / "run" / "predictions" / variant / "0" / "test.npz")
    b = np.load(work / "fresh" / "predictions" / variant / "0" / "test.npz")
    assert np.array_equal(a["labels"], b["labels"]) and np.array_equal(a["topk"], b["topk"])


def _bad_png(path):
  data = path.read_bytes()
  path.write_bytes(data[: len(data) // 2])


# (spoil the folder, the start of the line with {images} for the folder, what it says): a
# truncated PNG is found when the split is hashed, a dangling link already when it is listed.
CASES = {
  "truncated": (
    lambda d: _bad_png(next((d / "4").iterdir())),
    "audit: error: test split of folder:{images}: 4/",
    "truncated or corrupt PNG",
  ),
  "dangling link": (
    lambda d: os.symlink(d / "nowhere.png", d / "4" / "gone.png"),
    "audit: error: image 4/gone.png of folder {images} ",
    "is a dangling link (to ",
  ),
}


# Each kind of bad image is refused in-process by `tests/data/fingerprint_test.py`; through the
# binary, one found by reading the file's bytes and one found by its stat.
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_bad_image_is_one_line_before_anything_is_written(user, tmp_path, case):
  spoil, start, expected = CASES[case]
  images = tmp_path / "images"
  shutil.copytree(user / "images", images)
  spoil(images)
  out = tmp_path / "out"
  args = [
    "--dataset=folder:images",
    f"--reference={user / 'model.keras'}",
    f"--candidate=int8={user / 'int8.tflite'}",
    f"--out={out}",
    *user_files.COMMON,
  ]
  line = audit_binary.one_line(audit_binary.audit(args, tmp_path))  # the process itself
  assert line.startswith(start.format(images=images)) and expected in line, line
  assert not out.exists()


def test_the_pixel_limit_is_a_flag_and_an_existing_run_is_left_as_it_was(user, run):
  before = files.snapshot(str(run))
  result = audit_binary.in_process(user_files.args("run", "--max_image_pixels=50"), user)
  line = audit_binary.one_line(result)
  assert "is 8x8 = 6.4e-05 megapixels, over the limit of 5e-05 (--max_image_pixels)" in line
  assert files.snapshot(str(run)) == before
