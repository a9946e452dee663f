"""The failure record of a conversion that failed: a sparse-encoded twin that was not made.

    <run>/tflite/<member variant>/<k>/<stem>.failed.json     (`layout.tflite_failure`)

A sparse conversion that fails does not stop the export: the plain file stays, and this record
(docs/artifacts/tflite.md) says why, in one line, so that the evaluator, the encodings stage and
the report can say the twin is missing and why. A JSON object of `SCHEMA`: `variant`,
`member_variant`, `k`, `format`, `encoding`, `reason`, `plain_twin` (the plain file's name).
Written by `tf_forget.export.export.record_failure` (removed when a later conversion succeeds),
read by `tf_forget.evaluate.evaluate.list_failures`. JSON only (no TensorFlow).
"""

from tf_forget.artifacts import errors
from tf_forget.artifacts import json_record
from tf_forget.artifacts import layout
from tf_forget.artifacts import names

SCHEMA = "tf_forget.tflite_failure/1"
RECORD = json_record.Record(SCHEMA, "failure record")
# `read(file_path)` -> the checked dict; `write(file_path, doc)` -> the dict written, atomically.
read, write = RECORD.read, RECORD.write


def path(run_dir, variant, k):
  """`<stem>.failed.json` of a `names.Variant`'s export of member k."""
  return layout.tflite_failure(run_dir, variant, k)


def record(variant, k, reason):
  """The failure record of `variant`'s conversion of member k that failed with `reason`."""
  twin = names.plain_twin(variant)
  return {
    "schema": SCHEMA,
    "variant": variant.name,
    "member_variant": variant.member_variant,
    "k": k,
    "format": variant.format,
    "encoding": variant.encoding,
    "reason": errors.one_line(reason),
    "plain_twin": twin.file_stem + ".tflite",
  }
