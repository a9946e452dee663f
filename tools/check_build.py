"""Checks that every Bazel target lists the targets of the project modules its sources import.

    python tools/check_build.py          # the checkout this file is in; exit 1 on a finding

Each BUILD file is read by evaluating it with stand-ins for the rules it calls (`py_library`,
`py_binary`, `py_test`, `py_pytest`, ...): a target's `srcs` and `deps`. Each source's imports
of the project's packages (`tf_forget`, `eval`, `tflite_export`, `tests`, `tools`; read with
`ast`, also inside functions) are resolved to the file that defines the module (a package's
`__init__.py` aside: Python imports it with any of its modules), and that file to the target
whose `srcs` hold it. A package's own `__init__.py` is not checked: it imports its modules
lazily, inside functions, so that importing the package stays cheap. A finding, one line each (`BUILD:target: what`), is a source
importing a project module whose target is neither the target itself nor one of its `deps`,
or a module no target builds. Third-party imports (the venv's) are not Bazel's to check.
"""

import ast
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
PACKAGES = ("tf_forget", "eval", "tflite_export", "tests", "tools")
RULES = ("py_library", "py_binary", "py_test", "py_pytest")


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
        "deps": [_label(d, package) for d in deps]}

  scope = {r: rule for r in RULES}
  scope.update(package=lambda **_: None, load=lambda *a, **k: None,
               exports_files=lambda *a, **k: None, glob=lambda *a, **k: [],
               filegroup=lambda **_: None, sh_binary=lambda **_: None,
               sh_test=lambda **_: None, genrule=lambda **_: None)
  with open(build, encoding="utf-8") as f:
    exec(compile(f.read(), build, "exec"), scope)  # pylint: disable=exec-used
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


def imports(path, root=ROOT):
  """The repo paths of the project modules a source file imports ({path: line})."""
  with open(os.path.join(root, path), encoding="utf-8") as f:
    tree = ast.parse(f.read(), path)
  out = {}
  for node in ast.walk(tree):
    names = []
    if isinstance(node, ast.Import):
      names = [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
      names = [f"{node.module}.{a.name}" for a in node.names]
      if not any(_module_file(n, root) for n in names):  # `from a.b import function`
        names = [node.module]
    for name in names:
      if name.split(".")[0] not in PACKAGES:
        continue
      found = _module_file(name, root)
      if found and found != path and not found.endswith("__init__.py"):
        out.setdefault(found, node.lineno)
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
  return out


def main():
  found = findings()
  for line in found:
    print(line)
  print(f"{len(found)} finding(s)" if found else "BUILD deps: every project import is a dep")
  return 1 if found else 0


if __name__ == "__main__":
  sys.exit(main())
