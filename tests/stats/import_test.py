"""tf_forget.stats imports neither TensorFlow nor the rest of tf_forget (CONVENTIONS.md, #4).

Runs in a fresh interpreter: the test session itself has TensorFlow loaded by conftest.py.
"""

import os
import subprocess
import sys

import pytest

MODULES = ("validate", "accuracy", "class_level", "exemplars", "cie", "subgroups",
           "robustness", "recall_distortion", "lost_in_pruning")

_SCRIPT = """
import sys
import tf_forget.stats
{imports}
bad = sorted(m for m in sys.modules
             if m.split('.')[0] in ('tensorflow', 'keras', 'tf_keras')
             or (m.startswith('tf_forget') and m not in ('tf_forget', 'tf_forget.stats')
                 and not m.startswith('tf_forget.stats.')))
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


def test_whole_library_imports_without_tensorflow():
  imports = "\n".join(f"import tf_forget.stats.{m}" for m in MODULES)
  assert _run(imports) == ""


@pytest.mark.parametrize("module", MODULES)
def test_each_module_imports_without_tensorflow(module):
  assert _run(f"import tf_forget.stats.{module}") == ""


def test_the_check_detects_tensorflow_and_pipeline_modules():
  # The same check flags a TensorFlow / pipeline import (the assertions above can fail).
  # Stand-in modules keep this fast; the check only looks at sys.modules names.
  fake = ("import types\n"
          "sys.modules['tensorflow'] = types.ModuleType('tensorflow')\n"
          "sys.modules['tf_forget.eval'] = types.ModuleType('tf_forget.eval')")
  assert _run(fake).split(",") == ["tensorflow", "tf_forget.eval"]
