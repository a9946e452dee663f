"""Edge cases of what a user brings (a model, an image folder), through the audit binary.

One refusal of each kind runs the audit binary (`eval/audit.py`) in a subprocess; its variants
run the binary's `main` in this process (`binary_main.run_argv`: the same line, without a
subprocess's TensorFlow import).

Every refusal is one line on stderr, exit status 1, and nothing written or deleted anywhere
under the user's directory (`_tree` before and after): text files that are not UTF-8 (a BOM is
accepted), `--image_size` that is not the model's input size, a subgroup gate without what it
needs, executor flags that clash, a `--ray_address` port that answers but is no Ray cluster,
an `--out` inside a data folder. Ctrl-C / SIGTERM at any moment of the start-up is one line and
exit 130 / 143; `--help` exits 0.
"""

import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from tests import audit_main
from tests import binary_main
from tests.e2e import audit_binary
from tests.e2e import user_files
from tf_forget.compat import keras2

LABELS = [str(c) for c in range(10)]
RESUME = "; run the same command to resume"


@pytest.fixture(scope="module")
def root(tmp_path_factory):
  """The user's directory (`user_files.make`) plus attrs.csv (a binary and a categorical
  column over every image)."""
  path = user_files.make(tmp_path_factory.mktemp("user"))
  rows = ["path,glasses,skin"]
  for rel in sorted(
    p.relative_to(path / "images").as_posix() for p in (path / "images").rglob("*.png")
  ):
    i = int(rel.split("/")[1][:4])
    rows.append(f"{rel},{i % 2},{'dark' if i % 3 else 'light'}")
  (path / "attrs.csv").write_text("\n".join(rows) + "\n")
  return path


def _tree(path):
  """{relative path: sha256 (None for a directory)} of everything under `path`."""
  out = {}
  for folder, dirs, files in os.walk(path):
    for name in dirs:
      out[os.path.relpath(os.path.join(folder, name), path)] = None
    for name in files:
      full = os.path.join(folder, name)
      out[os.path.relpath(full, path)] = audit_binary.sha256(full)
  return out


def _refused(root, args, expected, binary=False):
  """Runs the audit, which must refuse in one line containing `expected` and write nothing:
  the binary in a subprocess with `binary`, else its `main` in this process."""
  before = _tree(root)
  if binary:
    result = audit_binary.audit(args, root)
    line = audit_binary.one_line(result)
    assert "Traceback" not in result.stderr + result.stdout
  else:
    line = binary_main.run_argv(audit_main.main, "audit", args, root)
    assert isinstance(line, str) and "\n" not in line, line
  assert line.startswith("audit: error: ") and expected in line, line
  assert _tree(root) == before  # nothing written (no out/, no logs/), nothing deleted
  return line


def _planned(root, args):
  """Runs `--plan` (validates all, writes nothing; the command's `main` in this process), which
  must succeed; returns stdout."""
  before = _tree(root)
  result = audit_binary.in_process([*args, "--plan"], root)
  assert result.returncode == 0, result.stderr[-3000:]
  assert _tree(root) == before
  return result.stdout


# 1. Text encodings: UTF-8 with or without a byte order mark; anything else is one line.


def test_labels_txt_with_a_bom_is_read_and_latin1_is_refused(root):
  labels = root / "images" / "labels.txt"
  try:
    labels.write_bytes(b"\xef\xbb\xbf" + "\n".join(LABELS).encode() + b"\n")  # Excel, Notepad
    assert "on folder (test split, 200 images)" in _planned(root, user_files.args("out"))
    labels.write_bytes("\n".join(["café"] + LABELS[1:]).encode("latin-1") + b"\n")
    _refused(
      root,
      user_files.args("out"),
      f"class names {labels} is not UTF-8 (byte 0xe9 at offset 3, line 1): re-save it as UTF-8",
      binary=True,
    )
  finally:
    labels.unlink()


def test_attributes_csv_with_a_bom_is_read_and_latin1_is_refused(root):
  text = (root / "attrs.csv").read_text()
  bom = root / "bom.csv"
  bom.write_bytes(b"\xef\xbb\xbf" + text.encode())  # Excel's "CSV UTF-8"
  _planned(root, user_files.args("out", "--attributes=bom.csv", "--protected=glasses"))
  latin = root / "latin.csv"
  lines = text.splitlines()
  lines[3] = lines[3].rsplit(",", 1)[0] + ",café"
  latin.write_bytes(("\n".join(lines) + "\n").encode("latin-1"))
  offset = len("\n".join(lines[:3])) + 1 + len(lines[3]) - 1  # the é, one byte in Latin-1
  _refused(
    root,
    user_files.args("out", "--attributes=latin.csv", "--protected=glasses"),
    f"attributes CSV {latin} is not UTF-8 (byte 0xe9 at offset {offset}, line 4)",
  )
  bom.unlink()
  latin.unlink()


