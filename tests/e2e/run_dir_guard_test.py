"""Nothing of the user's lost, and no run left stuck, through the audit command (in-process
`main`): a run directory is known by a record tf_forget wrote, never by names; a folder the
audit replaces is replaced only when its listing names every file in it; the user's output
paths (`--summary`, `$GITHUB_STEP_SUMMARY`, `--annotation_export`) are written as what they are
— a symlink's target, a device or a FIFO in place, never replaced —, checked before the audit
starts, and kept out of the folders a re-run replaces, so that an identical re-run works.

One finished tiny audit (dense and dynamic-range int8: the human study has a variant to sample)
per module; each test works on a copy. Device nodes are made in the test's directory with
`os.mknod` (as root only), FIFOs with `os.mkfifo`, under an alarm so that no test can hang.
"""

import json
import os
import shutil
import stat

import pytest

from tests import audit_main
from tests import binary_main
from tests import files
from tf_forget.artifacts import audit_json
from tf_forget.artifacts import member_metadata
from tf_forget.artifacts import run_json
from tf_forget.artifacts import run_lock

TINY = dict(
  preset="tiny",
  members=2,
  variants=["dense"],
  quantizations=["dynamic_int8"],
  corruptions=["none"],
  noise_levels=["none"],
  deploy_encoding="plain",
  executor="inline",
)
HEADING = "### tf_forget audit"


def _audit(out, **flags):
  """The audit command's exit: 0, or its one-line error (a string)."""
  return binary_main.run_main(audit_main.main, "audit", out=str(out), **TINY, **flags)


def _state(root):
  """Every file's bytes under `root`, and every entry (empty folders, links, nodes) by kind."""
  kinds = {}
  for d, dirs, names in os.walk(root):
    for name in dirs + names:
      path = os.path.join(d, name)
      kinds[os.path.relpath(path, root)] = stat.S_IFMT(os.lstat(path).st_mode)
  return files.snapshot(str(root)), kinds


def _refused(code, *parts):
  assert isinstance(code, str) and code.startswith("audit: error: ") and "\n" not in code, code
  for part in parts:
    assert part in code, code


@pytest.fixture(autouse=True)
def no_step_summary(monkeypatch):
  monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)  # a CI runner's own


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
  out = tmp_path_factory.mktemp("finished") / "run"
  assert _audit(out) == 0
  return out


@pytest.fixture
def run(finished, tmp_path):
  """A copy of the finished run."""
  copy = tmp_path / "run"
  shutil.copytree(finished, copy, symlinks=True)
  return copy


def test_the_records_are_those_tf_forget_writes(finished):
  # Each record of run_lock is a file the audit wrote, read by its artifact's own reader.
  for record, doc in (
    (run_lock.AUDIT_RECORD, audit_json.read(audit_json.path(finished))),
    (run_lock.RUN_RECORD, run_json.read(run_json.path(finished))),
    (run_lock.MEMBER_RECORD, member_metadata.read(member_metadata.path(finished, "dense", 0))),
  ):
    schema, keys = record
    assert doc["schema"] == schema and all(key in doc for key in keys)


@pytest.mark.parametrize(
  "marker", ["the user's run.json", "an empty members/", "tf_forget's run.json copied in"]
)
def test_a_folder_with_a_marker_name_is_not_taken_for_a_run(finished, tmp_path, marker):
  """Row 1: `--out` at a folder of the user's holding a `run.json` or an empty `members/` and
  their `deploy/*.tflite`, `tables/*.csv`: refused in one line, nothing written or deleted."""
  out = tmp_path / "mine"
  (out / "deploy").mkdir(parents=True)
  (out / "tables").mkdir()
  (out / "deploy" / "model.tflite").write_bytes(b"the user's model")
  (out / "tables" / "mine.csv").write_bytes(b"a,b\n1,2\n")
  if marker == "the user's run.json":
    (out / "run.json").write_text("my notes\n")
  elif marker == "an empty members/":
    (out / "members").mkdir()
  else:
    shutil.copy(finished / "run.json", out / "run.json")
  before = _state(out)
  code = _audit(out)
  if marker == "tf_forget's run.json copied in":  # a record, but no listing of the folders
    _refused(
      code,
      "holds files tf_forget did not write in the folders it replaces",
      "deploy/model.tflite",
      "tables/mine.csv",
      "no .tf_forget.report.files.json or .tf_forget.deploy.files.json records them",
    )
  else:
    _refused(
      code,
      f"{out} is not empty and is not a tf_forget run directory (it holds deploy, "
      f"{'members' if 'members' in marker else 'run.json'}, tables;",
    )
  assert _state(out) == before


def test_a_run_without_its_listing_keeps_the_users_file(run, tmp_path):
  """Row 2: the bundle's listing is gone and `deploy/` holds a file of the user's: refused in
  one line naming it, nothing deleted; once `deploy/` is moved out, the re-run works."""
  os.remove(run / ".tf_forget.deploy.files.json")
  (run / "deploy" / "notes.txt").write_bytes(b"my notes\n")
  before = _state(run)
  _refused(
    _audit(run),
    "deploy/notes.txt",
    "deploy/manifest.json",
    "no .tf_forget.deploy.files.json records them as tf_forget's",
  )
  assert _state(run) == before
  shutil.move(str(run / "deploy"), str(tmp_path / "moved"))
  assert _audit(run) == 0
  assert (tmp_path / "moved" / "notes.txt").read_bytes() == b"my notes\n"
  assert json.loads((run / ".tf_forget.deploy.files.json").read_text())["files"]


