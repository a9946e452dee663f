"""Swaps: a set of entries (report tables / page / report.json, a bundle) replaced
whole or not at all — rollback at every rename, on a URL file system too, after a kill."""

import errno
import os
import re
import shutil
import subprocess
import sys
import uuid

import pytest

from tests import files
from tf_forget.artifacts import errors
from tf_forget.artifacts import fileio
from tf_forget.artifacts import filesystem
from tf_forget.artifacts import swap

# --- swaps: a set of entries replaced whole, or not at all -----------------------------------

NAMES = ("tables", "report.html", "report.json")


def _make_report(root, version):
  """A report-like set of entries whose every byte says `version`."""
  os.makedirs(os.path.join(root, "tables"), exist_ok=True)
  for rel in ("tables/a.csv", f"tables/{version}_only.csv", "report.html", "report.json"):
    with open(os.path.join(root, rel), "w") as f:
      f.write(f"{version} {rel}\n")


def _files_of_version(version):
  """What `_files` returns for `_make_report(root, version)`."""
  return {
    "tables/a.csv": f"{version} tables/a.csv\n".encode(),
    f"tables/{version}_only.csv": f"{version} tables/{version}_only.csv\n".encode(),
    "report.html": f"{version} report.html\n".encode(),
    "report.json": f"{version} report.json\n".encode(),
  }


@pytest.mark.parametrize("fail_at", range(6))  # 3 entries: 3 renames aside, 3 in
def test_swap_in_rolls_back_whole_when_a_rename_fails(tmp_path, monkeypatch, fail_at):
  out = str(tmp_path / "out")
  _make_report(out, "old")
  before = files.snapshot(out)
  real, calls = fileio._rename, []

  def flaky(src, dst):  # the rename number `fail_at` fails; the roll-back's succeed
    calls.append(dst)
    if len(calls) == fail_at + 1:
      raise OSError(errno.EIO, "Input/output error")
    real(src, dst)

  with pytest.raises(errors.WriteError, match="Input/output error") as e:
    with swap.staging(out, ".r") as tmp:
      _make_report(tmp, "new")
      monkeypatch.setattr(fileio, "_rename", flaky)
      swap.swap_in(tmp, NAMES)
  assert "\n" not in str(e.value) and len(calls) > fail_at
  assert files.snapshot(out) == before
  assert sorted(os.listdir(out)) == sorted(NAMES)  # no staging or aside directory left


def _make_bundle(root, version):
  fileio.write_bytes(filesystem.join(root, "deploy", "v", "0.tflite"), f"{version} v".encode())
  fileio.write_bytes(filesystem.join(root, "deploy", f"{version}_only.bin"), version.encode())
  fileio.write_json(filesystem.join(root, "deploy", "manifest.json"), {"version": version})


def _url_files(root):
  return {
    filesystem.join(d, n)[len(root) :]: fileio.read_bytes(filesystem.join(d, n))
    for d, _, names in filesystem.walk(root)
    for n in names
  }


# Moving the old tree aside takes 3 renames (the manifest first), moving the new one in 3 more.
@pytest.mark.parametrize("fail_at", range(6))
def test_swap_in_on_a_url_file_system_rolls_back_exactly(monkeypatch, fail_at):
  """`ram://` (no directory rename): trees move file by file and still roll back whole."""
  pytest.importorskip("tensorflow")
  root = f"ram://swap-{uuid.uuid4().hex[:8]}"
  _make_bundle(root, "old")
  before = _url_files(root)
  real, moved = fileio._rename, []

  def flaky(src, dst):
    moved.append(dst)
    if len(moved) == fail_at + 1:
      raise OSError(errno.EIO, "Input/output error")
    real(src, dst)

  with pytest.raises(errors.WriteError, match="Input/output error"):
    with swap.staging(root, "deploy") as tmp:
      _make_bundle(tmp, "new")
      monkeypatch.setattr(fileio, "_rename", flaky)
      swap.swap_in(tmp, ("deploy",), markers=("manifest.json",))
  assert moved[0].endswith("/deploy/manifest.json")  # the old manifest leaves first
  assert _url_files(root) == before and filesystem.listdir(root) == ["deploy"]