# 2. Ctrl-C / SIGTERM at any moment: one line, 130 / 143, never a traceback.


def _guarded(pid, timeout_s=30.0):
  """Waits until process `pid` catches SIGTERM (`startup.guard` installed; Python itself does
  not catch SIGTERM), so that a signal falls in the binary, not in the interpreter's own
  start-up (site, compiling the script: ~30 ms that no script can cover)."""
  status = f"/proc/{pid}/status"
  if not os.path.exists(status):
    return
  deadline = time.monotonic() + timeout_s
  while time.monotonic() < deadline:
    try:
      with open(status) as f:
        caught = next(int(row.split()[1], 16) for row in f if row.startswith("SigCgt:"))
    except (OSError, StopIteration):
      return  # it already ended
    if caught & (1 << (signal.SIGTERM - 1)):
      return
    time.sleep(0.002)
  raise AssertionError("the audit never installed its signal handlers")


@pytest.mark.parametrize(
  "signum, delay",
  [
    *[(signal.SIGINT, d) for d in (0.05, 0.15, 0.3, 0.6, 1.0, 2.0)],
    (signal.SIGTERM, 0.15),
    (signal.SIGTERM, 1.0),
  ],
)
def test_an_interrupt_at_any_moment_is_one_line(root, tmp_path, signum, delay):
  args = user_files.args(str(tmp_path / "out"))
  start = time.monotonic()
  proc = subprocess.Popen(  # SIGINT / SIGTERM not ignored, whatever the test runner does
    [sys.executable, os.path.join(audit_binary.ROOT, "eval", "audit.py"), *args],
    cwd=root,
    env=audit_binary.env(),
    text=True,
    stdout=subprocess.PIPE,
    stderr=subprocess.PIPE,
    preexec_fn=lambda: [signal.signal(s, signal.SIG_DFL) for s in (signal.SIGINT, signal.SIGTERM)],
  )
  try:
    _guarded(proc.pid)
    time.sleep(max(0.0, delay - (time.monotonic() - start)))
    proc.send_signal(signum)
    _, stderr = proc.communicate(timeout=120)
  finally:
    if proc.poll() is None:
      proc.kill()
      proc.wait()
  verb, code = ("interrupted", 130) if signum == signal.SIGINT else ("terminated", 143)
  lines = stderr.strip().splitlines()
  assert proc.returncode == code and len(lines) == 1, (delay, proc.returncode, stderr[-3000:])
  assert lines[0].startswith(f"audit: {verb} during ") and lines[0].endswith(RESUME), lines
  assert "Traceback" not in stderr


# 3. --help and --helpfull print the flags and exit 0.


@pytest.mark.parametrize("flag", ["--help", "--helpfull"])
def test_help_exits_0(root, flag):
  result = audit_binary.audit([flag], root)
  assert result.returncode == 0 and not result.stderr.strip(), result.stderr[-3000:]
  assert "--image_size" in result.stdout and "--reference" in result.stdout


# 4. --image_size with a user's model: the model's input size (8x8) decides.


def test_image_size_other_than_the_models_is_refused(root):
  _refused(
    root,
    user_files.args("out", "--image_size=16,16"),
    f"--image_size 16x16 is not the model's input size 8x8: the images are resized to "
    f"what {root / 'model.keras'} takes; drop --image_size",
  )
  _planned(root, user_files.args("out", "--image_size=8,8"))


# 5. The subgroup gate says what it is missing.


@pytest.fixture(scope="module")
def binary_root(root):
  """A two-class user: images of digits 0 and 1, an untrained 2-class model (validation only
  reads its signature), attrs.csv of those images."""
  path = root / "binary"
  for label in ("0", "1"):
    shutil.copytree(root / "images" / label, path / "images" / label)
  keras = keras2.keras()
  model = keras.Sequential([keras.Input((8, 8, 1)), keras.layers.Flatten(), keras.layers.Dense(2)])
  model.save(str(path / "model.keras"))
  lines = (root / "attrs.csv").read_text().splitlines()
  (path / "attrs.csv").write_text(
    "\n".join(row for row in lines if row.startswith(("path", "0/", "1/"))) + "\n"
  )
  return path


