"""Files on disk in tests: a planted text file, snapshots to check nothing changed, and a rename
that fails once, to check that a swap rolls back."""

import contextlib
import errno
import os
import signal


def write_text(root, rel, text):
  """Writes `text` to `root/rel`, making its folders (a planted tree's file)."""
  path = os.path.join(root, rel)
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, "w", encoding="utf-8") as f:
    f.write(text)


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
    walked = (
      os.walk(top)
      if os.path.isdir(top)
      else ([(os.path.dirname(top), [], [os.path.basename(top)])] if os.path.exists(top) else [])
    )
    for d, _, names in walked:
      for name in names:
        with open(os.path.join(d, name), "rb") as f:
          files[os.path.relpath(os.path.join(d, name), root)] = f.read()
  return files


def fail_once_renaming_to(monkeypatch, target):
  """Makes the first `os.replace` / `os.rename` onto `target` fail with EIO.

  Returns:
    A list that holds `target` once that rename has failed (empty while it has not).
  """
  failed = []

  def once(real):
    def rename(src, dst, **kwargs):
      if os.fspath(dst) == target and not failed:
        failed.append(dst)
        raise OSError(errno.EIO, "Input/output error")
      return real(src, dst, **kwargs)

    return rename

  monkeypatch.setattr(os, "replace", once(os.replace))
  monkeypatch.setattr(os, "rename", once(os.rename))
  return failed


@contextlib.contextmanager
def time_bound(seconds=30):
  """Fails the test (`TimeoutError`) instead of hanging when the block runs over `seconds`."""

  def expire(signum, frame):
    raise TimeoutError(f"still running after {seconds} s")

  previous = signal.signal(signal.SIGALRM, expire)
  signal.alarm(seconds)
  try:
    yield
  finally:
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)
