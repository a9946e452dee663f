"""The deployment encodings artifact: per audited variant, the file a bundle ships and why.

    <run>/eval/encodings.json        (`layout.encodings`; docs/artifacts/predictions.md)

Written by the encodings stage (`tf_forget.evaluate.encodings.choose`: plain or sparse per
variant, with sizes, latencies, the chosen file's delegation and targets, and the `inputs` a
recorded decision is reused for); read again by that stage on a re-run, and by the report's
deployment table (`tf_forget.report.deployment`). A JSON object of `SCHEMA`: `split`, `k`, the
settings that decide (`mode`, `max_sparse_latency_ratio`, `batch_sizes`, `num_threads`,
`repeats`, `block`, `coverage`) and `variants` ({variant: entry}). JSON only (no TensorFlow).
"""

from tf_forget.artifacts import fileio
from tf_forget.artifacts import layout

SCHEMA = "tf_forget.encodings/1"


def path(run_dir):
  """`<run>/eval/encodings.json`."""
  return layout.encodings(run_dir)


def read(file_path):
  """The encodings artifact at `file_path`, a dict of `SCHEMA`.

  Raises:
    errors.SchemaError: a readable file that is not an object of `SCHEMA`.
    errors.ReadError: missing, truncated or not JSON.
  """
  return fileio.read_record(file_path, SCHEMA, "encodings artifact")


def write(file_path, doc):
  """Writes `doc` (its `schema` set to `SCHEMA`) atomically; returns the dict written.

  Raises:
    errors.WriteError: the file cannot be written.
  """
  doc = dict(doc, schema=SCHEMA)
  fileio.write_json(file_path, doc)
  return doc
