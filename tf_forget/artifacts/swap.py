"""Replacing a set of files or directories whole: the report and the bundle.

A finished set of entries (files or directory trees) is built in a staging directory
`<dir>/<label>.tmp-<tag>` (`staging`), then `swap_in` replaces the entries of the same names in
`<dir>`, each old one first renamed into `<dir>/<label>.old-<tag>/`. A reader sees the old set
or the new one, never a mixture: on a local file system each step is one rename, and on an
error or an interrupt the swap is rolled back to the old entries whole. A swap killed half way
is finished or undone by the next `clean_staging`. `scheme://` file systems have no directory
rename: trees move file by file, the completion markers (`manifest.json`) out first and in last,
and a `<name>.moved` flag tells a wholly moved-aside tree from a half-moved one.

What a swap replaces is recorded: a swap with `record=True` (the report's and the
bundle's) keeps `<dir>/.tf_forget.<label>.files.json` listing the files it owns (`listing`):
before the first rename, those of the old entries and of the new ones (a swap killed half way
leaves either in place); once swapped, those of the new entries. A file under one of those
entries that the listing does not name (`deploy/notes.txt`, `tables/mine.csv`) is not
tf_forget's: `foreign_files` names it, and the audit refuses to replace the entry before it
writes anything (`tf_forget/pipeline/run_checks.py`), instead of deleting the user's file with
the old entry. Without a listing nothing there is known to be tf_forget's: every file under the
entries is named.

Built on `tf_forget.artifacts.fileio`'s primitives; no TensorFlow import.
"""

import contextlib
import errno
import os
import uuid

from tf_forget.artifacts import errors
from tf_forget.artifacts import fileio
from tf_forget.artifacts import filesystem

# A finished set of entries (files or directory trees) built in a staging
# directory `<dir>/<label>.tmp-<tag>` replaces the entries of the same names in `<dir>`, each old
# one first renamed into `<dir>/<label>.old-<tag>/`. The swap is complete once the staging
# directory no longer holds the last name; until then it can be rolled back, by this process on
# an error or by the next `clean_staging` after a kill.
_TMP, _OLD = ".tmp-", ".old-"
_MOVED = ".moved"  # `<aside>/<name>.moved`: the old entry `name` is wholly aside


def _tree_files(top):
  """Relative paths of the files under directory `top`."""
  return [
    os.path.join(dirpath[len(top) :].strip("/"), name)
    for dirpath, _, filenames in filesystem.walk(top)
    for name in filenames
  ]


def _move(src, dst, first=(), last=()):
  """Renames file or directory `src` to `dst`, replacing a file `dst`.

  Local: one rename (`dst` must not be a non-empty directory). URL (no directory rename): a
  tree is moved file by file into `dst`, the relative paths in `first` first and those in
  `last` last, then `src` is removed.

  Raises:
    errors.WriteError: a rename failed.
  """
  if not filesystem.is_url(src) or not filesystem.isdir(src):
    fileio.rename(src, dst)
    return
  for rel in sorted(_tree_files(src), key=lambda r: (r not in first, r in last, r)):
    filesystem.makedirs(filesystem.parent_dir(filesystem.join(dst, rel)))
    fileio.rename(filesystem.join(src, rel), filesystem.join(dst, rel))
  filesystem.rmtree(src)


def listing(directory, label):
  """`<directory>/.tf_forget.<label>.files.json`: the files the last swap of `label` put in
  place (named apart from the swap's own `<label>.tmp-*` / `<label>.old-*` entries)."""
  return filesystem.join(directory, f".tf_forget.{label.lstrip('.')}.files.json")


def _entry_files(directory, names):
  """Relative paths ("<name>" or "<name>/<file>") of the files of entries `names`."""
  out = []
  for name in names:
    path = filesystem.join(directory, name)
    if filesystem.isdir(path):
      out += sorted(f"{name}/{rel}" for rel in _tree_files(path))
    elif filesystem.exists(path):
      out.append(name)
  return out


def _listed(directory, label):
  """The files the listing of `label` names (a set), or None when there is no listing.

  Raises:
    errors.ReadError: the listing cannot be read.
  """
  path = listing(directory, label)
  if not filesystem.exists(path):
    return None
  recorded = fileio.read_json(path, "swap listing")
  return set(recorded.get("files") or []) if isinstance(recorded, dict) else set()


