"""The agreement table of one split: every evaluated file against its references.

    <run>/eval/agreement/<split>.json     (`layout.agreement`; docs/artifacts/predictions.md)

Written by the evaluation stage (`tf_forget.evaluate.population_eval`) for each split it ran:
one row per (variant, member) with its top-1 agreement with the member's float32 file, its
Keras model and, for a sparse-encoded file, its plain twin (`vs_plain_twin`: the twin check the
encodings stage reads, `tf_forget.evaluate.encodings`), their summaries, and the sparse
conversions that failed (`twin_failures`). A JSON object of `SCHEMA`. JSON only (no TensorFlow).
"""

from tf_forget.artifacts import json_record
from tf_forget.artifacts import layout

SCHEMA = "tf_forget.agreement/1"
RECORD = json_record.Record(SCHEMA, "agreement table")
# `read(file_path)` -> the checked dict; `write(file_path, doc)` -> the dict written, atomically.
read, write = RECORD.read, RECORD.write


def path(run_dir, split):
  """`<run>/eval/agreement/<split>.json` (`names.SplitNameError` for a bad split name)."""
  return layout.agreement(run_dir, split)
