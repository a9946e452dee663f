"""Export of a population run: layout, metadata, re-run skip, bad input leaves nothing."""

import json
import os

import pytest

from tests.export import fake_run
from tf_forget.artifacts import names
from tf_forget.artifacts import tflite_json
from tf_forget.export import converter
from tf_forget.export import export
from tf_forget.export import export_state


@pytest.fixture(scope="module")
def run(tmp_path_factory):
  run_dir = str(tmp_path_factory.mktemp("run"))
  dataset = fake_run.SyntheticDataset()
  fake_run.write_member(run_dir, "dense", 0, fake_run.tiny_cnn(0))
  fake_run.write_member(run_dir, "prune_0.5", 0, fake_run.tiny_cnn(1))
  results = export.export_population(
    run_dir, ["float32", "full_int8"], ["float32"], representative_size=30, dataset=dataset
  )
  return run_dir, dataset, results


def test_layout_and_metadata(run):
  run_dir, _, results = run
  assert [(r["variant"], r["skipped"]) for r in results] == [
    ("dense", False),
    ("full_int8", False),
    ("prune_0.5", False),
  ]
  path, meta_path = export_state.export_paths(run_dir, names.Variant("dense", "full_int8"), 0)
  assert path == os.path.join(run_dir, "tflite", "dense", "0", "full_int8.tflite")
  with open(meta_path) as f:
    meta = json.load(f)
  with open(path, "rb") as f:
    data = f.read()
  assert meta["schema"] == tflite_json.SCHEMA
  assert meta["format"] == "full_int8" and meta["encoding"] == "plain"
  assert meta["sha256"] == export_state.sha256(data)
  assert meta["size_bytes"]["raw"] == len(data)
  assert meta["representative"]["size"] == 30
  assert meta["representative"]["first_ids"] == [0, 1, 2, 3, 4]  # first train ids, in order
  assert meta["source"]["model"] == "members/dense/0/model.keras"
  assert meta["versions"]["tensorflow"].startswith("2.")
  assert meta["io"]["inputs"][0]["dtype"] == "int8"
  assert 0.0 <= meta["sparsity"]["kernels"]["fraction"] <= 1.0
  assert not [n for n in os.listdir(os.path.dirname(path)) if ".tmp-" in n]


def test_rerun_skips_and_repairs(run):
  run_dir, dataset, _ = run
  variant = names.Variant("dense", "float32")
  path, _ = export_state.export_paths(run_dir, variant, 0)
  mtime = os.stat(path).st_mtime_ns
  again = export.export_population(
    run_dir, ["float32", "full_int8"], ["float32"], representative_size=30, dataset=dataset
  )
  assert all(r["skipped"] for r in again)
  assert os.stat(path).st_mtime_ns == mtime
  with open(path, "r+b") as f:  # a corrupted file no longer matches its sha256
    f.truncate(100)
  assert not export_state.is_complete(run_dir, variant, 0)
  redo = export.export_member(run_dir, variant, 0)
  assert not redo["skipped"] and export_state.is_complete(run_dir, variant, 0)


def test_representative_shape_mismatch(run):
  run_dir, _, _ = run
  with pytest.raises(converter.ConversionError, match="shape"):
    export.export_member(
      run_dir,
      names.Variant("prune_0.5", "full_int8"),
      0,
      dataset=fake_run.SyntheticDataset(image_shape=(9, 9, 1)),
    )
  assert not os.path.exists(os.path.join(run_dir, "tflite", "prune_0.5", "0", "full_int8.tflite"))


def make_unwritable(path):
  """Makes `path` a directory nobody can create entries in: a regular file (works as root)."""
  with open(path, "w") as f:
    f.write("not a directory\n")


def test_unwritable_output(tmp_path):
  run_dir = str(tmp_path)
  fake_run.write_member(run_dir, "dense", 0, fake_run.tiny_cnn(0))
  make_unwritable(os.path.join(run_dir, "tflite"))
  with pytest.raises(export_state.ExportError, match="cannot write"):
    export.export_member(run_dir, names.Variant("dense", "float32"), 0)
  assert sorted(os.listdir(run_dir)) == ["members", "tflite"]


def test_missing_members(tmp_path):
  with pytest.raises(export_state.ExportError, match="no members"):
    export_state.list_members(str(tmp_path))


def test_plan_applies_quantization_to_dense_only():
  jobs = export_state.plan([("dense", 0), ("prune_0.9", 0)], ["float32", "full_int8"], ["float32"])
  assert [(v.name, k) for v, k in jobs] == [("dense", 0), ("full_int8", 0), ("prune_0.9", 0)]
  jobs = export_state.plan([("prune_0.9", 1)], ["float32"], ["float32", "full_int8"])
  assert [v.name for v, _ in jobs] == ["prune_0.9", "prune_0.9+full_int8"]
