"""Nothing stale is reused and nothing stale stops a run: the user's data edited in place, a
predictions file replaced by another valid one, the corruption cache after a data change or a
damaged shard (the audit command's `main` in this process, `tests/audit_main.py`).

The user's files are `tests/e2e/user_files.py`'s (a tiny tf_keras model, its int8 file and
120 test images); each test audits a copy of them and changes it as a careless user would.
"""

import collections
import hashlib
import json
import os
import shutil

import numpy as np
import pytest

from tests import audit_main
from tests import binary_main
from tests.e2e import user_files
from tf_forget.artifacts import predictions


@pytest.fixture(scope="module")
def user(tmp_path_factory):
  return user_files.make(tmp_path_factory.mktemp("user"), num_images=120)


def _work(user, tmp_path):
  work = tmp_path / "work"
  work.mkdir()
  for name in ("model.keras", "int8.tflite"):
    shutil.copy(user / name, work / name)
  shutil.copytree(user / "images", work / "images")
  return work


def _audit(work, out, capsys, *extra):
  """Runs the audit of `work`'s files into `out`; returns what it printed (exit 0 asserted)."""
  capsys.readouterr()
  status = binary_main.run_argv(audit_main.main, "audit", user_files.args(out, *extra), work)
  printed = capsys.readouterr()
  assert status == 0, (status, printed.out[-3000:], printed.err[-3000:])
  return printed.out


def _top1(run_dir, variant="user_int8"):
  return json.loads((run_dir / "report.json").read_text())["variants"][variant]["top1"]


def _edit_keeping_size_and_mtime(images, count):
  """Overwrites `count` images with the bytes of an image of another class of the same size,
  then sets their access and modification times back: size and mtime say "unchanged"."""
  by_size = collections.defaultdict(list)
  for path in sorted(images.rglob("*.png")):
    by_size[path.stat().st_size].append(path)
  edited = 0
  for paths in by_size.values():
    for a in paths:
      other = next(
        (b for b in paths if b.parent != a.parent and b.read_bytes() != a.read_bytes()), None
      )
      if other is None or edited == count:
        continue
      st = a.stat()
      a.write_bytes(other.read_bytes())
      os.utime(a, ns=(st.st_atime_ns, st.st_mtime_ns))
      assert (a.stat().st_size, a.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
      edited += 1
  assert edited == count
  return edited


def test_an_edit_in_place_keeping_size_and_mtime_is_read_again(user, tmp_path, capsys):
  work = _work(user, tmp_path)
  _audit(work, "run", capsys)
  before = _top1(work / "run")
  _edit_keeping_size_and_mtime(work / "images", 10)
  rerun = _audit(work, "run", capsys)
  assert "120 files, 10 read (110 unchanged since the last run)" in rerun
  assert "changed since the last run (10 edited)" in rerun
  assert "redo user_int8/0 test: its input split changed since it was evaluated" in rerun
  _audit(work, "fresh", capsys)
  assert _top1(work / "run") == _top1(work / "fresh") != before
  for variant in ("dense", "user_int8"):
    a = predictions.read(str(work / "run" / "predictions" / variant / "0" / "test.npz"))
    b = predictions.read(str(work / "fresh" / "predictions" / variant / "0" / "test.npz"))
    assert np.array_equal(a["topk"], b["topk"])


def test_a_predictions_file_replaced_by_another_valid_one_is_redone(user, tmp_path, capsys):
  work = _work(user, tmp_path)
  _audit(work, "run", capsys)
  before = _top1(work / "run")
  path = work / "run" / "predictions" / "user_int8" / "0" / "test.npz"
  original = predictions.read(str(path))
  assert (path.parent / "test.npz.sha256").exists()
  # Another valid predictions file, its metadata (and so its recorded inputs) the original's,
  # its scores every class shifted by one, copied over the original.
  meta = {
    k: v
    for k, v in original["metadata"].items()
    if k not in ("schema", "num_examples", "num_classes", "topk", "has_logits")
  }
  other = tmp_path / "other.npz"
  predictions.write(
    str(other), original["ids"], original["labels"], np.roll(original["logits"], 1, axis=1), meta
  )
  shutil.copyfile(other, path)
  assert predictions.read(str(path))["metadata"]["inputs"] == original["metadata"]["inputs"]
  rerun = _audit(work, "run", capsys)
  assert (
    "redo user_int8/0 test: its bytes are not those written (sha256 differs from the one recorded)"
  ) in rerun
  assert "redo dense/0 test" not in rerun
  assert _top1(work / "run") == before
  assert np.array_equal(predictions.read(str(path))["topk"], original["topk"])
  again = _audit(work, "run", capsys)
  assert "redo" not in again


def test_the_corruption_cache_is_made_again_after_a_data_change_or_a_damaged_shard(
  user, tmp_path, capsys
):
  work = _work(user, tmp_path)
  corruptions = "--corruptions=contrast"
  _audit(work, "run", capsys, corruptions)
  shutil.copy(sorted((work / "images" / "1").iterdir())[0], work / "images" / "2" / "added.png")
  changed = _audit(work, "run", capsys, corruptions)
  assert "redo corruptions contrast@3: its input split changed since it was generated" in changed
  assert "redo user_int8/0 contrast@3: its input split changed since it was evaluated" in changed
  again = _audit(work, "run", capsys, corruptions)  # not stuck: the same command runs again
  assert "redo" not in again
  entry = work / "run" / "corruptions" / "folder" / "test" / "contrast@3" / "table=32,seed=0"
  shard = entry / "part-00000.npz"
  shard.write_bytes(os.urandom(shard.stat().st_size))
  damaged = _audit(work, "run", capsys, corruptions)
  assert (
    "redo corruptions contrast@3: its shard part-00000.npz is not the one written "
    "(sha256 differs from meta.json's)"
  ) in damaged
  assert "--overwrite" not in damaged and "generate_corruptions" not in damaged
  meta = json.loads((entry / "meta.json").read_text())
  assert meta["num_examples"] == 121
  assert meta["shard_sha256"][0] == hashlib.sha256(shard.read_bytes()).hexdigest()
