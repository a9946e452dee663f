"""The recipe "A TFLite format" (docs/architecture.md): an added record is converted and recorded.

`tests/extra_format.py` adds `int8_float_io` (integer-only ops, float32 input and output) to
the format table; `export_population` converts a member to it with the record's options, the
export JSON records them (and hashes them into its lineage), and LiteRT runs the file.
(`tests/artifacts/add_format_test.py` follows the record into the names, the report's styles
and the cost plan.)
"""

import json

import numpy as np

from tests import extra_format
from tests.export import fake_run
from tf_forget.artifacts import names
from tf_forget.evaluate import batched
from tf_forget.export import export
from tf_forget.export import export_state
from tf_forget.export import flatbuffer_graph


def test_a_member_is_converted_to_the_added_format(tmp_path, monkeypatch):
  fmt = extra_format.add(monkeypatch)
  run_dir = str(tmp_path)
  dataset = fake_run.SyntheticDataset()
  fake_run.write_member(run_dir, "dense", 0, fake_run.tiny_cnn(0))
  results = export.export_population(
    run_dir, ["float32", fmt], [], representative_size=30, dataset=dataset
  )
  assert [(r["variant"], r["skipped"]) for r in results] == [("dense", False), (fmt, False)]
  path, meta_path = export_state.export_paths(run_dir, names.Variant("dense", fmt), 0)
  with open(meta_path) as f:
    meta = json.load(f)
  with open(path, "rb") as f:
    data = f.read()
  assert meta["format"] == fmt and meta["representative"]["size"] == 30
  assert meta["converter"]["options"] == dict(
    optimize=True, supported_types=[], int8_only=True, io_type=None, representative=True
  )
  assert meta["inputs"]["converter"] == export_state.converter_key(
    extra_format.RECORD.options, "plain"
  )
  # Integer ops inside, float32 at the interface: the converter's QUANTIZE / DEQUANTIZE ops.
  graph = flatbuffer_graph.graph(data)
  assert {"QUANTIZE", "DEQUANTIZE"} <= {op.name for op in graph.ops}
  assert any(t.dtype == "int8" for t in graph.tensors)
  runner = batched.BatchedRunner(data, batch_size=8)
  assert runner.input_dtype == np.float32 and runner.output_dtype == np.float32
  scores = runner.run(dataset.take("test", 8).images)
  assert scores.shape == (8, fake_run.NUM_CLASSES) and np.isfinite(scores).all()
  again = export.export_population(run_dir, [fmt], [], representative_size=30, dataset=dataset)
  assert [r["skipped"] for r in again] == [True]  # its lineage holds on a re-run