def foreign_files(directory, label, names):
  """Files under the entries `names` of `directory` that no swap of `label` recorded as its own
  (a user's notes in `deploy/`), as relative paths; without a listing, every file there.

  Raises:
    errors.ReadError: the listing cannot be read.
  """
  ours = _listed(directory, label) or set()
  return [rel for rel in _entry_files(directory, names) if rel not in ours]


def _remove_entry(path):
  """Removes a file or a directory tree if it exists (`errors.WriteError`)."""
  if filesystem.isdir(path):
    filesystem.rmtree(path)
  else:
    filesystem.remove(path)


def _remove_all(paths):
  """Removes each path; returns one-line notes "could not remove <path>: <reason>"."""
  notes = []
  for path in paths:
    try:
      _remove_entry(path)
    except errors.WriteError as e:
      notes.append(f"could not remove {path}: {str(e).split(': ', 1)[-1]}")
  return notes


def _aside(staging):
  """The directory a swap from `staging` moves the old entries into (`.tmp-` -> `.old-`)."""
  head, tag = staging.rsplit(_TMP, 1)
  return head + _OLD + tag


@contextlib.contextmanager
def staging(directory, label):
  """Yields a new empty staging directory `<directory>/<label>.tmp-<pid>-<id>` for `swap_in`.

  It is removed if the block raises (a `swap_in` that succeeds removes it too), unless a
  `swap_in` from it was left half done: that one is `clean_staging`'s to finish.

  Raises:
    errors.WriteError: it cannot be created.
  """
  path = filesystem.join(directory, f"{label}{_TMP}{os.getpid()}-{uuid.uuid4().hex[:8]}")
  filesystem.makedirs(path)
  try:
    yield path
  except BaseException:
    if not filesystem.exists(_aside(path)):
      _remove_all([path])
    raise


def _check_kinds(staging_dir, names):
  """Refuses to replace a directory by a file or a file by a directory (`errors.WriteError`)."""
  for name in names:
    old = filesystem.join(filesystem.parent_dir(staging_dir), name)
    new_is_dir = filesystem.isdir(filesystem.join(staging_dir, name))
    if filesystem.exists(old) and filesystem.isdir(old) != new_is_dir:
      code = errno.ENOTDIR if new_is_dir else errno.EISDIR
      raise errors.WriteError(f"cannot write {old}: {os.strerror(code)}")


def _roll_back(staging_dir, names, markers=()):
  """Undoes a `swap_in` from `staging_dir`, then removes it and its aside directory.

  Each old entry moved aside goes back: if it was wholly aside (always, locally), what is in its
  place (the new entry, or part of it) is removed first; otherwise (a URL tree moved aside in
  part) its files are merged back. A new entry that replaced nothing is removed.

  Raises:
    errors.WriteError: a removal or rename failed (a later `clean_staging` retries).
  """
  parent, aside = filesystem.parent_dir(staging_dir), _aside(staging_dir)
  for name in reversed(names):
    dst, old = filesystem.join(parent, name), filesystem.join(aside, name)
    new = filesystem.join(staging_dir, name)
    if filesystem.exists(old):
      # Locally one rename moved it aside whole; on a URL file system the flag says so.
      if filesystem.exists(old + _MOVED) or not filesystem.is_url(dst):
        _remove_entry(dst)
      _move(old, dst, last=markers)
    elif not filesystem.exists(new):
      _remove_entry(dst)
  filesystem.rmtree(aside)
  filesystem.rmtree(staging_dir)


