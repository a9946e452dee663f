"""A run directory's `audit.json`: what the run was made with (docs/artifacts/runs.md).

    <run>/audit.json     (`layout.audit_file`)

A JSON object of `SCHEMA`: `config`, the run's identity (what decides whether a re-run may
reuse the run's artifacts, `tf_forget.pipeline.run_identity`); `audit_config`, the whole
configuration (`tf_forget.config.tree.AuditConfig.to_json`: `audit --config=<run>/audit.json`
runs it again, `tree.load`); `caveats`, what the checks found without refusing. Its schema and
identity make a directory a run of tf_forget's (`run_lock`). JSON only (no TensorFlow).
"""

from tf_forget.artifacts import fileio
from tf_forget.artifacts import layout

SCHEMA = "tf_forget.audit/1"
IDENTITY_KEY = "config"  # the run's identity
CONFIG_KEY = "audit_config"  # the whole configuration
CAVEATS_KEY = "caveats"


def path(run_dir):
  """`<run>/audit.json`."""
  return layout.audit_file(run_dir)


def read(file_path, what="audit config", limit=None):
  """The audit.json at `file_path`, a dict of `SCHEMA`.

  Args:
    file_path: the file.
    what: how errors name it.
    limit: optional largest size in bytes (`fileio.read_json`).

  Raises:
    errors.SchemaError: a readable file that is not an object of `SCHEMA`.
    errors.ReadError: missing, truncated or not JSON.
  """
  return fileio.read_record(file_path, SCHEMA, what, limit)


def write(file_path, identity, config_json, caveats=()):
  """Writes an audit.json atomically: the run's `identity`, the whole configuration
  `config_json` (a JSON-ready dict) and `caveats` (sentences); returns the dict written.

  Raises:
    errors.WriteError: the file cannot be written.
  """
  doc = {
    "schema": SCHEMA,
    IDENTITY_KEY: identity,
    CONFIG_KEY: config_json,
    CAVEATS_KEY: list(caveats),
  }
  fileio.write_json(file_path, doc)
  return doc
