"""The attributes CSV of the user's own data sets (`user_sets`, docs/artifacts/data.md): one row
per example, its boolean attributes by name.

The data set matches the rows to its examples (`user_sets.UserDataset`); this module only reads
and checks the file itself.
"""

import csv
import io
import posixpath

import numpy as np

from tf_forget.data import dataset_api
from tf_forget.data import user_inputs

KEY_COLUMNS = ("path", "id")
TRUE, FALSE = ("1", "true"), ("0", "false")


class AttributeCsv:
  """An attributes CSV: one row per example, keyed by `path` (folder) or `id`.

  Columns: `path` (the image's path relative to the folder root) or `id` (the int64 id); an
  optional `split` (`train` / `test`; needed with `id` keys when the data set has two splits);
  every other column is an attribute: binary when all its values are 0/1/true/false (any
  case) — named as the column — else categorical: value v of column c becomes the boolean
  attribute "c=v" (values sorted). Empty cells are refused.
  """

  def __init__(self, path):
    self.path = path
    rows = [
      r
      for r in csv.reader(io.StringIO(user_inputs.read_text(path, "attributes CSV")))
      if any(cell.strip() for cell in r)
    ]
    if not rows:
      raise dataset_api.DataError(f"attributes CSV {path} is empty")
    header = [h.strip() for h in rows[0]]
    self.key = next((k for k in KEY_COLUMNS if k in header), None)
    if self.key is None:
      raise dataset_api.DataError(
        f"attributes CSV {path} needs a column 'path' or 'id' (columns: {', '.join(header)})"
      )
    user_inputs.parse_names(header, f"the header of attributes CSV {path}")
    body = rows[1:]
    for line, row in enumerate(body, start=2):
      if len(row) != len(header):
        raise dataset_api.DataError(
          f"attributes CSV {path} line {line}: {len(row)} fields, the header has {len(header)}"
        )
    cells = {h: [row[j].strip() for row in body] for j, h in enumerate(header)}
    for h, values in cells.items():
      if "" in values:
        raise dataset_api.DataError(
          f"attributes CSV {path} line {values.index('') + 2}: empty {h!r}"
        )
    self.keys = [self._key(v, line) for line, v in enumerate(cells[self.key], start=2)]
    self.splits = cells.get("split")
    self.names, self.values = [], {}
    for column in (h for h in header if h not in KEY_COLUMNS + ("split",)):
      values = cells[column]
      if {v.lower() for v in values} <= set(TRUE + FALSE):
        self._add(column, np.array([v.lower() in TRUE for v in values], bool))
      else:
        for value in sorted(set(values)):
          self._add(f"{column}={value}", np.array([v == value for v in values], bool))
    if not self.names:
      raise dataset_api.DataError(f"attributes CSV {path} has no attribute column")

  def _key(self, value, line):
    if self.key == "path":
      return posixpath.normpath(value.replace("\\", "/"))
    try:
      return int(value)
    except ValueError as e:
      raise dataset_api.DataError(
        f"attributes CSV {self.path} line {line}: id {value!r} is not an integer"
      ) from e

  def _add(self, name, values):
    if name in self.values:
      raise dataset_api.DataError(f"attributes CSV {self.path} defines attribute {name!r} twice")
    self.names.append(name)
    self.values[name] = values
