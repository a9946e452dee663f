"""A run directory's `run.json`: the population its members belong to (docs/artifacts/members.md).

    <run>/run.json     (`layout.run_file`)

A JSON object of `SCHEMA`: the population's identity (`dataset`, `dataset_options`, `model`,
... of `tf_forget.train.population.PopulationConfig.identity`; for the user's own models their
`references`), `variants` (every member variant of the run, in order: later stages add theirs)
and `members` (K). Written by the training stage (`tf_forget.train.population`) or the import
of the user's references (`tf_forget.pipeline.import_stages`); the pruning stages add their
variants (`tf_forget.prune.pruned_population.register_variants`). JSON only (no TensorFlow).
"""

from tf_forget.artifacts import json_record
from tf_forget.artifacts import layout

SCHEMA = "tf_forget.run/1"
RECORD = json_record.Record(SCHEMA, "run config")
# `read(file_path)` -> the checked dict; `write(file_path, doc)` -> the dict written, atomically.
read, write = RECORD.read, RECORD.write


def path(run_dir):
  """`<run>/run.json`."""
  return layout.run_file(run_dir)
