"""The static checks (tools/static_checks.sh: ruff's lint and mypy, with the settings of
pyproject.toml) pass on the checkout, and each planted kind of fault fails them: an unused
import (F401), imports out of order (I001) and a type error in an annotated function."""

import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
CONFIG = os.path.join(ROOT, "pyproject.toml")
# A tiny package: two modules of the stats library (numpy, then the project's own import).
MODULES = ("tf_forget/stats/validate.py", "tf_forget/stats/accuracy.py")
PLANTED = "tf_forget/stats/accuracy.py"
IMPORTS = "import numpy as np\n\nfrom tf_forget.stats import validate\n"


def _env(tmp):
  env = dict(os.environ)
  env["MYPY_CACHE_DIR"] = os.path.join(tmp, "mypy_cache")
  env["RUFF_CACHE_DIR"] = os.path.join(tmp, "ruff_cache")
  env["PYTHON"] = sys.executable
  return env


def _run(args, cwd, tmp):
  return subprocess.run(args, cwd=cwd, env=_env(tmp), capture_output=True, text=True, timeout=120)


def _ruff(tree, tmp):
  return _run(
    [
      sys.executable,
      "-m",
      "ruff",
      "check",
      "--config",
      CONFIG,
      "--output-format=concise",
      "tf_forget",
    ],
    tree,
    tmp,
  )


def _mypy(tree, tmp):
  return _run([sys.executable, "-m", "mypy", "--config-file", CONFIG, *MODULES], tree, tmp)


@pytest.fixture(name="tree")
def _tree(tmp_path):
  """A copy of `MODULES` (with their packages' empty `__init__.py`) under tmp_path/tree."""
  tree = tmp_path / "tree"
  for rel in MODULES:
    os.makedirs(tree / os.path.dirname(rel), exist_ok=True)
    shutil.copy(os.path.join(ROOT, rel), tree / rel)
  (tree / "tf_forget" / "__init__.py").write_text("")
  (tree / "tf_forget" / "stats" / "__init__.py").write_text("")
  return tree


def _plant(tree, old, new):
  path = tree / PLANTED
  text = path.read_text(encoding="utf-8")
  assert text.count(old) == 1
  path.write_text(text.replace(old, new), encoding="utf-8")
  return text[: text.index(old)].count("\n") + 1  # the line of the planted text


def test_the_checkout_passes(tmp_path):
  done = _run(["bash", os.path.join(ROOT, "tools", "static_checks.sh")], ROOT, tmp_path)
  assert done.returncode == 0, done.stdout + done.stderr
  assert "ruff and mypy found nothing" in done.stdout


def test_the_unplanted_copy_passes(tree, tmp_path):
  assert _ruff(tree, tmp_path).returncode == 0
  assert _mypy(tree, tmp_path).returncode == 0


def test_an_unused_import_fails_ruff(tree, tmp_path):
  line = _plant(tree, IMPORTS, "import json\n\n" + IMPORTS)
  done = _ruff(tree, tmp_path)
  assert done.returncode == 1
  assert f"{PLANTED}:{line}:8: F401 [*] `json` imported but unused" in done.stdout


def test_imports_out_of_order_fail_ruff(tree, tmp_path):
  line = _plant(tree, IMPORTS, "from tf_forget.stats import validate\nimport numpy as np\n")
  done = _ruff(tree, tmp_path)
  assert done.returncode == 1
  assert f"{PLANTED}:{line}:1: I001" in done.stdout


def test_a_type_error_fails_mypy(tree, tmp_path):
  with open(tree / PLANTED, "a", encoding="utf-8") as f:
    f.write("\n\ndef label_sum(labels: list[int]) -> str:\n  return sum(labels)\n")
  line = (tree / PLANTED).read_text(encoding="utf-8").count("\n")
  assert _ruff(tree, tmp_path).returncode == 0  # a finding of mypy's alone
  done = _mypy(tree, tmp_path)
  assert done.returncode == 1
  assert (
    f'{PLANTED}:{line}: error: Incompatible return value type (got "int", expected '
    '"str")  [return-value]'
  ) in done.stdout
