"""The deployment encodings artifact: per audited variant, the file a bundle ships and why.

    <run>/eval/encodings.json        (`layout.encodings`; docs/artifacts/predictions.md)

Written by the encodings stage (`tf_forget.evaluate.encodings.choose`: plain or sparse per
variant, with sizes, latencies, the chosen file's delegation and targets, and the `inputs` a
recorded decision is reused for); read again by that stage on a re-run, and by the report's
deployment table (`tf_forget.report.deployment`). A JSON object of `SCHEMA`: `split`, `k`, the
settings that decide (`mode`, `max_sparse_latency_ratio`, `batch_sizes`, `num_threads`,
`repeats`, `block`, `coverage`, `min_rounds`, `precision`) and `variants` ({variant: entry}).
JSON only (no TensorFlow).
"""

from tf_forget.artifacts import json_record
from tf_forget.artifacts import layout

SCHEMA = "tf_forget.encodings/1"
RECORD = json_record.Record(SCHEMA, "encodings artifact")
# `read(file_path)` -> the checked dict; `write(file_path, doc)` -> the dict written, atomically.
read, write = RECORD.read, RECORD.write


def path(run_dir):
  """`<run>/eval/encodings.json`."""
  return layout.encodings(run_dir)
