"""The user's data identified by its content before an audit runs.

A split's spelling and options (`folder:images`, split "test") do not say whether its images
changed, so while the audit is validated (nothing written yet), `attach` hashes every file of the
user's data — the audited data set's splits, the `--calibration`, `--train` and
`--deployment_images` data
(`tf_forget.data.fingerprint`: path, size, sha256; Pillow checks every image's header, and
a PNG's chunks, before anything is written) — and records the digests in the audited data set's
options (`predictions.CONTENT`: {split: digest} at the top level, "content" inside the
`calibration`, `train_data` and `deployment_images` sources). Every artifact made from a split records
`predictions.split_identity`, which holds that split's digest, so a changed file redoes exactly
what depends on it: predictions, Keras predictions, corruptions and layer analyses of the
changed split; the full int8 export of changed calibration data (its lineage holds the
calibration source); one-shot members of changed train data (`train_view.fingerprint`).

After the run directory is locked, `write` stores each role's files with their size, mtime,
ctime and inode in `<run>/data/<role>.json` (`layout.data_fingerprint`): the next run hashes
only files whose size, mtime, ctime or inode changed (`fingerprint.Entry.unchanged`), and
`lines` says what changed ("the test split changed: 10 moved, 20 added"). The registered data sets (digits, tfds protocols) are not the user's files: they
get no digest, and their identities are as before.
"""

import dataclasses
import os
from typing import Optional

from tf_forget.artifacts import errors
from tf_forget.artifacts import fileio
from tf_forget.artifacts import filesystem
from tf_forget.artifacts import layout
from tf_forget.artifacts import predictions
from tf_forget.data import deployment_view
from tf_forget.data import fingerprint as fingerprint_lib
from tf_forget.data import registry as data_registry
from tf_forget.data import train_view
from tf_forget.data import user_sets
from tf_forget.export import export_state

SCHEMA = "tf_forget.data_files/1"
CONTENT = predictions.CONTENT


@dataclasses.dataclass(frozen=True)
class Hashed:
  """One role's files: what `write` stores and `lines` compares."""

  role: str
  what: str
  fingerprint: fingerprint_lib.Fingerprint
  previous: tuple  # the `Entry`s the run directory recorded, () if none
  files: tuple = ()  # the (relative path, path) the fingerprint read, in its order
  # (path, size, mtime, ctime, inode) of the folders from each file up to the data's root,
  # taken right after the files were listed (`finished_run`); None for a URL.
  folders: Optional[tuple] = None


def _root(source, paths):
  """The data's root: the folder its spelling names (or its pattern's folder) and its files'."""
  options = source.spec.options
  named = options.get("path") or (options.get("pattern") and os.path.dirname(options["pattern"]))
  named = [os.path.abspath(named)] if named and not filesystem.is_url(named) else []
  return os.path.commonpath(paths + named) if paths or named else None


def _folders(source, files):
  """The rows of `Hashed.folders` (None: a URL, or a folder gone)."""
  if any(filesystem.is_url(path) for _, path in files):
    return None
  paths = [os.path.abspath(path) for _, path in files]
  root = _root(source, paths)
  if root is None:
    return None
  found = {root}
  for path in paths:
    folder = os.path.dirname(path)
    while folder not in found and folder.startswith(root + os.sep):
      found.add(folder)
      folder = os.path.dirname(folder)
  rows = []
  for folder in sorted(found):
    try:
      st = os.stat(folder)
    except OSError:
      return None
    rows.append((folder, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino))
  return tuple(rows)


def _previous(out, role):
  """The entries `<out>/data/<role>.json` records ((), if none or unreadable)."""
  path = layout.data_fingerprint(out, role)
  try:
    if not filesystem.exists(path):
      return ()
    doc = fileio.read_json(path, "data files")
    return tuple(fingerprint_lib.entries_from_json(doc.get("files")))
  except (errors.Error, ValueError, TypeError):
    return ()


