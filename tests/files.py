"""Snapshots of files on disk, for tests that check nothing changed (issue #25)."""

import os


def snapshot(root, entries=None):
  """{path relative to `root`: bytes} of every file under `root` (or only under `entries`).

  Args:
    root: a local directory.
    entries: optional names of files or directories directly under `root` to include; missing
      ones are skipped.
  """
  tops = [root] if entries is None else [os.path.join(root, e) for e in entries]
  files = {}
  for top in tops:
    walked = os.walk(top) if os.path.isdir(top) else (
        [(os.path.dirname(top), [], [os.path.basename(top)])] if os.path.exists(top) else [])
    for d, _, names in walked:
      for name in names:
        with open(os.path.join(d, name), "rb") as f:
          files[os.path.relpath(os.path.join(d, name), root)] = f.read()
  return files
