"""tf_forget.artifacts imports no TensorFlow: every stage can read artifacts cheaply.

Runs in a fresh interpreter: the test session itself has TensorFlow loaded by conftest.py.
"""

import pytest

from tests import import_check

MODULES = (
  "errors",
  "hashing",
  "filesystem",
  "fileio",
  "swap",
  "run_lock",
  "user_output",
  "names",
  "layout",
  "lineage",
  "predictions",
  "noise_artifact",
  "tflite_formats",
  "encodings",
  "tflite_json",
  "tflite_failure",
  "audit_json",
  "run_json",
  "member_metadata",
  "agreement_table",
  "layers_json",
)


def _run(imports):
  return import_check.foreign_modules(imports, "tf_forget.artifacts")


@pytest.mark.parametrize("module", MODULES)
def test_each_module_imports_without_tensorflow(module):
  assert _run(f"import tf_forget.artifacts.{module}") == ""


def test_the_format_registry_imports_without_tensorflow():
  imports = "import tf_forget.export.formats"
  bad = [m for m in _run(imports).split(",") if m.split(".")[0] in import_check.FRAMEWORKS]
  assert not bad


def test_the_check_detects_tensorflow():
  fake = (
    "import types\n"
    "sys.modules['tensorflow'] = types.ModuleType('tensorflow')\n"
    "import tf_forget.artifacts.fileio"
  )
  assert _run(fake) == "tensorflow"
