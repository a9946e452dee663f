"""What makes a directory tf_forget's (`run_lock.check_ours`): a record tf_forget wrote there,
never a file's or folder's name."""

import json
import os

import pytest

from tf_forget.artifacts import run_lock


def _json(path, doc):
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, "w", encoding="utf-8") as f:
    f.write(doc if isinstance(doc, str) else json.dumps(doc))


RECORDS = {
  "audit.json": ("audit.json", {"schema": "tf_forget.audit/1", "config": {"dataset": "x"}}),
  "run.json": (
    "run.json",
    {"schema": "tf_forget.run/1", "dataset": "digits", "variants": ["dense"], "members": 2},
  ),
  "a member": (
    "members/dense/0/metadata.json",
    {"schema": "tf_forget.member/1", "variant": "dense", "k": 0},
  ),
  "a lock's holder": (
    ".tf_forget.lock",
    {"pid": 1, "host": "h", "command": "audit", "start": "2024-01-01T00:00:00"},
  ),
}

NAMES_ONLY = {
  "the user's run.json": ("run.json", "my notes\n"),
  "a run.json of another tool": ("run.json", {"dataset": "digits", "members": 2}),
  "audit.json of another schema": ("audit.json", {"schema": "other/1", "config": {}}),
  "an audit.json without identity": ("audit.json", {"schema": "tf_forget.audit/1"}),
  "an empty members/": ("members/.keep", ""),
  "a member folder without metadata": ("members/dense/0/model.keras", "x"),
  "an empty lock file": (".tf_forget.lock", ""),
}


@pytest.mark.parametrize("name", sorted(RECORDS))
def test_a_record_tf_forget_wrote_makes_the_directory_its_own(tmp_path, name):
  rel, doc = RECORDS[name]
  _json(str(tmp_path / rel), doc)
  (tmp_path / "deploy").mkdir()
  assert run_lock.is_run_dir(str(tmp_path))
  run_lock.check_ours(str(tmp_path))


@pytest.mark.parametrize("name", sorted(NAMES_ONLY))
def test_a_name_alone_is_not_a_run_directory(tmp_path, name):
  rel, doc = NAMES_ONLY[name]
  _json(str(tmp_path / rel), doc)
  (tmp_path / "deploy").mkdir()
  (tmp_path / "deploy" / "model.tflite").write_bytes(b"mine")
  assert not run_lock.is_run_dir(str(tmp_path))
  with pytest.raises(run_lock.LockError) as e:
    run_lock.check_ours(str(tmp_path))
  top = sorted(os.listdir(tmp_path))
  assert str(e.value) == (
    f"{tmp_path} is not empty and is not a tf_forget run directory (it "
    f"holds {', '.join(top)}; no audit.json or run.json that tf_forget "
    "wrote): choose a new or empty directory"
  )


def test_a_new_or_empty_directory_is_fine(tmp_path):
  run_lock.check_ours(str(tmp_path / "new"))
  run_lock.check_ours(str(tmp_path))
