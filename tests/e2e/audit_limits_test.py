"""Bad input the audit command refuses in one line, fast, with bounded memory and nothing
written: remote paths whose scheme is not served or that cannot be reached, a configuration
file nested too deeply or too large, a `.keras` archive whose `config.json` inflates (a zip
bomb), and entries of the data folder that are no image files (a FIFO, a link to /dev/zero,
a 4 GB file).

The command runs in this process (`tests/audit_main.py`) except where the promise is about the
process: the unreachable bucket runs the binary, so that its stderr and its temporary log
(none left behind) are the real ones. Memory is measured with `tracemalloc` (Python's own
allocations: the bytes of a member or a file read are). The FIFO test opens the FIFO for
writing after `FIFO_BOUND_S` seconds, which unblocks a reader stuck on it: a regression fails
that test instead of hanging the suite, and the data-folder tests run under a data-segment
limit (`RLIMIT_DATA`, 4 GB above what the process holds), so that a regression reading
/dev/zero without end fails the test instead of exhausting the machine.
"""

import contextlib
import json
import os
import resource
import shutil
import subprocess
import sys
import threading
import time
import tracemalloc
import zipfile

import pytest

from tests import audit_main
from tests import binary_main
from tests.e2e import audit_binary
from tests.e2e import user_files

CLASSES = [str(c) for c in range(10)]
USER = dict(
  compress=["float16"],
  executor="inline",
  deploy_encoding="plain",
  class_names=CLASSES,
  corruptions=["none"],
  noise_levels=["none"],
)
BOGUS_BUCKET = "gs://tf-forget-test-no-such-bucket-7d1c"
FIFO_BOUND_S = 120


def _run_main(**flag_values):
  return binary_main.run_main(audit_main.main, "audit", **flag_values)


def _one_line(code):
  assert isinstance(code, str) and code.startswith("audit: error: "), code
  assert "\n" not in code and "Traceback" not in code
  return code


@pytest.fixture(scope="module")
def user(tmp_path_factory):
  """A tiny model and 30 test images (`user_files.make`)."""
  return user_files.make(tmp_path_factory.mktemp("user"), num_images=30)


@pytest.mark.parametrize(
  "flags, message",
  [
    (
      dict(reference=["s3://bucket/model.keras"]),
      "s3://bucket/model.keras: s3:// paths are not supported",
    ),
    (
      dict(reference=["http://example.com/model.keras"]),
      "http://example.com/model.keras: http:// paths are not supported",
    ),
    (
      dict(config="s3://bucket/audit.json"),
      "s3://bucket/audit.json: s3:// paths are not supported",
    ),
    (dict(out="s3://bucket/run", reference=None), "cannot write to s3://bucket/run"),
  ],
)
def test_an_unsupported_remote_path_is_one_line(user, tmp_path, flags, message):
  given = dict(
    dict(
      USER,
      dataset=f"folder:{user / 'images'}",
      reference=[str(user / "model.keras")],
      out=str(tmp_path / "out"),
    ),
    **flags,
  )
  if given["reference"] is None:  # --out alone: tf_forget's own population
    given = dict(
      out=given["out"],
      preset="tiny",
      members=2,
      corruptions=["none"],
      noise_levels=["none"],
      executor="inline",
    )
  assert message in _one_line(_run_main(**given))
  assert os.listdir(tmp_path) == []


def test_an_unreachable_bucket_is_one_line_and_leaves_no_temporary_log(user, tmp_path):
  """The binary, as a user runs it: no network (or no such bucket) is one stderr line naming
  the path, exit 1, and the command's temporary log is gone."""
  tmp = tmp_path / "tmp"
  tmp.mkdir()
  reference = f"{BOGUS_BUCKET}/model.keras"
  env = dict(audit_binary.env(), TMPDIR=str(tmp))
  result = subprocess.run(
    [
      sys.executable,
      os.path.join(audit_binary.ROOT, "eval", "audit.py"),
      "--dataset=folder:images",
      f"--reference={reference}",
      "--compress=float16",
      f"--out={tmp_path / 'out'}",
      "--executor=inline",
    ],
    cwd=user,
    env=env,
    text=True,
    capture_output=True,
    timeout=300,
    check=False,
  )
  line = audit_binary.one_line(result)
  assert line.startswith("audit: error: ") and reference in line
  assert os.listdir(tmp) == []  # no tf_forget_audit_*.log
  assert not (tmp_path / "out").exists()


def _peak(fn):
  """(fn(), peak bytes Python allocated while it ran)."""
  tracemalloc.start()
  try:
    got = fn()
    return got, tracemalloc.get_traced_memory()[1]
  finally:
    tracemalloc.stop()


