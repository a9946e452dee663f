"""The rows of a user data set's attributes CSV, matched to its examples.

An attributes CSV (`attributes_csv.AttributeCsv`) keys its rows by example id (with a column
`split` when the data set has several) or, for a folder, by image path. `AttributeRows` indexes
the rows per split, refuses a key given twice, checks once per split that every example has a
row and every row an example, and gives the attributes of a batch's ids. Every refusal is a
one-line `dataset_api.DataError` naming the CSV line or the example.
"""

import numpy as np

from tf_forget.data import dataset_api


class AttributeRows:
  """The attributes of a data set's examples, by split and id."""

  def __init__(self, csv, dataset, path_rows):
    """Indexes the rows of `csv` (raises `dataset_api.DataError` for a bad split or a key twice).

    Args:
      csv: the `attributes_csv.AttributeCsv`.
      dataset: the `user_sets.UserDataset` it describes (its `spec`, `_describe`, `_split_ids`).
      path_rows: callable() -> (splits, ids) of every row of a CSV keyed by `path`.
    """
    self.csv, self._dataset, self._index, self._checked = csv, dataset, {}, set()
    splits, ids = path_rows() if csv.key == "path" else (self._row_splits(), csv.keys)
    rows = {s: ([], []) for s in dataset.spec.splits}
    for row, (split, key) in enumerate(zip(splits, ids)):
      rows[split][0].append(key)
      rows[split][1].append(row)
    for split, (keys, numbers) in rows.items():
      keys, numbers = np.asarray(keys, np.int64), np.asarray(numbers, np.int64)
      order = np.argsort(keys, kind="stable")
      keys, numbers = keys[order], numbers[order]
      twice = np.flatnonzero(keys[1:] == keys[:-1])
      if twice.size:
        raise dataset_api.DataError(
          f"attributes CSV {csv.path} line {numbers[twice[0] + 1] + 2}"
          f": a second row for {dataset._describe(split, None, keys[twice[0]])}"
        )
      self._index[split] = (keys, numbers)

  def _row_splits(self):
    """The split of every CSV row, for `id` keys."""
    csv, splits = self.csv, self._dataset.spec.splits
    if csv.splits is not None:
      for line, s in enumerate(csv.splits, start=2):
        if s not in splits:
          raise dataset_api.DataError(
            f"attributes CSV {csv.path} line {line}: split {s!r} is not one of {', '.join(splits)}"
          )
      return list(csv.splits)
    if len(splits) > 1:
      raise dataset_api.DataError(
        f"attributes CSV {csv.path} is keyed by id but the data set "
        f"has splits {', '.join(splits)}: add a column 'split'"
      )
    return [splits[0]] * len(csv.keys)

  def check(self, split):
    """Raises DataError naming the first example without a row, or the first row of no
    example, of `split` (once per split; a pass over the split's ids, no image read)."""
    if split in self._checked:
      return
    keys, numbers = self._index[split]
    ids = self._dataset._split_ids(split)
    found = np.isin(ids, keys)
    if not found.all():
      first = int(np.flatnonzero(~found)[0])
      raise dataset_api.DataError(
        f"attributes CSV {self.csv.path} has no row for "
        f"{self._dataset._describe(split, first, ids[first])}"
      )
    known = np.isin(keys, ids)
    if not known.all():
      line = int(np.min(numbers[~known])) + 2
      raise dataset_api.DataError(
        f"attributes CSV {self.csv.path} line {line}: "
        f"{self.csv.key} {self.csv.keys[line - 2]!r} is no example of split {split!r}"
      )
    self._checked.add(split)

  def of(self, split, ids):
    """{attribute name: values} of the examples `ids` of `split`."""
    keys, numbers = self._index[split]
    rows = numbers[np.searchsorted(keys, ids)]
    return {n: self.csv.values[n][rows] for n in self.csv.names}
