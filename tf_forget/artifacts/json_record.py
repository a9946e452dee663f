"""An on-disk JSON artifact of one schema: its checked `read` and its atomic `write`.

Every JSON artifact module of this package (`encodings`, `run_json`, `member_metadata`, ...)
declares one `Record` — its schema id and the words errors name the file by — and offers its
`read` and `write`, so the check of the schema and the atomic write are written once
(`fileio.read_record`, `fileio.write_json`). JSON only (no TensorFlow).
"""

import dataclasses

from tf_forget.artifacts import fileio


@dataclasses.dataclass(frozen=True)
class Record:
  """A JSON artifact kind.

  Attributes:
    schema: the schema id every file of the kind records ("tf_forget.<artifact>/<version>").
    what: how an error names such a file ("encodings artifact").
  """

  schema: str
  what: str

  def read(self, file_path, limit=None):
    """The JSON object at `file_path`, which must record `schema`.

    Raises:
      errors.SchemaError: a readable file that is not an object of `schema`.
      errors.ReadError: missing, truncated, larger than `limit` bytes or not JSON.
    """
    return fileio.read_record(file_path, self.schema, self.what, limit)

  def write(self, file_path, doc):
    """Writes `doc` with its `schema` key set, atomically; returns the dict written.

    Raises:
      errors.WriteError: the file cannot be written.
    """
    doc = dict(doc, schema=self.schema)
    fileio.write_json(file_path, doc)
    return doc
