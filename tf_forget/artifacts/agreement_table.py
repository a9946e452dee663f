"""The agreement table of one split: every evaluated file against its references.

    <run>/eval/agreement/<split>.json     (`layout.agreement`; docs/artifacts/predictions.md)

Written by the evaluation stage (`tf_forget.evaluate.population_eval`) for each split it ran:
one row per (variant, member) with its top-1 agreement with the member's float32 file, its
Keras model and, for a sparse-encoded file, its plain twin (`vs_plain_twin`: the twin check the
encodings stage reads, `tf_forget.evaluate.encodings`), their summaries, and the sparse
conversions that failed (`twin_failures`). A JSON object of `SCHEMA`. JSON only (no TensorFlow).
"""

from tf_forget.artifacts import fileio
from tf_forget.artifacts import layout

SCHEMA = "tf_forget.agreement/1"


def path(run_dir, split):
  """`<run>/eval/agreement/<split>.json` (`names.SplitNameError` for a bad split name)."""
  return layout.agreement(run_dir, split)


def read(file_path):
  """The agreement table at `file_path`, a dict of `SCHEMA`.

  Raises:
    errors.SchemaError: a readable file that is not an object of `SCHEMA`.
    errors.ReadError: missing, truncated or not JSON.
  """
  return fileio.read_record(file_path, SCHEMA, "agreement table")


def write(file_path, table):
  """Writes the agreement `table` (its `schema` set to `SCHEMA`) atomically; returns it.

  Raises:
    errors.WriteError: the file cannot be written.
  """
  table = dict(table, schema=SCHEMA)
  fileio.write_json(file_path, table)
  return table