def _binary_args(*extra):
  return [
    "--dataset=folder:images",
    "--reference=model.keras",
    "--compress=float16",
    "--out=out",
    *user_files.COMMON,
    "--max_subgroup_fnr_increase=0.05",
    *extra,
  ]


def test_subgroup_gate_says_what_is_missing(root, binary_root):
  _refused(
    root,
    user_files.args(
      "out", "--attributes=attrs.csv", "--protected=glasses", "--max_subgroup_fnr_increase=0.05"
    ),
    "--max_subgroup_fnr_increase gates the false-negative rate of protected subgroups, "
    "which needs a binary task (positive = class 1): folder has 10 classes",
    binary=True,
  )
  _refused(
    binary_root,
    _binary_args("--attributes=attrs.csv"),
    "--max_subgroup_fnr_increase gates protected subgroups: it needs "
    f"--protected=ATTR[,ATTR] naming attributes of attributes CSV "
    f"{binary_root / 'attrs.csv'} (attributes: glasses, skin=dark, skin=light)",
  )
  _refused(
    binary_root,
    _binary_args(),
    "--max_subgroup_fnr_increase gates protected subgroups: it needs --attributes=CSV "
    "(a column 'path' or 'id', then one column per attribute) and "
    "--protected=ATTR[,ATTR] naming its columns",
  )
  _planned(binary_root, _binary_args("--attributes=attrs.csv", "--protected=glasses"))


def test_data_flags_without_a_reference_are_refused(root):
  _refused(
    root,
    ["--attributes=attrs.csv", "--protected=glasses", "--out=out", *user_files.COMMON],
    "--class_names, --attributes and --protected describe your own data for your own "
    "model: give it with --reference",
  )


# 6. Executor flags that clash, and a port that is no Ray cluster: refused before writing.


def test_executor_flag_clashes_are_refused(root):
  _refused(
    root,
    user_files.args("out", "--executor=ray", "--ray_address=ray://127.0.0.1:1", "--workers=1"),
    "--workers sets the CPUs of a Ray started here; the cluster at "
    "--ray_address=ray://127.0.0.1:1 has its own: drop --workers",
  )
  _refused(
    root,
    user_files.args("out", "--executor=ray", "--workers=0"),
    "--executor=ray needs --workers >= 1",
  )
  _refused(
    root,
    user_files.args("out", "--workers=2"),  # COMMON has --executor=inline
    "--workers=2 is for --executor=local (processes) or ray; --executor=inline runs "
    "everything in this process",
    binary=True,
  )


@pytest.fixture
def not_ray():
  """A TCP server on 127.0.0.1 that accepts and answers garbage; yields its port."""
  server = socket.socket()
  server.bind(("127.0.0.1", 0))
  server.listen(8)
  server.settimeout(0.2)
  stop = threading.Event()

  def serve():
    while not stop.is_set():
      try:
        conn, _ = server.accept()
      except OSError:
        continue
      with conn:
        try:
          conn.sendall(b"garbage, not gRPC\r\n")
          conn.recv(64)
        except OSError:
          pass

  thread = threading.Thread(target=serve, daemon=True)
  thread.start()
  yield server.getsockname()[1]
  stop.set()
  thread.join()
  server.close()


def test_a_port_that_is_no_ray_cluster_is_refused_in_seconds(root, not_ray):
  start = time.monotonic()
  _refused(
    root,
    user_files.args("out", "--executor=ray", f"--ray_address=ray://127.0.0.1:{not_ray}"),
    f"ray://127.0.0.1:{not_ray} answers but is not a Ray cluster (it answered "
    "b'garbage, ', not an HTTP/2 SETTINGS frame)",
    binary=True,
  )
  assert time.monotonic() - start < 90  # imports and validation; ray.init would wait 120 s


# 7. --out inside a data folder the audit reads.


def test_out_inside_a_data_folder_is_refused(root):
  _refused(
    root,
    user_files.args("images/run"),
    f"--out {root / 'images' / 'run'} is inside the data folder {root / 'images'} "
    "(--dataset): the audit would write into your data and read its own files as "
    "examples; give an --out outside it",
    binary=True,
  )
  calibration = root / "calibration"
  shutil.copytree(root / "images", calibration)
  try:
    _refused(
      root,
      user_files.args("calibration", "--compress=full_int8", "--calibration=folder:calibration"),
      f"--out {calibration} is inside the data folder {calibration} (--calibration)",
    )
    _refused(
      root,
      user_files.args("calibration/deeper/run", "--pruning=oneshot", "--train=folder:calibration"),
      f"is inside the data folder {calibration} (--train)",
    )
  finally:
    shutil.rmtree(calibration)