def test_swap_in_replaces_whole_and_refuses_a_directory_for_a_file(tmp_path):
  out = str(tmp_path / "out")
  _make_report(out, "old")
  with swap.staging(out, ".r") as tmp:
    _make_report(tmp, "new")
    assert swap.swap_in(tmp, NAMES) == []
  assert files.snapshot(out) == _files_of_version("new")  # old_only.csv is gone with the old tables
  os.remove(os.path.join(out, "report.html"))
  os.mkdir(os.path.join(out, "report.html"))
  before = files.snapshot(out)
  with pytest.raises(errors.WriteError, match=r"report.html: Is a directory$"):
    with swap.staging(out, ".r") as tmp:
      _make_report(tmp, "newer")
      swap.swap_in(tmp, NAMES)
  assert files.snapshot(out) == before and sorted(os.listdir(out)) == sorted(NAMES)


def test_a_recorded_swap_names_the_files_it_did_not_write(tmp_path):
  """A user's file under a swapped entry is named before a re-run would delete it."""
  out = str(tmp_path / "out")
  os.makedirs(out)
  assert swap.foreign_files(out, ".r", NAMES) == []  # nothing recorded: nothing to name
  with swap.staging(out, ".r") as tmp:
    _make_report(tmp, "new")
    assert swap.swap_in(tmp, NAMES, record=True) == []
  assert swap.foreign_files(out, ".r", NAMES) == []
  os.makedirs(os.path.join(out, "tables", "mine"))
  for rel in ("tables/notes.txt", "tables/mine/a.csv", "elsewhere.txt"):
    with open(os.path.join(out, rel), "w") as f:
      f.write("the user's\n")
  # Only what lies under the swapped entries; a file beside them is never touched.
  assert swap.foreign_files(out, ".r", NAMES) == ["tables/mine/a.csv", "tables/notes.txt"]
  # An unrecorded swap (the default) leaves no listing beside the entries.
  other = str(tmp_path / "other")
  with swap.staging(other, ".r") as tmp:
    _make_report(tmp, "new")
    swap.swap_in(tmp, NAMES)
  assert sorted(os.listdir(other)) == sorted(NAMES)


def test_without_a_listing_every_file_under_the_entries_is_named(tmp_path):
  """A folder no recorded swap put in place is not known to be tf_forget's: nothing of it is
  taken for its own (a user's `deploy/`, or a run whose listing was deleted)."""
  out = str(tmp_path / "out")
  _make_report(out, "mine")
  assert swap.foreign_files(out, ".r", NAMES) == [
    "tables/a.csv",
    "tables/mine_only.csv",
    "report.html",
    "report.json",
  ]


def test_the_listing_names_old_and_new_entries_until_the_swap_is_done(tmp_path, monkeypatch):
  """Killed between the last rename and the final listing, the run still knows the entries in
  place as its own; a swap that fails puts the listing back as it was."""
  out = str(tmp_path / "out")
  with swap.staging(out, ".r") as tmp:
    _make_report(tmp, "old")
    swap.swap_in(tmp, NAMES, record=True)
  listing = swap.listing(out, ".r")
  before = files.snapshot(out)
  real, seen = fileio._rename, []

  def flaky(src, dst):  # records the listing at each rename of an entry; the 4th one fails
    if not os.path.basename(src).startswith(os.path.basename(dst) + ".tmp-"):
      seen.append(fileio.read_json(listing)["files"])
      if len(seen) == 4:
        raise OSError(errno.EIO, "Input/output error")
    real(src, dst)

  monkeypatch.setattr(fileio, "_rename", flaky)
  with pytest.raises(errors.WriteError, match="Input/output error"):
    with swap.staging(out, ".r") as tmp:
      _make_report(tmp, "new")
      swap.swap_in(tmp, NAMES, record=True)
  assert all("tables/old_only.csv" in f and "tables/new_only.csv" in f for f in seen[:4])
  assert files.snapshot(out) == before  # the listing too, byte for byte
  monkeypatch.setattr(fileio, "_rename", real)
  real_write, writes = fileio.write_json, []

  def final_listing_fails(path, obj, **kwargs):  # as if killed before the final listing
    writes.append(path)
    if len(writes) == 2:
      raise errors.WriteError(f"cannot write {path}: killed")
    real_write(path, obj, **kwargs)

  monkeypatch.setattr(fileio, "write_json", final_listing_fails)
  with swap.staging(out, ".r") as tmp:
    _make_report(tmp, "new")
    notes = swap.swap_in(tmp, NAMES, record=True)
  assert writes == [listing, listing]
  assert notes == [f"could not record what .r holds: cannot write {listing}: killed"]
  assert files.snapshot(out, NAMES) == _files_of_version("new")
  assert swap.foreign_files(out, ".r", NAMES) == []  # the new entries: still tf_forget's


