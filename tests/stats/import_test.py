"""tf_forget.stats imports neither TensorFlow nor the rest of tf_forget
(docs/architecture.md, "Import order").

Runs in a fresh interpreter: the test session itself has TensorFlow loaded by conftest.py.
"""

import pytest

from tests import import_check

MODULES = (
  "validate",
  "accuracy",
  "class_level",
  "exemplars",
  "cie",
  "subgroups",
  "robustness",
  "recall_distortion",
  "lost_in_pruning",
  "representation",
  "paired",
  "paired_bootstrap",
  "divergence",
)


def _run(imports):
  return import_check.foreign_modules("import tf_forget.stats\n" + imports, "tf_forget.stats")


def test_whole_library_imports_without_tensorflow():
  imports = "\n".join(f"import tf_forget.stats.{m}" for m in MODULES)
  assert _run(imports) == ""


@pytest.mark.parametrize("module", MODULES)
def test_each_module_imports_without_tensorflow(module):
  assert _run(f"import tf_forget.stats.{module}") == ""


def test_the_check_detects_tensorflow_and_pipeline_modules():
  # The same check flags a TensorFlow / pipeline import (the assertions above can fail).
  # Stand-in modules keep this fast; the check only looks at sys.modules names.
  fake = (
    "import types\n"
    "sys.modules['tensorflow'] = types.ModuleType('tensorflow')\n"
    "sys.modules['tf_forget.eval'] = types.ModuleType('tf_forget.eval')"
  )
  assert _run(fake).split(",") == ["tensorflow", "tf_forget.eval"]
