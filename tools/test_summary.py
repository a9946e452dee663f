"""Sums the pytest results of every Bazel test target and prints one closing line.

    python tools/test_summary.py bazel-testlogs

prints e.g. `bazel: 212 passed, 0 failed, 3 skipped` (failures and errors count as failed; a
target killed by Bazel's timeout counts as one more failure, even if its tests had passed) and
exits non-zero if a target has no readable results.
"""

import glob
import os
import sys
import xml.etree.ElementTree as ET


def main(testlogs):
  passed = failed = skipped = 0
  files = sorted(glob.glob(os.path.join(testlogs, "**", "test.xml"), recursive=True))
  for path in files:
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    for suite in suites:
      tests = int(suite.get("tests", 0))
      bad = int(suite.get("failures", 0)) + int(suite.get("errors", 0))
      skip = int(suite.get("skipped", 0))
      passed += tests - bad - skip
      failed += bad
      skipped += skip
  for log in sorted(glob.glob(os.path.join(testlogs, "**", "test.log"), recursive=True)):
    with open(log, errors="replace") as f:
      if any("-- Test timed out at " in line for line in f):
        failed += 1
        print(f"timed out: {os.path.relpath(os.path.dirname(log), testlogs)}", file=sys.stderr)
  if not files:
    print("bazel: no test results found", file=sys.stderr)
    return 1
  print(f"bazel: {passed} passed, {failed} failed, {skipped} skipped")
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "bazel-testlogs"))