def _hash(source, split, role, what, out, max_pixels):
  previous = _previous(out, role)

  def name(rel):
    return f"{what}: {rel}"

  files = tuple(source.content_files(split))
  folders = _folders(source, files)
  fp = fingerprint_lib.fingerprint(
    files,
    cache=fingerprint_lib.cache_of(previous),
    check=fingerprint_lib.image_check(name, max_pixels),
    name=name,
  )
  return Hashed(role, what, fp, previous, files, folders)


def _spelling(dataset):
  """How the command line spelled the data set: `folder:/data/images`, `tfds:mnist`, ..."""
  options = dataset.spec.options
  where = options.get("path") or options.get("pattern") or options.get("tfds_name")
  return f"{dataset.spec.name}:{where}" if where else dataset.spec.name


def _source(dataset, key, build):
  """The (data set, split) the `key` option ("calibration", "train_data") names, or None."""
  if not dataset.spec.options.get(key):
    return None
  return build(dataset)


def _deployment_source(dataset):
  view = deployment_view.DeploymentView(dataset)
  return view.source, view.split


def _train_source(dataset):
  view = train_view.of(dataset)
  return view.source, view.split


def attach(p, out, max_pixels=fingerprint_lib.DEFAULT_MAX_PIXELS):
  """The plan `p` with its user data set's content recorded, and the hashed files.

  Args:
    p: the `audit_plan.Plan`.
    out: the run directory (its `data/*.json` are read, never written, here).
    max_pixels: the largest image accepted (`--max_image_pixels`).

  Returns:
    (plan, [Hashed]): `p` unchanged and [] when the data set is a registered one.

  Raises:
    dataset_api.DataError: a file cannot be read, an image is not a whole image or is too large.
  """
  dataset = p.dataset
  if not isinstance(dataset, user_sets.UserDataset):
    return p, []
  spelled = _spelling(dataset)
  hashed = [
    _hash(dataset, split, split, f"{split} split of {spelled}", out, max_pixels)
    for split in dataset.spec.splits
  ]
  options = dict(dataset.spec.options)
  options[CONTENT] = {h.role: h.fingerprint.digest for h in hashed}
  for key, role, build in (
    ("calibration", "calibration", export_state.calibration_source),
    (train_view.OPTION, "train_data", _train_source),
    (deployment_view.OPTION, "deployment_images", _deployment_source),
  ):
    found = _source(dataset, key, build)
    if found is None:
      continue
    source, split = found
    if not isinstance(source, user_sets.UserDataset):
      continue
    h = _hash(
      source, split, role, f"{role.replace('_', ' ')} data {_spelling(source)}", out, max_pixels
    )
    hashed.append(h)
    options[key] = dict(options[key], **{CONTENT: h.fingerprint.digest})
  recorded = {k: options[k] for k in user_sets.RECORDED if k in options}
  rebuilt = data_registry.keep(dataset.with_recorded(**recorded))
  population = dataclasses.replace(p.population, dataset_options=dict(rebuilt.spec.options))
  return dataclasses.replace(p, dataset=rebuilt, population=population), hashed


def lines(hashed):
  """What the audit says of the user's data: per role, its files and how many were read (the
  others are unchanged since the last run), and what changed since then."""
  out = []
  for h in hashed:
    fp = h.fingerprint
    out.append(
      f"  data: {h.what}: {len(fp.entries)} files, {fp.hashed} read "
      f"({len(fp.entries) - fp.hashed} unchanged since the last run)"
    )
    what = fingerprint_lib.describe(h.previous, fp.entries) if h.previous else ""
    if what:
      out.append(
        f"  the {h.what} changed since the last run ({what}): what was made from it is redone"
      )
  return out


def write(out, hashed):
  """Stores each role's files in `<out>/data/<role>.json` (after the run directory is locked)."""
  for h in hashed:
    fileio.write_json(
      layout.data_fingerprint(out, h.role),
      {
        "schema": SCHEMA,
        "role": h.role,
        "what": h.what,
        "digest": h.fingerprint.digest,
        "files": [e.to_json() for e in h.fingerprint.entries],
      },
      compact=True,
    )
