"""The export JSON: what a `.tflite` file of the run is, how it was made, and its lineage.

    <run>/tflite/<member variant>/<k>/<stem>.json     (`layout.tflite_paths`)

Beside each `<stem>.tflite` (`names.Variant.file_stem`: the format, `<format>+sparse`, a
repaired `full_int8~<repair>` or a user's `user_<NAME>`), written after the file: its presence
marks a finished export. A JSON object of `SCHEMA`: `variant`, `member_variant`, `k`, `format`,
`encoding`, `sha256` and `size_bytes` of the file, the converter and its options, the source
model, `inputs` (lineage: `tf_forget.export.export_state.status`), ... Written by the export
(`tf_forget.export.export.write_export`), read by the export on a re-run, the evaluator, the
encodings stage, the repairs, the report and the bundle. JSON only (no TensorFlow).
"""

from tf_forget.artifacts import json_record
from tf_forget.artifacts import layout

SCHEMA = "tf_forget.tflite/1"
RECORD = json_record.Record(SCHEMA, "export JSON")
# `read(file_path)` -> the checked dict; `write(file_path, doc)` -> the dict written, atomically.
read, write = RECORD.read, RECORD.write


def paths(run_dir, variant, k):
  """(`.tflite` path, `.json` path) of a `names.Variant`'s export of member k."""
  return layout.tflite_paths(run_dir, variant, k)


def is_export_json(file_name):
  """Whether a file name in `tflite/<member variant>/<k>/` may be an export JSON: `<stem>.json`,
  neither a failure record (`<stem>.failed.json`) nor a writer's temporary name."""
  return (
    file_name.endswith(".json")
    and not file_name.endswith(".failed.json")
    and ".tmp-" not in file_name
  )