def test_a_deep_or_huge_configuration_is_one_line_and_read_no_further(tmp_path):
  deep = tmp_path / "deep.json"
  deep.write_text('{"a": ' * 100_000 + "1" + "}" * 100_000)
  assert _one_line(_run_main(config=str(deep))).endswith(
    f"cannot read configuration {deep}: its JSON is nested too deeply"
  )
  nested = 1
  for _ in range(100):
    nested = [nested]
  deep_field = tmp_path / "deep_field.json"
  deep_field.write_text(
    json.dumps({"schema": "tf_forget.config/1", "population": {"preset_overrides": {"x": nested}}})
  )
  assert "population.preset_overrides.x nests lists or dicts more than 32 levels deep" in (
    _one_line(_run_main(config=str(deep_field)))
  )
  huge = tmp_path / "huge.json"
  huge.write_text(json.dumps({"schema": "tf_forget.config/1", "pad": "x" * 40_000_000}))
  code, peak = _peak(lambda: _run_main(config=str(huge)))
  assert _one_line(code).endswith(
    f"cannot read configuration {huge}: it is 40 MB, more than the 16 MB a configuration may take"
  )
  assert peak < 8_000_000  # refused by its size, unread
  assert sorted(os.listdir(tmp_path)) == ["deep.json", "deep_field.json", "huge.json"]


def _bomb(path, inflated):
  """A `.keras` archive whose `config.json` inflates to `inflated` bytes (one long name; 1000:1
  compressed) next to a Keras 2 `metadata.json`."""
  with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
    archive.writestr("metadata.json", json.dumps({"keras_version": "2.15.0"}))
    info = zipfile.ZipInfo("config.json")
    info.compress_type = zipfile.ZIP_DEFLATED
    with archive.open(info, "w") as f:
      f.write(b'{"class_name": "Sequential", "config": {"name": "')
      chunk = b"A" * (1 << 20)
      for _ in range(inflated >> 20):
        f.write(chunk)
      f.write(b'"}}')
  return path


def test_a_zip_bomb_reference_is_refused_unread(user, tmp_path):
  bomb = _bomb(tmp_path / "bomb.keras", 256 << 20)
  assert os.path.getsize(bomb) < 1_000_000
  flags = dict(
    USER, dataset=f"folder:{user / 'images'}", reference=[str(bomb)], out=str(tmp_path / "out")
  )
  _run_main(**flags)  # once untraced: the modules the refusal imports are loaded
  code, peak = _peak(lambda: _run_main(**flags))
  assert _one_line(code).endswith(
    f"model file {bomb}: its config.json unpacks to 268 MB, over the 64 MB a model's "
    "configuration may take (refused unread)"
  )
  assert peak < 32_000_000  # the 268 MB member is never inflated
  assert os.listdir(tmp_path) == ["bomb.keras"]


class _Unblocker:
  """Opens `fifo` for writing (then closes it) after `seconds`: a reader stuck opening it
  returns and reads end-of-file, so a hang becomes a failure."""

  def __init__(self, fifo, seconds):
    self._fifo, self._stop = fifo, threading.Event()
    self._thread = threading.Thread(target=self._run, args=(seconds,), daemon=True)
    self._thread.start()

  def _run(self, seconds):
    if self._stop.wait(seconds):
      return
    while not self._stop.wait(0.2):
      try:
        os.close(os.open(self._fifo, os.O_WRONLY | os.O_NONBLOCK))
      except OSError:  # no reader (yet)
        pass

  def stop(self):
    self._stop.set()
    self._thread.join()


@contextlib.contextmanager
def _data_bound(extra):
  """Limits this process's data segment to `extra` bytes more than it holds now."""
  with open("/proc/self/status") as f:
    held = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmData:"))
  soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
  resource.setrlimit(resource.RLIMIT_DATA, (held + extra, hard))
  try:
    yield
  finally:
    resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))


@pytest.mark.parametrize(
  "kind, message",
  [
    ("fifo", "is a FIFO (named pipe), not a regular file; only regular files are read"),
    ("dev_zero", "is a link to /dev/zero, a character device; only regular files are read"),
    ("sparse_4gb", "is 4.29 GB, more than any image the audit reads (1 GB)"),
  ],
)
def test_a_data_entry_that_is_no_image_file_is_refused_at_once(user, tmp_path, kind, message):
  images = tmp_path / "images"
  shutil.copytree(user / "images", images)
  entry = images / "0" / "x.png"
  unblocker = None
  if kind == "fifo":
    os.mkfifo(entry)
    unblocker = _Unblocker(entry, FIFO_BOUND_S)
  elif kind == "dev_zero":
    os.symlink("/dev/zero", entry)
  else:
    with open(entry, "wb") as f:
      f.truncate(4 << 30)  # sparse: no disk used
  start = time.monotonic()
  try:
    with _data_bound(4 << 30):
      code = _run_main(
        **USER,
        dataset=f"folder:{images}",
        reference=[str(user / "model.keras")],
        out=str(tmp_path / "out"),
      )
  finally:
    if unblocker is not None:
      unblocker.stop()
  assert time.monotonic() - start < FIFO_BOUND_S
  assert _one_line(code).endswith(f"image 0/x.png of folder {images} {message}")
  assert not (tmp_path / "out").exists()
