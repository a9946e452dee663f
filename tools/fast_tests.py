"""The fast test tier: the test files that import no TensorFlow and start no process.

    python tools/fast_tests.py --list    # the fast test files, one a line
    python tools/fast_tests.py --slow    # the other test files, each with why it is not fast
    python tools/fast_tests.py --run     # runs them in one pytest process (make test-fast)

Decided on the source, statically: a test file (`tests/**/*_test.py`) is fast when no file it
loads imports a framework (`FRAMEWORKS`) or starts a process (`PROCESS_MODULES`,
`PROCESS_HELPERS`, `OS_PROCESS_CALLS`, `POOL`). The files it loads are itself, the project
modules it imports (resolved as `tools/check_build.py` resolves them; `tools/` modules by their
bare name) and theirs, transitively, read whole: an import inside a function counts (the test
may call it). Files that are only loaded, their functions not called by the test, count with
their module-level imports: the `__init__.py` of the packages on a module's path and the
`conftest.py` files above the test (and what those import at module level).

`--run` runs them all in this process. They can share it: the files that define absl flags
(`tests/audit_main.py`, and `tests/command_main.py` through `tests/binary_main.py`) run commands
and are not fast (a flag defined twice would fail the collection). After the run a framework in
`sys.modules` fails it, naming the first test after which it was there: a module named at run
time (`importlib`), or a function that a loaded-only file calls at module level, escapes the
static reading.
"""

import argparse
import ast
import os
import sys
import time

import check_build

ROOT = check_build.ROOT
# Top-level modules a fast test may not load.
FRAMEWORKS = (
  "tensorflow",
  "tf_keras",
  "keras",
  "tensorflow_datasets",
  "tensorflow_model_optimization",
  "ai_edge_litert",
  "ai_edge_quantizer",
)
# Modules whose use starts a process.
PROCESS_MODULES = ("subprocess", "multiprocessing", "pty", "ray")
# The test helpers that run a command (`audit_binary`: in a subprocess; `binary_main`: its main).
PROCESS_HELPERS = ("tests/e2e/audit_binary.py", "tests/binary_main.py")
# Functions of `os` that start a process, and the process pool of `concurrent.futures`.
OS_PROCESS_CALLS = (
  "fork",
  "forkpty",
  "system",
  "popen",
  "posix_spawn",
  "posix_spawnp",
  "spawnl",
  "spawnle",
  "spawnlp",
  "spawnlpe",
  "spawnv",
  "spawnve",
  "spawnvp",
  "spawnvpe",
  "execl",
  "execle",
  "execlp",
  "execlpe",
  "execv",
  "execve",
  "execvp",
  "execvpe",
)
POOL = "ProcessPoolExecutor"


def every_test_file(root=ROOT):
  """The repo paths of the test files, sorted."""
  out = []
  for dirpath, dirnames, filenames in os.walk(os.path.join(root, "tests")):
    dirnames[:] = [d for d in dirnames if not d.startswith((".", "__"))]
    out += [
      os.path.relpath(os.path.join(dirpath, f), root).replace(os.sep, "/")
      for f in filenames
      if f.endswith("_test.py")
    ]
  return sorted(out)


def _process_call(path, root):
  """The first process-starting call named in a file (`os.fork`, ..., `POOL`), or None."""
  with open(os.path.join(root, path), encoding="utf-8") as f:
    tree = ast.parse(f.read(), path)
  for node in ast.walk(tree):
    if (
      isinstance(node, ast.Attribute)
      and node.attr in OS_PROCESS_CALLS
      and isinstance(node.value, ast.Name)
      and node.value.id == "os"
    ):
      return f"os.{node.attr} (line {node.lineno})"
    if POOL in (getattr(node, "attr", None), getattr(node, "id", None)):
      return f"{POOL} (line {node.lineno})"
  return None


