"""Sums the pytest results of every Bazel test target and prints one closing line.

    python tools/test_summary.py bazel-testlogs [//pkg:target ...]

prints one `skipped N: <target>: <reason>` line per skip reason, then e.g.
`bazel: 212 passed, 0 failed, 3 skipped` (failures and errors count as failed; a
target killed by Bazel's timeout counts as one more failure, even if its tests had passed) and
exits non-zero if a target has no readable results. With target labels (the Makefile passes the
non-manual test targets from `bazel query`), only those targets' logs count, and a target
without results counts as failed: bazel-testlogs keeps the logs of deleted targets, which must
not count.
"""

import glob
import os
import sys
import xml.etree.ElementTree as ET


def _target_dir(testlogs, label):
  """bazel-testlogs/<package>/<name> of `//package:name`."""
  package, _, name = label.lstrip("/").partition(":")
  return os.path.join(testlogs, package, name)


def main(testlogs, labels=()):
  passed = failed = skipped = 0
  if labels:
    dirs = [_target_dir(testlogs, label) for label in labels]
    missing = [
      label for label, d in zip(labels, dirs) if not os.path.exists(os.path.join(d, "test.xml"))
    ]
    for label in missing:
      print(f"no results: {label}", file=sys.stderr)
    failed += len(missing)
    files = sorted(
      os.path.join(d, "test.xml") for d in dirs if os.path.exists(os.path.join(d, "test.xml"))
    )
    logs = sorted(
      os.path.join(d, "test.log") for d in dirs if os.path.exists(os.path.join(d, "test.log"))
    )
  else:
    missing = []
    files = sorted(glob.glob(os.path.join(testlogs, "**", "test.xml"), recursive=True))
    logs = sorted(glob.glob(os.path.join(testlogs, "**", "test.log"), recursive=True))
  reasons = {}
  for path in files:
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    for case in root.iter("testcase"):
      for skip in case.findall("skipped"):
        target = os.path.relpath(os.path.dirname(path), testlogs)
        reasons.setdefault((target, skip.get("message", "")), 0)
        reasons[(target, skip.get("message", ""))] += 1
    for suite in suites:
      tests = int(suite.get("tests", 0))
      bad = int(suite.get("failures", 0)) + int(suite.get("errors", 0))
      skip = int(suite.get("skipped", 0))
      passed += tests - bad - skip
      failed += bad
      skipped += skip
  for log in logs:
    with open(log, errors="replace") as f:
      if any("-- Test timed out at " in line for line in f):
        failed += 1
        print(f"timed out: {os.path.relpath(os.path.dirname(log), testlogs)}", file=sys.stderr)
  if not files:
    print("bazel: no test results found", file=sys.stderr)
    return 1
  for (target, message), n in sorted(reasons.items()):  # a skip is never silent
    print(f"skipped {n}: {target}: {message}")
  print(f"bazel: {passed} passed, {failed} failed, {skipped} skipped")
  return 1 if labels and missing else 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "bazel-testlogs", sys.argv[2:]))
