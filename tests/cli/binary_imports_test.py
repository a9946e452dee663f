"""Nothing imports a binary (docs/architecture.md, "Import order"): no module of the project —
library, test, benchmark, example or another binary — imports one of the five binaries; tests
run a command in-process through its `tf_forget.commands` module (`tests/command_main.py`)."""

import ast
import os

# The checkout itself (under Bazel, where this file links to), not the runfiles: every file.
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
BINARIES = {
  "eval.audit",
  "eval.evaluate_population",
  "tflite_export.export_population",
  "tf_forget.train.train_population",
  "tf_forget.corruptions.generate_corruptions",
}
FOLDERS = ("tf_forget", "eval", "tflite_export", "tests", "benchmarks", "examples", "tools")


def _imports(path):
  """The dotted module names `path` imports (`import a.b`, `from a import b` as `a.b` and `a`)."""
  tree = ast.parse(open(path, encoding="utf-8").read(), path)
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      yield from (a.name for a in node.names)
    elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
      yield node.module
      yield from (f"{node.module}.{a.name}" for a in node.names)


def _sources():
  for folder in FOLDERS:
    for dirpath, _, files in os.walk(os.path.join(ROOT, folder)):
      yield from (os.path.join(dirpath, f) for f in files if f.endswith(".py"))


def test_no_module_imports_a_binary():
  sources = list(_sources())
  assert len(sources) > 400  # the whole checkout was read
  found = sorted(
    f"{os.path.relpath(path, ROOT)} imports {name}"
    for path in sources
    for name in set(_imports(path))
    if name in BINARIES
  )
  assert not found


def test_the_check_sees_an_import_of_a_binary(tmp_path):
  for text in (
    "from eval import audit\n",
    "import tf_forget.train.train_population\n",
    "from tf_forget.corruptions import generate_corruptions as g\n",
  ):
    path = tmp_path / "m.py"
    path.write_text(text)
    assert set(_imports(str(path))) & BINARIES, text
