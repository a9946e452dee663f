"""The policy sits below the configuration, the evaluator and the report (docs/architecture.md,
"Import order"): `tf_forget.policy` imports only `tf_forget.artifacts` and no TensorFlow, and
neither `tf_forget/config` nor `tf_forget/evaluate` imports the report, which sits above them.

The first check runs in a fresh interpreter (the test session has TensorFlow loaded by
conftest.py); the second reads every module's imports with `ast`, inside functions too.
"""

import ast
import os

import pytest

from tests import import_check

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODULES = (
  "gate_inputs",
  "gates",
  "unlabelled_gates",
  "file_pairs",
  "ship_rule",
  "human_study_options",
)


def _foreign(imports):
  """The modules `imports` loads beyond `tf_forget.policy` and `tf_forget.artifacts`."""
  found = import_check.foreign_modules(imports, "tf_forget.policy").split(",")
  return [m for m in found if m and not m.startswith("tf_forget.artifacts")]


@pytest.mark.parametrize("module", MODULES)
def test_each_module_imports_only_artifacts(module):
  assert _foreign(f"import tf_forget.policy.{module}") == []


def test_the_check_detects_a_foreign_module():
  assert _foreign("import tf_forget.config.codec") == ["tf_forget.config", "tf_forget.config.codec"]


def _imports(package):
  """{module path: the tf_forget modules it imports} of every module of `package`."""
  out = {}
  for dirpath, _, filenames in os.walk(os.path.join(ROOT, "tf_forget", package)):
    for name in sorted(f for f in filenames if f.endswith(".py")):
      path = os.path.join(dirpath, name)
      with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
      found = set()
      for node in ast.walk(tree):
        if isinstance(node, ast.Import):
          found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
          found.update(f"{node.module}.{a.name}" for a in node.names)
      out[os.path.relpath(path, ROOT)] = sorted(m for m in found if m.startswith("tf_forget."))
  return out


@pytest.mark.parametrize("package", ["config", "evaluate", "policy"])
def test_the_report_is_above(package):
  below = {
    path: [m for m in modules if m.startswith("tf_forget.report")]
    for path, modules in _imports(package).items()
  }
  assert {path: found for path, found in below.items() if found} == {}


def test_the_report_imports_neither_config_nor_evaluate():
  above = ("tf_forget.config", "tf_forget.evaluate", "tf_forget.pipeline", "tf_forget.commands")
  found = {
    path: [m for m in modules if m.startswith(above)]
    for path, modules in _imports("report").items()
  }
  assert {path: m for path, m in found.items() if m} == {}
