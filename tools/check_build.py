"""Checks that every Bazel target lists the targets of the project modules its sources import.

    python tools/check_build.py          # the checkout this file is in; exit 1 on a finding

Each BUILD file is read by evaluating it with stand-ins for the rules it calls (`py_library`,
`py_binary`, `py_test`, `py_pytest`, `py_pytest_suite`): a target's `srcs` and `deps`. Each source's imports
of the project's packages (`tf_forget`, `eval`, `tflite_export`, `tests`, `tools`; read with
`ast`, also inside functions) are resolved to the file that defines the module (a package's
`__init__.py` aside: Python imports it with any of its modules), and that file to the target
whose `srcs` hold it. A package's own `__init__.py` is not checked: it imports its modules
lazily, inside functions, so that importing the package stays cheap. A finding, one line each (`BUILD:target: what`), is a source
importing a project module whose target is neither the target itself nor one of its `deps`,
or a module no target builds, and a test file (`tests/**/*_test.py`) that no target runs.
Third-party imports (the venv's) are not Bazel's to check.
"""

import ast
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
PACKAGES = ("tf_forget", "eval", "tflite_export", "tests", "tools")
RULES = ("py_library", "py_binary", "py_test", "py_pytest", "py_pytest_suite")


def _build_files(root):
  for top in PACKAGES:
    for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
      dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "__")))
      if "BUILD" in filenames:
        yield os.path.join(dirpath, "BUILD")


def read_targets(build, root=ROOT):
  """{label: {"srcs": [repo paths], "deps": [labels]}} of one BUILD file."""
  package = os.path.relpath(os.path.dirname(build), root).replace(os.sep, "/")
  targets = {}

  def rule(name, srcs=(), deps=(), src=None, **_):
    files = list(srcs) + ([src] if src else [])
    targets[f"//{package}:{name}"] = {
      "srcs": [f"{package}/{f}" for f in files if not f.startswith(("//", ":"))],
      "deps": [_label(d, package) for d in deps],
    }

  scope = {r: rule for r in RULES}
  scope.update(
    package=lambda **_: None,
    load=lambda *a, **k: None,
    exports_files=lambda *a, **k: None,
    glob=lambda *a, **k: [],
    filegroup=lambda **_: None,
    sh_binary=lambda **_: None,
    sh_test=lambda **_: None,
    genrule=lambda **_: None,
  )
  with open(build, encoding="utf-8") as f:
    exec(compile(f.read(), build, "exec"), scope)
  return targets


def _label(dep, package):
  if dep.startswith(":"):
    return f"//{package}{dep}"
  if dep.startswith("//") and ":" not in dep:
    return f"{dep}:{dep.rsplit('/', 1)[-1]}"
  return dep


def _module_file(module, root):
  """The repo path of the file that defines `module` (a.b.c), or None."""
  path = module.replace(".", "/")
  for candidate in (f"{path}.py", f"{path}/__init__.py"):
    if os.path.exists(os.path.join(root, candidate)):
      return candidate
  return None


def _import_nodes(tree, in_functions):
  """The import statements of `tree`: all of them, or (not `in_functions`) those that run when
  the module is imported (not inside a function body)."""
  if in_functions:
    yield from (n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)))
    return
  stack = [tree]
  while stack:
    node = stack.pop()
    if isinstance(node, (ast.Import, ast.ImportFrom)):
      yield node
    elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
      stack.extend(ast.iter_child_nodes(node))


def imported_modules(path, root=ROOT, in_functions=True):
  """The modules a source file imports, [(dotted name, line)], read with `ast` (also inside
  functions unless `in_functions` is False). `from a.b import c` names `a.b.c` when that is a
  project module, else `a.b` (`c` is then a name defined in `a.b`); relative imports are left
  out (the project has none)."""
  with open(os.path.join(root, path), encoding="utf-8") as f:
    tree = ast.parse(f.read(), path)
  out = []
  for node in _import_nodes(tree, in_functions):
    names = []
    if isinstance(node, ast.Import):
      names = [a.name for a in node.names]
    elif node.module and node.level == 0:
      names = [f"{node.module}.{a.name}" for a in node.names]
      if not any(_module_file(n, root) for n in names):  # `from a.b import function`
        names = [node.module]
    out.extend((name, node.lineno) for name in names)
  return out


def project_file(module, root=ROOT):
  """The repo path of the file that defines `module` (a.b.c) of the project's packages, or
  None (a third-party module, or no such file)."""
  if module.split(".")[0] not in PACKAGES:
    return None
  return _module_file(module, root)


def imports(path, root=ROOT):
  """The repo paths of the project modules a source file imports ({path: line})."""
  out = {}
  for name, line in imported_modules(path, root):
    found = project_file(name, root)
    if found and found != path and not found.endswith("__init__.py"):
      out.setdefault(found, line)
  return out


def findings(root=ROOT):
  """The findings of the checkout at `root`, one line each."""
  targets = {}
  for build in _build_files(root):
    targets.update(read_targets(build, root))
  owner = {src: label for label, t in targets.items() for src in t["srcs"]}
  out = []
  for label, t in sorted(targets.items()):
    for src in t["srcs"]:
      if src.endswith("__init__.py"):
        continue
      for module, line in sorted(imports(src, root).items()):
        dep = owner.get(module)
        if dep is None:
          out.append(f"{src}:{line}: imports {module}, which no BUILD target builds")
        elif dep is not None and dep != label and dep not in t["deps"]:
          out.append(f"{src}:{line}: {label} imports {module} without the dep {dep}")
  for test in _test_files(root):
    if test not in owner:
      out.append(f"{test}:1: no BUILD target runs this test file")
  return out


def _test_files(root):
  """The repo paths of the test files (`tests/**/*_test.py`), sorted."""
  found = []
  for folder, _, names in os.walk(os.path.join(root, "tests")):
    found += [
      os.path.relpath(os.path.join(folder, n), root) for n in names if n.endswith("_test.py")
    ]
  return sorted(found)


def main():
  found = findings()
  for line in found:
    print(line)
  print(f"{len(found)} finding(s)" if found else "BUILD deps: every project import is a dep")
  return 1 if found else 0


if __name__ == "__main__":
  sys.exit(main())
