"""tf_forget.artifacts imports no TensorFlow (issue #14): every stage can read artifacts cheaply.

Runs in a fresh interpreter: the test session itself has TensorFlow loaded by conftest.py.
"""

import os
import subprocess
import sys

import pytest

MODULES = ("errors", "hashing", "fileio", "names", "layout", "lineage", "predictions", "noise")

_SCRIPT = """
import sys
{imports}
bad = sorted(m for m in sys.modules
             if m.split('.')[0] in ('tensorflow', 'keras', 'tf_keras', 'ai_edge_litert')
             or (m.startswith('tf_forget') and m not in ('tf_forget', 'tf_forget.artifacts')
                 and not m.startswith('tf_forget.artifacts.')))
print(','.join(bad))
"""


def _run(imports):
  root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
  env = dict(os.environ)
  env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
  out = subprocess.run([sys.executable, "-c", _SCRIPT.format(imports=imports)],
                       capture_output=True, text=True, env=env, cwd=root, timeout=120,
                       check=True)
  return out.stdout.strip()


@pytest.mark.parametrize("module", MODULES)
def test_each_module_imports_without_tensorflow(module):
  assert _run(f"import tf_forget.artifacts.{module}") == ""


def test_the_aliases_import_without_tensorflow():
  # The old import paths (thin re-exports) stay TensorFlow-free too.
  imports = ("import tf_forget.io.atomic\nimport eval.predictions\n"
             "import tflite_export.formats\nimport tf_forget.train.variants")
  bad = [m for m in _run(imports).split(",") if m.split(".")[0] in ("tensorflow", "keras",
                                                                     "tf_keras", "ai_edge_litert")]
  assert not bad


def test_the_check_detects_tensorflow():
  fake = ("import types\n"
          "sys.modules['tensorflow'] = types.ModuleType('tensorflow')\n"
          "import tf_forget.artifacts.fileio")
  assert _run(fake) == "tensorflow"
