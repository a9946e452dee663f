"""Which foreign modules an import pulls in, checked in a fresh interpreter.

The test session itself has TensorFlow loaded (conftest.py), so "package P imports no
TensorFlow" can only be checked in a new process: `foreign_modules` runs the given import lines
there and returns the loaded modules that are TensorFlow / Keras / LiteRT or tf_forget modules
outside the allowed package.
"""

import os
import subprocess
import sys

FRAMEWORKS = ("tensorflow", "keras", "tf_keras", "ai_edge_litert")

_SCRIPT = """
import sys
{imports}
package = {package!r}
bad = sorted(m for m in sys.modules
             if m.split('.')[0] in {frameworks!r}
             or (m.startswith('tf_forget') and m not in ('tf_forget', package)
                 and not m.startswith(package + '.')))
print(','.join(bad))
"""


def foreign_modules(imports, package):
  """Comma-joined sorted names of the foreign modules loaded by `imports` ("" if none).

  Args:
    imports: Python source of the import lines to run.
    package: the tf_forget package allowed to load (e.g. "tf_forget.stats").
  """
  root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  env = dict(os.environ)
  env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
  script = _SCRIPT.format(imports=imports, package=package, frameworks=FRAMEWORKS)
  out = subprocess.run(
    [sys.executable, "-c", script],
    capture_output=True,
    text=True,
    env=env,
    cwd=root,
    timeout=120,
    check=True,
  )
  return out.stdout.strip()
