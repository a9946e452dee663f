"""A member's `metadata.json`: what the member is and what it was made from.

    <run>/members/<member variant>/<k>/metadata.json     (`layout.member_metadata`)

Written last into a member's directory (its presence marks a finished member), by training
(`tf_forget.train.member`), the import of the user's reference (`tf_forget.train.imported`)
and pruning after training (`tf_forget.train.member_files.derived_metadata`). A JSON object of
`SCHEMA`: `variant`, `k`, `dataset` and its options, `model` and its options, `seed`,
`model_sha256`, `inputs` (lineage), ... (docs/artifacts/members.md). JSON only (no TensorFlow).
"""

from tf_forget.artifacts import fileio
from tf_forget.artifacts import layout

SCHEMA = "tf_forget.member/1"


def path(run_dir, member_variant, k):
  """`<run>/members/<member variant>/<k>/metadata.json`."""
  return layout.member_metadata(run_dir, member_variant, k)


def read(file_path):
  """The member metadata at `file_path`, a dict of `SCHEMA`.

  Raises:
    errors.SchemaError: a readable file that is not an object of `SCHEMA`.
    errors.ReadError: missing, truncated or not JSON.
  """
  return fileio.read_record(file_path, SCHEMA, "member metadata")


def write(file_path, doc):
  """Writes the metadata `doc` (its `schema` set to `SCHEMA`) atomically; returns it.

  Raises:
    errors.WriteError: the file cannot be written.
  """
  doc = dict(doc, schema=SCHEMA)
  fileio.write_json(file_path, doc)
  return doc
