"""A member's layer analysis: where one of its files departs from its float32 file, and why.

    <run>/layers/<member variant>/<k>/<format>.json     (`layout.layers`; docs/artifacts/layers.md)

Written by `tf_forget.evaluate.layer_analysis.analyze` for a full int8 file (per layer, on the
forgotten, worst-class and stable examples; for a file that forgot something significant, the
causal ranking and the activation ranges) or a file the user brings (tensor by tensor); read by
the repairs and the report (`tf_forget.report.repair_report`). A JSON object of `SCHEMA`:
`member_variant`, `k`, `format`, `reference`, `split`, `basis`, `subsets`, `flips`,
`worst_class`, `rows`, `ranking`, `inputs` (lineage), ... JSON only (no TensorFlow).
"""

from tf_forget.artifacts import json_record
from tf_forget.artifacts import layout

SCHEMA = "tf_forget.layers/1"
RECORD = json_record.Record(SCHEMA, "layer analysis")
# `read(file_path)` -> the checked dict; `write(file_path, doc)` -> the dict written, atomically.
read, write = RECORD.read, RECORD.write


def path(run_dir, member_variant, k, file_format):
  """`<run>/layers/<member variant>/<k>/<format>.json`."""
  return layout.layers(run_dir, member_variant, k, file_format)