def test_a_summary_symlink_or_fifo_is_written_never_replaced(run, tmp_path):
  """Row 3: a symlink stays a link and its target holds the summary; a FIFO stays a FIFO and
  its reader gets the summary."""
  (tmp_path / "target.md").write_text("old\n")
  os.symlink("target.md", tmp_path / "link.md")
  assert _audit(run, summary=str(tmp_path / "link.md")) == 0
  assert os.path.islink(tmp_path / "link.md")
  assert (tmp_path / "target.md").read_text().startswith(HEADING)
  fifo = tmp_path / "fifo"
  os.mkfifo(fifo)
  reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
  try:
    with files.time_bound(600):
      assert _audit(run, summary=str(fifo)) == 0
    assert os.read(reader, 1 << 16).decode().startswith(HEADING)
  finally:
    os.close(reader)
  assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


@pytest.mark.skipif(os.geteuid() != 0, reason="os.mknod of a device needs root")
def test_a_summary_device_is_written_in_place_never_replaced(run, tmp_path):
  """Row 3 as root: a character device is written in place; one that refuses the bytes (what
  /dev/full is) is one line, and stays a device."""
  null, full = tmp_path / "null", tmp_path / "full"
  os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
  os.mknod(full, 0o666 | stat.S_IFCHR, os.makedev(1, 7))
  assert _audit(run, summary=str(null)) == 0
  _refused(
    _audit(run, summary=str(full)), f"--summary: cannot write {full}: No space left on device"
  )
  assert all(stat.S_ISCHR(os.lstat(p).st_mode) for p in (null, full))
  assert sorted(os.listdir(tmp_path)) == ["full", "null", "run"]


@pytest.mark.parametrize(
  "where",
  [
    "--summary: a FIFO nobody reads",
    "--summary: a folder that takes no file",
    "$GITHUB_STEP_SUMMARY: a folder that takes no file",
    "--annotation_export: below a file",
  ],
)
def test_an_output_that_cannot_be_written_stops_the_audit_before_it_starts(
  tmp_path, monkeypatch, where
):
  """Row 3: every output path is checked before anything runs (nothing of the run written)."""
  out, flags = tmp_path / "new", {}
  if "FIFO" in where:
    os.mkfifo(tmp_path / "fifo")
    flags["summary"], message = str(tmp_path / "fifo"), "no process reads the FIFO"
  elif "annotation" in where:
    (tmp_path / "file").write_text("x")
    flags["annotation_export"] = str(tmp_path / "file" / "study")
    message = "--annotation_export: cannot write to"
  elif not os.path.isdir("/proc/self"):
    pytest.skip("no /proc to write into")
  elif where.startswith("$"):
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", "/proc/tf_forget_summary.md")
    message = "$GITHUB_STEP_SUMMARY: cannot write to /proc"
  else:
    flags["summary"], message = "/proc/tf_forget_summary.md", "--summary: cannot write to /proc"
  with files.time_bound(300):
    code = _audit(out, max_kl=0.0, **flags)  # a gate that would fail: exit 3, had it run
  _refused(code, message)
  assert not out.exists()


def test_an_annotation_export_into_a_replaced_folder_is_refused_up_front(run, tmp_path):
  """Row 4: `--annotation_export=<out>/deploy` (or `tables/…`) would be deleted by the next
  swap, unblinding key included: refused before anything is written."""
  fresh = tmp_path / "fresh"
  _refused(
    _audit(fresh, annotation_export=str(fresh / "deploy")),
    f"--annotation_export: {fresh / 'deploy'} is {fresh / 'deploy'}, which tf_forget "
    "writes on every run",
  )
  assert not fresh.exists()
  before = _state(run)
  _refused(
    _audit(run, annotation_export=str(run / "tables" / "study")),
    f"lies in {run / 'tables'}, which tf_forget writes on every run",
  )
  assert _state(run) == before


def test_outputs_inside_the_run_directory_survive_an_identical_rerun(run):
  """Row 5: a summary and an export beside tf_forget's folders: the identical re-run works and
  keeps the export; inside a replaced folder: refused on the first run, not the second."""
  args = dict(summary=str(run / "summary.md"), annotation_export=str(run / "study"))
  assert _audit(run, **args) == 0
  key = (run / "study" / "key.json").read_bytes()
  (run / "summary.md").write_text("stale\n")
  assert _audit(run, **args) == 0
  assert (run / "summary.md").read_text().startswith(HEADING)
  assert (run / "study" / "key.json").read_bytes() == key
  assert (run / "study" / "sheet" / "annotations.csv").exists()
  before = _state(run)
  _refused(
    _audit(run, summary=str(run / "deploy" / "summary.md")),
    f"--summary: {run / 'deploy' / 'summary.md'} lies in {run / 'deploy'}",
  )
  assert _state(run) == before
