"""The fast tier (tools/fast_tests.py): a test file is fast only when nothing it loads imports a
framework or starts a process; the checkout's tier holds the pure packages' tests; and a run
that loads a framework after all fails."""

import os
import sys

from tests import files

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import fast_tests

# The checkout's fast tier held 27 of 189 test files when this floor was set.
FLOOR = 24


def _read(rel):
  with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
    return f.read()


def _planted(root):
  """A checkout whose test files load a framework or a process in each way the tier knows."""
  files.write_text(root, "tests/__init__.py", "")
  files.write_text(root, "tests/conftest.py", "from tf_forget import switch\nswitch.enable()\n")
  files.write_text(root, "tf_forget/__init__.py", "def api():\n  import tf_forget.heavy\n")
  files.write_text(
    root,
    "tf_forget/switch.py",
    "def enable():\n  pass\n\n\ndef keras():\n  import tf_keras\n  return tf_keras\n",
  )
  files.write_text(root, "tf_forget/pure.py", "import numpy as np\n")
  files.write_text(
    root,
    "tf_forget/heavy.py",
    "import numpy\n\n\ndef train():\n  import tensorflow as tf\n  return tf\n",
  )
  files.write_text(root, "tf_forget/middle.py", "from tf_forget import heavy\n")
  files.write_text(
    root, "tf_forget/pool.py", "import os\n\n\ndef shell(cmd):\n  return os.system(cmd)\n"
  )
  tests = {
    "pure_test.py": "from tf_forget import pure\n",
    "lazy_test.py": "def test_x():\n  from tf_forget import middle\n",
    "package_test.py": "import tf_forget\n",
    "switch_test.py": "from tf_forget import switch\n",
    "process_test.py": "import subprocess\n",
    "shell_test.py": "from tf_forget import pool\n",
    "command_test.py": "from tests import binary_main\n",
  }
  files.write_text(root, "tests/binary_main.py", "")
  for name, text in tests.items():
    files.write_text(root, f"tests/a/{name}", text)


def test_a_test_loading_a_framework_or_a_process_is_slow_and_a_pure_one_fast(tmp_path):
  root = str(tmp_path)
  _planted(root)
  tiers = fast_tests.classify(root)
  assert tiers["tests/a/pure_test.py"] is None
  # TensorFlow imported in a function of a module imported by a module the test imports.
  assert tiers["tests/a/lazy_test.py"] == (
    "imports tensorflow (tf_forget/heavy.py:5) via tests/a/lazy_test.py -> "
    "tf_forget/middle.py -> tf_forget/heavy.py"
  )
  # The package itself imported: its functions may be called.
  assert tiers["tests/a/package_test.py"].startswith("imports tensorflow (tf_forget/heavy.py")
  assert tiers["tests/a/switch_test.py"].startswith("imports tf_keras (tf_forget/switch.py:6)")
  assert tiers["tests/a/process_test.py"].startswith("starts a process: imports subprocess")
  assert tiers["tests/a/shell_test.py"].startswith("starts a process: os.system (line 5)")
  assert tiers["tests/a/command_test.py"].startswith("starts a process: runs a command")
  assert len(tiers) == 7


def test_the_checkout_holds_the_pure_packages_tests_in_the_fast_tier():
  tiers = fast_tests.classify(ROOT)
  fast = {t for t, why in tiers.items() if why is None}
  assert len(fast) >= FLOOR, sorted(fast)
  stats = {t for t in tiers if t.startswith("tests/stats/")}
  # Those that check in a fresh interpreter (tests/import_check.py) that `tf_forget.stats`
  # loads no TensorFlow start a process; every other test of the package is fast.
  checks_imports = {t for t in stats if "import_check" in _read(t)}
  assert "tests/stats/import_test.py" in checks_imports
  assert stats - checks_imports <= fast
  assert len(stats - checks_imports) >= 10
  assert all("imports subprocess (tests/import_check.py" in tiers[t] for t in checks_imports)
  assert "tests/tools/fast_tests_test.py" in fast
  assert tiers["tests/models/small_cnn_test.py"] is not None


def test_a_run_that_loads_a_framework_fails_naming_the_test(tmp_path, monkeypatch, capsys):
  monkeypatch.syspath_prepend(str(tmp_path))  # sys.path is restored afterwards
  monkeypatch.setattr(fast_tests, "FRAMEWORKS", fast_tests.FRAMEWORKS + ("planted_framework",))
  files.write_text(str(tmp_path), "planted_framework.py", "")
  files.write_text(str(tmp_path), "pure_planted_test.py", "def test_pure():\n  assert True\n")
  files.write_text(
    str(tmp_path),
    "loading_planted_test.py",
    "def test_loads():\n  import planted_framework  # pylint: disable=unused-import\n",
  )
  try:
    assert fast_tests.run([str(tmp_path / "pure_planted_test.py")]) == 0
    assert "fast_tests: 1 test files in one process" in capsys.readouterr().out
    assert (
      fast_tests.run([str(tmp_path / f"{n}_planted_test.py") for n in ("pure", "loading")]) == 1
    )
    assert (
      "fast_tests: FAILED: the fast tier loaded planted_framework (first after "
      "loading_planted_test.py::test_loads)"
    ) in capsys.readouterr().err
  finally:
    for name in ("planted_framework", "pure_planted_test", "loading_planted_test"):
      sys.modules.pop(name, None)
