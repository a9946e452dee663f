"""A run directory's `run.json`: the population its members belong to (docs/artifacts/members.md).

    <run>/run.json     (`layout.run_file`)

A JSON object of `SCHEMA`: the population's identity (`dataset`, `dataset_options`, `model`,
... of `tf_forget.train.population.PopulationConfig.identity`; for the user's own models their
`references`), `variants` (every member variant of the run, in order: later stages add theirs)
and `members` (K). Written by the training stage (`tf_forget.train.population`) or the import
of the user's references (`tf_forget.pipeline.import_stages`); the pruning stages add their
variants (`tf_forget.prune.pruned_population.register_variants`). JSON only (no TensorFlow).
"""

from tf_forget.artifacts import fileio
from tf_forget.artifacts import layout

SCHEMA = "tf_forget.run/1"


def path(run_dir):
  """`<run>/run.json`."""
  return layout.run_file(run_dir)


def read(file_path):
  """The run.json at `file_path`, a dict of `SCHEMA`.

  Raises:
    errors.SchemaError: a readable file that is not an object of `SCHEMA`.
    errors.ReadError: missing, truncated or not JSON.
  """
  return fileio.read_record(file_path, SCHEMA, "run config")


def write(file_path, doc):
  """Writes the run.json `doc` (its `schema` set to `SCHEMA`) atomically; returns it.

  Raises:
    errors.WriteError: the file cannot be written.
  """
  doc = dict(doc, schema=SCHEMA)
  fileio.write_json(file_path, doc)
  return doc
