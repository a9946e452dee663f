"""A member's `metadata.json`: what the member is and what it was made from.

    <run>/members/<member variant>/<k>/metadata.json     (`layout.member_metadata`)

Written last into a member's directory (its presence marks a finished member), by training
(`tf_forget.train.member`), the import of the user's reference (`tf_forget.train.imported`)
and pruning after training (`tf_forget.train.member_files.derived_metadata`). A JSON object of
`SCHEMA`: `variant`, `k`, `dataset` and its options, `model` and its options, `seed`,
`model_sha256`, `inputs` (lineage), ... (docs/artifacts/members.md). JSON only (no TensorFlow).
"""

from tf_forget.artifacts import json_record
from tf_forget.artifacts import layout

SCHEMA = "tf_forget.member/1"
RECORD = json_record.Record(SCHEMA, "member metadata")
# `read(file_path)` -> the checked dict; `write(file_path, doc)` -> the dict written, atomically.
read, write = RECORD.read, RECORD.write


def path(run_dir, member_variant, k):
  """`<run>/members/<member variant>/<k>/metadata.json`."""
  return layout.member_metadata(run_dir, member_variant, k)
