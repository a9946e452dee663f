"""The wheel, installed as a user installs it, audits a user's files as the clone does.

The wheel is built from a copy of the checkout's `pyproject.toml`, `README.md` and `tf_forget/`
in a temporary directory (setuptools writes `build/` and `*.egg-info` next to its sources),
with this interpreter's setuptools and no network (`pip wheel --no-deps --no-build-isolation`).
It is installed into a fresh venv (`python -m venv` of the base interpreter) whose only view of
the verified stack is a `.pth` file pointing at this venv's site-packages: the install itself
is `pip install --no-index`, so pip must find every dependency the wheel declares already
satisfied by the pinned stack (that checks the ranges of pyproject.toml against
requirements.txt) without downloading TensorFlow again (1 GB, and CI has no time for it).

Then, from the user's directory (not the checkout; no PYTHONPATH, no TF_USE_LEGACY_KERAS: the
command selects Keras 2 itself), `tf-forget --help`, `--version`, `tf-forget audit` on a small
own-model folder (`tests/e2e/user_files.py`: a tiny tf_keras model, its int8 file, PNGs) and
a script calling `tf_forget.audit(...)`; their report tables equal those of `eval/audit.py`
run in the checkout with the same flags (latency columns aside). About 80 s on 2 cores.
"""

import os
import pathlib
import subprocess
import sys
import sysconfig
import zipfile

import pandas as pd
import pytest

from tests import timed
from tests.e2e import audit_binary
from tests.e2e import user_files
from tf_forget import api

# The checkout this test file lives in (under Bazel: the runfiles' symlink resolved).
SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
NOT_SHIPPED = ("BUILD",)  # Bazel's files stay in the repository


def _package_files():
  """Paths (relative to the checkout) of every file of the `tf_forget` package on disk."""
  out = []
  for root, dirs, files in os.walk(os.path.join(SOURCE, "tf_forget")):
    dirs[:] = [d for d in dirs if d != "__pycache__"]
    out += [
      os.path.relpath(os.path.join(root, f), SOURCE)
      for f in files
      if not f.endswith(".pyc") and f not in NOT_SHIPPED
    ]
  return sorted(out)


def _run(command, cwd, timeout=600, **env):
  """`command` in `cwd` with the user's environment: no checkout on PYTHONPATH, no Keras
  switch set beforehand, no GPU."""
  environ = {
    k: v
    for k, v in os.environ.items()
    if k
    not in ("PYTHONPATH", "TF_USE_LEGACY_KERAS", "BUILD_WORKING_DIRECTORY", "GITHUB_STEP_SUMMARY")
  }
  environ.update(CUDA_VISIBLE_DEVICES="", **env)
  return subprocess.run(
    command, cwd=cwd, env=environ, text=True, capture_output=True, timeout=timeout, check=False
  )


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
  """(the wheel, the fresh venv's bin/ directory)."""
  tmp = tmp_path_factory.mktemp("package")
  src = tmp / "src"
  for rel in ["pyproject.toml", "README.md", *_package_files()]:
    (src / rel).parent.mkdir(parents=True, exist_ok=True)
    (src / rel).write_bytes((pathlib.Path(SOURCE) / rel).read_bytes())
  built = _run(
    [
      sys.executable,
      "-m",
      "pip",
      "wheel",
      "--no-deps",
      "--no-build-isolation",
      "--no-index",
      "--no-cache-dir",
      "-w",
      str(tmp / "dist"),
      str(src),
    ],
    cwd=tmp,
  )
  assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-3000:]
  wheel = next((tmp / "dist").glob("tf_forget-*.whl"))
  venv = tmp / "venv"
  made = _run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", str(venv)], cwd=tmp)
  assert made.returncode == 0, made.stderr[-3000:]
  site = _run(
    [
      str(venv / "bin" / "python"),
      "-c",
      "import sysconfig; print(sysconfig.get_paths()['purelib'])",
    ],
    cwd=tmp,
  ).stdout.strip()
  stack = {os.path.realpath(sysconfig.get_paths()[k]) for k in ("purelib", "platlib")}
  (pathlib.Path(site) / "_verified_stack.pth").write_text(
    "".join(f"import site; site.addsitedir({p!r})\n" for p in sorted(stack))
  )
  pip = _run(
    [
      str(venv / "bin" / "python"),
      "-m",
      "pip",
      "install",
      "--no-index",
      "--no-cache-dir",
      str(wheel),
    ],
    cwd=tmp,
  )
  assert pip.returncode == 0, pip.stdout[-3000:] + pip.stderr[-3000:]
  return wheel, venv / "bin"


