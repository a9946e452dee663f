"""000's human study read back: a filled annotation file, checked against its key.

The key (`key.json`, `human_study_sample.read_key`) is found beside the export or given
(`key_path`); the filled CSV must hold every item of the key once, every attribute of the key as
a 0/1 column (plus any the user added) and nothing of another export (`read_annotations`). Any
mismatch is one `HumanStudyError` line.
"""

import csv
import io
import os

import numpy as np

from tf_forget.artifacts import errors
from tf_forget.artifacts import fileio
from tf_forget.artifacts import filesystem
from tf_forget.report import human_study_sample as sample


def key_path(options):
  """The key of `options.annotations` (see `Options.key`); raises if there is none."""
  if options.key is not None:
    return options.key
  candidates = []
  if options.export_dir is not None:
    candidates.append(filesystem.join(options.export_dir, sample.KEY_FILE))
  folder = os.path.dirname(os.path.abspath(options.annotations))
  if os.path.basename(folder) == sample.SHEET_DIR:
    candidates.append(os.path.join(os.path.dirname(folder), sample.KEY_FILE))
  for path in candidates:
    if filesystem.isfile(path):
      return path
  raise sample.HumanStudyError(
    f"no key for annotations {options.annotations}: pass the "
    "key.json the export wrote (--annotation_key)"
  )


def read_annotations(path, key):
  """Reads a filled annotation CSV and checks it against the key.

  Columns: `item`, then one 0/1 column per attribute (every attribute of the key, in any
  order, plus any the user added), free-text columns named `notes*`. Blank lines are skipped.

  Returns:
    (attribute columns in file order — the key's first, then the user's; int `[items, A]`
    0/1 values in the key's item order).

  Raises:
    human_study_sample.HumanStudyError: unreadable file, no `item` column, a missing or
      duplicate column, an unknown, duplicate or missing item, items of another export, a value
      other than 0 / 1.
  """
  try:
    data = fileio.read_bytes(path)
    text = data.decode("utf-8-sig")
  except errors.ReadError as e:
    raise sample.HumanStudyError(errors.one_line(e)) from e
  except UnicodeDecodeError as e:
    raise sample.HumanStudyError(
      f"annotations {path} are not UTF-8 text (byte 0x{data[e.start]:02x} at offset "
      f"{e.start}): re-save them as UTF-8"
    ) from e
  try:
    rows = [r for r in csv.reader(io.StringIO(text)) if any(c.strip() for c in r)]
  except csv.Error as e:
    raise sample.HumanStudyError(f"annotations {path} are not CSV: {errors.one_line(e)}") from e
  if not rows:
    raise sample.HumanStudyError(f"annotations {path} are empty")
  header = [c.strip() for c in rows[0]]
  where = f"annotations {path}"
  if sample.ITEM not in header:
    raise sample.HumanStudyError(
      f"{where} have no {sample.ITEM!r} column (header: {', '.join(header)[:120]})"
    )
  for i, name in enumerate(header):
    if not name:
      raise sample.HumanStudyError(f"{where}: column {i + 1} has no name")
    if header.count(name) > 1:
      raise sample.HumanStudyError(f"{where}: column {name!r} appears twice")
  missing = [a for a in key["attributes"] if a not in header]
  if missing:
    raise sample.HumanStudyError(
      f"{where} lack column {missing[0]!r} (the key's attributes: {', '.join(key['attributes'])})"
    )
  attrs = list(key["attributes"]) + [
    c
    for c in header
    if c != sample.ITEM and not c.startswith(sample.NOTES) and c not in key["attributes"]
  ]
  index = {it["item"]: i for i, it in enumerate(key["items"])}
  prefix = key["study"].get("study", "")
  values = np.full((len(index), len(attrs)), -1, np.int64)
  col = {c: header.index(c) for c in attrs}
  for n, row in enumerate(rows[1:], start=2):
    if len(row) > len(header):
      raise sample.HumanStudyError(
        f"{where} row {n} has {len(row)} cells, the header {len(header)}"
      )
    row = [c.strip() for c in row] + [""] * (len(header) - len(row))
    item = row[header.index(sample.ITEM)]
    if item not in index:
      if item and not item.startswith(prefix + "-"):
        raise sample.HumanStudyError(
          f"{where} belong to another export (row {n}: item "
          f"{item[:40]!r}; the key {key['study'].get('study')!r} is "
          f"for {_study(key)})"
        )
      raise sample.HumanStudyError(f"{where} row {n}: unknown item {item[:40]!r} (not in the key)")
    i = index[item]
    if values[i, 0] >= 0:
      raise sample.HumanStudyError(f"{where} row {n}: item {item!r} appears twice")
    for j, a in enumerate(attrs):
      cell = row[col[a]]
      if cell not in ("0", "1"):
        raise sample.HumanStudyError(
          f"{where} row {n} (item {item}), column {a!r}: {cell[:20]!r} is not 0 or 1"
        )
      values[i, j] = int(cell)
  absent = [it["item"] for it, v in zip(key["items"], values) if v[0] < 0]
  if absent:
    raise sample.HumanStudyError(
      f"{where} lack {len(absent)} of the key's {len(index)} items (first: {absent[0]})"
    )
  return attrs, values


def _study(key):
  s = key["study"]
  return (
    f"{s.get('variant')}, group {s.get('group')}, {s.get('per_group')} per group, "
    f"seed {s.get('seed')}"
  )
