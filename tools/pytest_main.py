"""Runs the pytest files given as arguments: the main of every Bazel py_test (see pytest.bzl).

Under `bazel test`, pytest's JUnit XML replaces Bazel's test.xml (XML_OUTPUT_FILE), so
tools/test_summary.py can count the individual tests of every target.
"""

import os
import sys

import pytest

if __name__ == "__main__":
  args = ["-q", "-p", "no:cacheprovider", *sys.argv[1:]]
  if os.environ.get("XML_OUTPUT_FILE"):
    args.append(f"--junitxml={os.environ['XML_OUTPUT_FILE']}")
  sys.exit(pytest.main(args))
