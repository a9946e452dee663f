"""Writing at a path the user gave (`tf_forget.artifacts.user_output`): a regular file replaced
atomically, a symlink's target, a character device or a FIFO written in place — never replaced —
and nothing inside tf_forget's own folders of a run directory.

Device nodes are made in the test's directory with `os.mknod` (as root only; never the system's
`/dev`), FIFOs with `os.mkfifo`; every FIFO test runs under an alarm, so that none can hang.
"""

import os
import socket
import stat

import pytest

from tests import files
from tf_forget.artifacts import errors
from tf_forget.artifacts import user_output

ROOT = os.geteuid() == 0


def _write(path, data=b"new\n", append=False, run_dir=None):
  output = user_output.check(str(path), "--summary", run_dir=run_dir, append=append)
  user_output.write(output, data)


def test_a_regular_file_is_replaced_whole_keeping_its_mode(tmp_path):
  path = tmp_path / "s.md"
  path.write_bytes(b"old\n")
  os.chmod(path, 0o600)
  inode = os.stat(path).st_ino
  _write(path)
  assert path.read_bytes() == b"new\n" and stat.S_IMODE(os.stat(path).st_mode) == 0o600
  assert os.stat(path).st_ino != inode  # a new file renamed into place
  assert sorted(os.listdir(tmp_path)) == ["s.md"]  # no temporary or probe file left
  _write(path, b"more\n", append=True)
  assert path.read_bytes() == b"new\nmore\n"


def test_a_symlink_stays_a_link_and_its_target_is_written(tmp_path):
  (tmp_path / "target.md").write_bytes(b"old\n")
  os.symlink("target.md", tmp_path / "link.md")
  _write(tmp_path / "link.md")
  assert os.path.islink(tmp_path / "link.md")
  assert (tmp_path / "target.md").read_bytes() == b"new\n"
  os.symlink("made.md", tmp_path / "dangling.md")  # a link to nothing: its target is made
  _write(tmp_path / "dangling.md")
  assert os.path.islink(tmp_path / "dangling.md")
  assert (tmp_path / "made.md").read_bytes() == b"new\n"


def test_a_fifo_is_written_in_place_or_refused_when_nobody_reads_it(tmp_path):
  fifo = tmp_path / "fifo"
  os.mkfifo(fifo)
  with files.time_bound():
    with pytest.raises(errors.WriteError) as e:
      user_output.check(str(fifo), "--summary")
    assert str(e.value) == (
      f"--summary: no process reads the FIFO {fifo} (the write would "
      "wait for ever): start its reader first"
    )
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
      output = user_output.check(str(fifo), "--summary", append=True)
      user_output.write(output, b"summary\n")
      assert output.fd is None  # closed once written
      assert os.read(reader, 4096) == b"summary\n"
    finally:
      os.close(reader)
  assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


@pytest.mark.skipif(not os.path.isdir("/dev/fd"), reason="no /dev/fd")
def test_a_descriptor_path_is_appended_to_through_the_descriptor(tmp_path):
  """`--summary=/dev/stdout` with the output redirected to a file: appended, not replaced."""
  log = tmp_path / "log.txt"
  log.write_bytes(b"progress\n")
  inode = os.stat(log).st_ino
  fd = os.open(log, os.O_WRONLY)
  try:
    _write(f"/dev/fd/{fd}")
  finally:
    os.close(fd)
  assert log.read_bytes() == b"progress\nnew\n" and os.stat(log).st_ino == inode
  assert os.listdir(tmp_path) == ["log.txt"]


@pytest.mark.skipif(not ROOT, reason="os.mknod of a device needs root")
def test_a_device_is_written_in_place_never_replaced(tmp_path):
  null, full = tmp_path / "null", tmp_path / "full"
  os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # what /dev/null is
  os.mknod(full, 0o666 | stat.S_IFCHR, os.makedev(1, 7))  # what /dev/full is
  _write(null)
  output = user_output.check(str(full), "--summary")
  with pytest.raises(errors.WriteError) as e:
    user_output.write(output, b"new\n")
  assert str(e.value) == f"--summary: cannot write {full}: No space left on device"
  for node in (null, full):
    assert stat.S_ISCHR(os.lstat(node).st_mode)
  assert sorted(os.listdir(tmp_path)) == ["full", "null"]


@pytest.mark.skipif(not ROOT, reason="os.mknod of a device needs root")
def test_a_block_device_is_refused(tmp_path):
  disk = tmp_path / "disk"
  os.mknod(disk, 0o600 | stat.S_IFBLK, os.makedev(7, 0))  # never opened
  with pytest.raises(errors.WriteError, match="is a block device"):
    user_output.check(str(disk), "--summary")


def test_what_cannot_be_written_is_refused_before_any_work(tmp_path):
  (tmp_path / "file").write_bytes(b"x")
  sock = socket.socket(socket.AF_UNIX)
  sock.bind(str(tmp_path / "sock"))
  try:
    cases = {
      tmp_path: "is a directory, not a file",
      tmp_path / "no" / "s.md": "no directory",
      tmp_path / "file" / "s.md": "Not a directory",
      tmp_path / "sock": "is a socket, not a file",
    }
    for path, message in cases.items():
      with pytest.raises(errors.WriteError, match=message) as e:
        user_output.check(str(path), "--summary")
      assert str(e.value).startswith("--summary: ") and "\n" not in str(e.value)
  finally:
    sock.close()
  if os.path.isdir("/proc/self"):  # a directory that takes no new file
    with pytest.raises(errors.WriteError, match="--summary: cannot write to /proc"):
      user_output.check("/proc/tf_forget_summary.md", "--summary")


@pytest.mark.parametrize(
  "rel, lands",
  [
    ("deploy/s.md", "lies in {run}/deploy"),
    ("deploy", "is {run}/deploy"),
    ("tables/study", "lies in {run}/tables"),
    ("report.json", "is {run}/report.json"),
    ("audit.json", "is {run}/audit.json"),
    ("deploy.tmp-1-ab/s.md", "lies in {run}/deploy.tmp"),
    (".tf_forget.deploy.files.json", "is {run}/.tf_forget.deploy.files.json"),
    (".", "is the run directory"),
  ],
)
def test_tf_forgets_own_places_in_the_run_directory_are_refused(tmp_path, rel, lands):
  run = tmp_path / "run"
  run.mkdir()
  path = os.path.normpath(run / rel)
  with pytest.raises(errors.WriteError) as e:
    user_output.check(path, "--summary", run_dir=str(run))
  assert str(e.value).startswith(f"--summary: {path} {lands.format(run=run)}")
  assert os.listdir(run) == []


def test_beside_tf_forgets_folders_is_fine(tmp_path):
  run = tmp_path / "run"
  run.mkdir()
  for rel in ("summary.md", "deployed.md", "tables.md"):
    _write(run / rel, run_dir=str(run))
  assert sorted(os.listdir(run)) == ["deployed.md", "summary.md", "tables.md"]