def swap_in(staging_dir, names, markers=(), record=False):
  """Replaces the entries `names` of the staging directory's parent by the staged ones, whole.

  In order, each old entry is renamed into the aside directory `<label>.old-<tag>` and the new
  one renamed into place (one rename each on a local file system; file by file on a URL one),
  then the aside and staging directories are removed. Name the completion marker (report.json)
  last: a reader sees the old entries or the new ones.

  Args:
    staging_dir: from `staging`, holding every entry of `names` (files or directories).
    names: entry names in swap order.
    markers: relative paths inside a directory entry marking it complete ("manifest.json"):
      on a URL file system moved out first and in last.
    record: keep the `listing` of the files the swap owns (for `foreign_files`): the old
      entries' and the new ones' before the first rename, the new ones' once swapped.

  Returns:
    One-line notes about old entries that could not be removed (the new ones stand; the next
    `clean_staging` retries).

  Raises:
    errors.WriteError: an old entry is a directory where a file goes (or the reverse), or a
      rename failed; the old entries are then in place and the staging directory is gone.
  """
  parent, aside = filesystem.parent_dir(staging_dir), _aside(staging_dir)
  label = os.path.basename(staging_dir.rstrip("/")).rsplit(_TMP, 1)[0]
  before = _record_both(parent, label, names, staging_dir) if record else None
  try:
    _check_kinds(staging_dir, names)
    filesystem.makedirs(aside)
    for name in names:
      if filesystem.exists(filesystem.join(parent, name)):
        _move(filesystem.join(parent, name), filesystem.join(aside, name), first=markers)
        fileio.touch(filesystem.join(aside, name + _MOVED))
      _move(filesystem.join(staging_dir, name), filesystem.join(parent, name), last=markers)
  except BaseException:  # an error, or an interrupt: roll back, then re-raise
    with contextlib.suppress(errors.WriteError):
      _roll_back(staging_dir, names, markers)
    if record:
      with contextlib.suppress(errors.WriteError):
        _restore(listing(parent, label), before)
    raise
  notes = []
  if record:
    try:
      fileio.write_json(
        listing(parent, label), {"names": list(names), "files": _entry_files(parent, names)}
      )
    except errors.WriteError as e:
      notes.append(f"could not record what {label} holds: {errors.one_line(e)}")
  return notes + _remove_all([aside, staging_dir])


def _record_both(parent, label, names, staging_dir):
  """Writes the listing of `label` naming the files of the old entries (as last recorded) and
  of the staged ones, before a swap moves either; returns the old listing's bytes (None: none).

  Raises:
    errors.WriteError: the listing cannot be written (nothing has moved).
  """
  path = listing(parent, label)
  before = fileio.read_bytes(path) if filesystem.exists(path) else None
  try:
    old = _listed(parent, label) or set()
  except errors.ReadError:  # a garbled listing names nothing
    old = set()
  files = sorted(old | set(_entry_files(staging_dir, names)))
  fileio.write_json(path, {"names": list(names), "files": files})
  return before


def _restore(path, before):
  """Puts back the listing `path` as `before` (its bytes; None: no listing)."""
  if before is None:
    filesystem.remove(path)
  else:
    fileio.write_bytes(path, before)


def clean_staging(directory, label, names, markers=()):
  """Finishes what a killed swap of `label` left in `directory` (call before a new swap).

  A swap killed before its last new entry moved in is rolled back (the old entries restored
  whole); a completed one's old entries are removed; so are staging directories of killed
  builds. Assumes one writer per directory.

  Returns:
    One-line notes about what could not be restored or removed.
  """
  notes = []
  for entry in filesystem.listdir(directory):
    if not entry.startswith(label + _OLD):
      continue
    staged = filesystem.join(directory, label + _TMP + entry[len(label + _OLD) :])
    try:
      if filesystem.exists(filesystem.join(staged, names[-1])):  # killed before the swap completed
        _roll_back(staged, names, markers)
    except errors.WriteError as e:
      notes.append(f"could not restore {filesystem.join(directory, entry)}: {errors.one_line(e)}")
  return notes + _remove_all(
    [
      filesystem.join(directory, e)
      for e in filesystem.listdir(directory)
      if e.startswith((label + _TMP, label + _OLD))
    ]
  )


def replace_dir(src, dst, last=()):
  """Replaces directory `dst` by the finished directory `src` (`swap_in` of one entry).

  Args:
    src: the new directory (moved, so gone afterwards).
    dst: the directory to replace (may not exist).
    last: relative paths of completion markers ("manifest.json"), see `swap_in`.

  Returns:
    One-line notes (see `swap_in`, `clean_staging`).

  Raises:
    errors.WriteError: see `swap_in`; `dst` is then as it was.
  """
  parent, name = filesystem.parent_dir(dst) or ".", os.path.basename(dst)
  notes = clean_staging(parent, name, (name,), last)
  with staging(parent, name) as tmp:
    _move(src, filesystem.join(tmp, name), last=last)
    return notes + swap_in(tmp, (name,), last)
