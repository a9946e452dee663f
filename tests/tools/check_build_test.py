"""Every Bazel target lists the targets of the project modules it imports (tools/check_build.py),
and a planted missing dep and an unbuilt module are each caught."""

import os
import sys

from tests import files

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import check_build


def test_the_checkout_has_every_import_as_a_dep():
  assert check_build.findings(ROOT) == []


def test_a_missing_dep_and_an_unbuilt_module_are_reported(tmp_path):
  root = str(tmp_path)
  files.write_text(root, "tf_forget/__init__.py", "")
  files.write_text(root, "tf_forget/a/__init__.py", "")
  files.write_text(root, "tf_forget/a/b.py", "X = 1\n")
  files.write_text(root, "tf_forget/a/c.py", "from tf_forget.a import b\n")
  files.write_text(
    root, "tf_forget/a/d.py", "def f():\n  from tf_forget.a import e\n  import numpy\n"
  )
  files.write_text(root, "tf_forget/a/e.py", "from tf_forget.a.b import X\n")
  files.write_text(
    root,
    "tf_forget/a/BUILD",
    'py_library(name = "b", srcs = ["b.py"])\n'
    'py_library(name = "c", srcs = ["c.py"])\n'  # imports b without the dep
    'py_library(name = "d", srcs = ["d.py"])\n'
    'py_library(name = "e", srcs = ["e.py"], deps = [":b"])\n',
  )
  assert check_build.findings(root) == [
    "tf_forget/a/c.py:1: //tf_forget/a:c imports tf_forget/a/b.py without the dep //tf_forget/a:b",
    "tf_forget/a/d.py:2: //tf_forget/a:d imports tf_forget/a/e.py without the dep //tf_forget/a:e",
  ]
  files.write_text(root, "tf_forget/a/BUILD", 'py_library(name = "c", srcs = ["c.py"])\n')
  assert check_build.findings(root) == [
    "tf_forget/a/c.py:1: imports tf_forget/a/b.py, which no BUILD target builds"
  ]


def test_a_test_file_no_target_runs_is_reported(tmp_path):
  root = str(tmp_path)
  files.write_text(root, "tests/__init__.py", "")
  files.write_text(root, "tests/a/a_test.py", "def test_a():\n  pass\n")
  files.write_text(root, "tests/a/b_test.py", "def test_b():\n  pass\n")
  files.write_text(root, "tests/a/c_test.py", "def test_c():\n  pass\n")
  files.write_text(
    root,
    "tests/a/BUILD",
    'py_pytest_suite(name = "a_tests", srcs = ["a_test.py"])\n'
    'py_pytest(name = "b_test", src = "b_test.py")\n',
  )
  assert check_build.findings(root) == ["tests/a/c_test.py:1: no BUILD target runs this test file"]