class _Graph:
  """The import graph of the project's files, each read once per mode.

  A file is read as `called` (the test may call any of its functions: every import in it
  counts, and the project modules it imports are `called` too) or as loaded only (its
  module-level code runs: the imports there count, and the modules they load are loaded only).
  """

  def __init__(self, root):
    self.root = root
    self._edges = {}

  def edges(self, path, called):
    """([(project file, called)] it loads, [why it is slow]) of one file read in one mode."""
    if (path, called) not in self._edges:
      files, slow = [], []
      for name, line in check_build.imported_modules(path, self.root, in_functions=called):
        top = name.split(".")[0]
        if top in FRAMEWORKS:
          slow.append(f"imports {top} ({path}:{line})")
        elif top in PROCESS_MODULES:
          slow.append(f"starts a process: imports {top} ({path}:{line})")
        found = check_build.project_file(name, self.root) or _tool_file(name, self.root)
        if found:
          files += [(p, False) for p in _parent_packages(found, self.root)] + [(found, called)]
      call = _process_call(path, self.root)
      if path in PROCESS_HELPERS or call:
        slow.append(f"starts a process: {call or 'runs a command'} ({path})")
      self._edges[(path, called)] = (files, slow)
    return self._edges[(path, called)]

  def why_slow(self, test):
    """Why `test` is not fast (one line, with the chain of imports), or None if it is."""
    start = [(c, False) for c in _conftests(test, self.root)] + [(test, True)]
    via = {node: None for node in start}
    todo = list(start)
    while todo:
      node = todo.pop(0)
      files, slow = self.edges(*node)
      if slow:
        chain = []
        while node is not None:
          chain.append(node[0])
          node = via[node]
        return f"{slow[0]} via {' -> '.join(reversed(chain))}"
      for edge in files:
        if edge not in via and (edge[0], True) not in via:
          via[edge] = node
          todo.append(edge)
    return None


def _tool_file(name, root):
  """`tools/<name>.py` if `name` is one: the tests import the tools by their bare name (with
  `tools/` on `sys.path`)."""
  path = f"tools/{name}.py"
  return path if "." not in name and os.path.exists(os.path.join(root, path)) else None


def _parent_packages(path, root):
  """The `__init__.py` files Python runs before the module at `path` (outermost first)."""
  parts = path.split("/")[:-1]
  if path.endswith("/__init__.py"):
    parts = parts[:-1]
  inits = ("/".join(parts[:i] + ["__init__.py"]) for i in range(1, len(parts) + 1))
  return [p for p in inits if os.path.exists(os.path.join(root, p))]


def _conftests(test, root):
  parts = test.split("/")[:-1]
  paths = ("/".join(parts[:i] + ["conftest.py"]) for i in range(1, len(parts) + 1))
  return [p for p in paths if os.path.exists(os.path.join(root, p))]


def classify(root=ROOT):
  """{test file: None if fast, else why it is not (one line)} of the checkout at `root`."""
  graph = _Graph(root)
  return {test: graph.why_slow(test) for test in every_test_file(root)}


class _FrameworkWatch:
  """A pytest plugin of `run`: the first test after which a framework module was loaded."""

  def __init__(self):
    self.culprit = None

  def pytest_collection_finish(self, session):
    del session
    self._note("collecting the test files")

  def pytest_runtest_logfinish(self, nodeid, location):
    del location
    self._note(nodeid)

  def _note(self, where):
    if self.culprit is None and loaded_frameworks():
      self.culprit = where


def loaded_frameworks():
  """The `FRAMEWORKS` loaded in this process, sorted."""
  return sorted({m.split(".")[0] for m in sys.modules} & set(FRAMEWORKS))


def run(files, pytest_args=()):
  """Runs the test `files` (absolute paths) with pytest in this process.

  Returns:
    pytest's exit status, or 1 when a framework was loaded after all (one line on stderr
    names it and the first test after which it was loaded).
  """
  import pytest

  watch = _FrameworkWatch()
  start = time.monotonic()
  status = pytest.main(["-q", *pytest_args, *files], plugins=[watch])
  seconds = time.monotonic() - start
  loaded = loaded_frameworks()
  if loaded:
    print(
      f"fast_tests: FAILED: the fast tier loaded {', '.join(loaded)} (first after "
      f"{watch.culprit or 'the run'}): a fast test imports no TensorFlow; take the import "
      "off that test's path, or see why tools/fast_tests.py counted it fast",
      file=sys.stderr,
    )
    return 1
  print(f"fast_tests: {len(files)} test files in one process, {seconds:.1f} s")
  return int(status)


def main(argv=None):
  """`--list`, `--slow` or `--run` (further arguments go to pytest); the exit status."""
  parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
  mode = parser.add_mutually_exclusive_group(required=True)
  mode.add_argument("--list", action="store_true", help="print the fast test files")
  mode.add_argument("--slow", action="store_true", help="print the others, with why")
  mode.add_argument("--run", action="store_true", help="run the fast test files with pytest")
  args, pytest_args = parser.parse_known_args(argv)
  if pytest_args and not args.run:
    parser.error(f"unrecognized arguments: {' '.join(pytest_args)}")
  tiers = classify()
  fast = [t for t, why in tiers.items() if why is None]
  if args.list:
    print("\n".join(fast))
  elif args.slow:
    print("\n".join(f"{t}: {why}" for t, why in tiers.items() if why is not None))
  else:
    return run([os.path.join(ROOT, t) for t in fast], pytest_args)
  return 0


if __name__ == "__main__":
  sys.exit(main())