KILLED_SWAP = """
import os, sys
from tf_forget.artifacts import fileio
from tf_forget.artifacts import swap
staging, kill_at = sys.argv[1], int(sys.argv[2])
real, calls = fileio._rename, []
def dying(src, dst):
  if len(calls) == kill_at:
    os._exit(9)
  calls.append(dst)
  real(src, dst)
fileio._rename = dying
swap._remove_all = lambda paths: os._exit(9)  # killed after the last rename
swap.swap_in(staging, ("tables", "report.html", "report.json"))
"""


@pytest.mark.parametrize("kill_at", range(7))
def test_clean_staging_finishes_or_undoes_a_killed_swap(tmp_path, kill_at):
  out = str(tmp_path / "out")
  _make_report(out, "old")
  staging = os.path.join(out, ".r.tmp-1-dead")
  _make_report(staging, "new")
  _make_report(os.path.join(out, ".r.tmp-2-build"), "partial")  # a killed build, no swap
  root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
  done = subprocess.run(
    [sys.executable, "-c", KILLED_SWAP, staging, str(kill_at)],
    env=dict(os.environ, PYTHONPATH=root),
    capture_output=True,
    text=True,
  )
  assert done.returncode == 9, done.stderr
  assert swap.clean_staging(out, ".r", NAMES) == []
  # Killed before the last new entry moved in: the old report whole; after: the new one.
  assert files.snapshot(out) == _files_of_version("old" if kill_at < 6 else "new")
  assert sorted(os.listdir(out)) == sorted(NAMES)


def test_replace_dir_keeps_the_old_tree_when_the_move_in_fails(tmp_path, monkeypatch):
  dst, src = str(tmp_path / "deploy"), str(tmp_path / "deploy.tmp")
  _make_report(dst, "old")
  _make_report(src, "new")
  failed = files.fail_once_renaming_to(monkeypatch, dst)  # the new tree moving in
  with pytest.raises(errors.WriteError, match="Input/output error"):
    swap.replace_dir(src, dst, last=("report.json",))
  assert failed and files.snapshot(dst) == _files_of_version("old")
  assert os.listdir(tmp_path) == ["deploy"]


def test_replace_dir_notes_an_old_tree_it_cannot_remove(tmp_path, monkeypatch):
  dst, src = str(tmp_path / "deploy"), str(tmp_path / "deploy.tmp")
  _make_report(dst, "old")
  _make_report(src, "new")
  real = shutil.rmtree

  def immutable(path, *args, **kwargs):
    name = os.path.basename(os.fspath(path))
    if name == "deploy" or name.startswith("deploy.old-"):  # an immutable file inside
      raise PermissionError(errno.EPERM, "Operation not permitted", os.fspath(path))
    return real(path, *args, **kwargs)

  monkeypatch.setattr(shutil, "rmtree", immutable)
  notes = swap.replace_dir(src, dst, last=("report.json",))
  assert len(notes) == 1 and re.fullmatch(
    r"could not remove .*/deploy\.old-[^/]+: Operation not permitted", notes[0]
  ), notes
  assert files.snapshot(dst) == _files_of_version("new")  # the new tree stands
  monkeypatch.setattr(shutil, "rmtree", real)
  _make_report(src, "newer")
  assert swap.replace_dir(src, dst) == []  # the leftover is removed by the next swap
  assert os.listdir(tmp_path) == ["deploy"] and files.snapshot(dst) == _files_of_version("newer")