def test_the_wheel_holds_the_package_and_every_file_it_reads(installed):
  wheel, _ = installed
  names = set(zipfile.ZipFile(wheel).namelist())
  assert {n.split("/")[0] for n in names} == {
    "tf_forget",
    wheel.name.split("-py3")[0] + ".dist-info",
  }
  files = _package_files()
  data = [f for f in files if not f.endswith(".py")]
  assert "tf_forget/pipeline/unit_costs/cpu_2core_avx512.json" in data
  assert set(files) <= names, sorted(set(files) - names)  # code and data files alike
  entry = (
    zipfile.ZipFile(wheel)
    .read(wheel.name.split("-py3")[0] + ".dist-info/entry_points.txt")
    .decode()
  )
  assert "tf-forget = tf_forget.commands.tf_forget_main:console_main" in entry
  assert os.path.getsize(wheel) < 2_000_000


def _same_report(a, b):
  a, b = api.load_report(a), api.load_report(b)
  assert list(a.tables) == list(b.tables) and "verdict" in a.tables
  for name in a.tables:
    pd.testing.assert_frame_equal(
      timed.untimed(a.tables[name]), timed.untimed(b.tables[name]), obj=name
    )
  assert timed.without_timings(a.verdict) == timed.without_timings(b.verdict)
  assert a.passed == b.passed


API_SCRIPT = """
import sys
import tf_forget
result = tf_forget.audit(dataset="folder:images", reference="model.keras",
                         candidate={"int8": "int8.tflite"}, out=sys.argv[1],
                         executor="inline", deploy_encoding="plain", log=lambda line: None)
print("module", tf_forget.__file__)
print("verdict", result.passed, result.verdict["variant"], len(result.tables["verdict"]))
"""


def test_the_installed_command_and_api_audit_as_the_clone_does(installed, tmp_path):
  _, bin_dir = installed
  user = user_files.make(tmp_path / "user", num_images=100)
  where = _run(
    [
      str(bin_dir / "python"),
      "-c",
      "import tf_forget, sys; print(tf_forget.__file__, 'tensorflow' in sys.modules)",
    ],
    cwd=user,
  )
  assert where.stdout.startswith(str(bin_dir.parent / "lib")), where.stdout + where.stderr
  assert where.stdout.split()[1] == "False"  # importing tf_forget loads no TensorFlow

  shown = _run([str(bin_dir / "tf-forget"), "--help"], cwd=user)
  assert shown.returncode == 0 and "tf-forget audit" in shown.stdout, shown.stderr
  version = _run([str(bin_dir / "tf-forget"), "--version"], cwd=user)
  assert version.returncode == 0 and version.stdout.strip().startswith("tf-forget 0.")
  flags_help = _run([str(bin_dir / "tf-forget"), "audit", "--help"], cwd=user)
  assert flags_help.returncode == 0 and "--candidate:" in flags_help.stdout

  clone = audit_binary.audit(user_files.args(tmp_path / "clone"), cwd=user)
  assert clone.returncode == 0, clone.stderr[-3000:]
  command = _run(
    [str(bin_dir / "tf-forget"), "audit", *user_files.args(tmp_path / "installed")], cwd=user
  )
  assert command.returncode == 0, command.stderr[-3000:]
  assert "recommended: deploy/" in command.stdout
  _same_report(tmp_path / "clone", tmp_path / "installed")

  (tmp_path / "api.py").write_text(API_SCRIPT)
  script = _run(
    [str(bin_dir / "python"), str(tmp_path / "api.py"), str(tmp_path / "api")], cwd=user
  )
  assert script.returncode == 0, script.stderr[-3000:]
  assert f"module {bin_dir.parent / 'lib'}" in script.stdout, script.stdout
  assert "verdict True user_int8 2" in script.stdout, script.stdout
  _same_report(tmp_path / "clone", tmp_path / "api")
