"""Sparse-encoded twins: layout, metadata, size bound, failures that keep the plain.

Size bound tested (stated in docs/artifacts/tflite.md): TFLite's sparse format stores, per
sparse-encoded kernel, the non-zero values plus CSR metadata: one index per stored value and one
segment boundary per row (rows = elements / innermost dimension, + 1). With indices and segments
at their widest (int32, 4 B) and 1 KiB per kernel for the flatbuffer tables
(`SparsityParameters`, two `DimensionMetadata`, traversal order, alignment), a file can never be
larger than

  plain_size - zeros * b + 4 * nonzeros + 4 * (rows + 1) + 1024 * kernels

with b the stored bytes per weight (4 float32, 2 float16, 1 int8). A kernel the converter leaves
dense (sparsity < 30% or tiny) would break the bound only by its own zeros * b, which for this
model's 72-weight conv kernel is within the 1 KiB slack. A sparse conversion that did nothing
(sparse size == plain size) fails the bound for every format at 90% sparsity.
"""

import json
import os

import pytest

from tests.export import fake_run
from tf_forget.artifacts import names
from tf_forget.artifacts import tflite_failure
from tf_forget.compat import keras2
from tf_forget.export import converter
from tf_forget.export import export
from tf_forget.export import export_state
from tf_forget.export import flatbuffer

_BYTES = {"float32": 4, "float16": 2, "int8": 1}
TARGET = 0.9


@pytest.fixture(scope="module")
def run(tmp_path_factory):
  run_dir = str(tmp_path_factory.mktemp("run"))
  dataset = fake_run.SyntheticDataset()
  dense = fake_run.train(fake_run.tiny_cnn(0), dataset, epochs=2)
  pruned = fake_run.prune(dense, dataset, TARGET)
  fake_run.write_member(run_dir, "dense", 0, dense)
  fake_run.write_member(run_dir, "prune_0.9", 0, pruned)
  results = export.export_population(
    run_dir,
    ["float32"],
    list(names.FORMAT_NAMES),
    representative_size=30,
    dataset=dataset,
    encodings=("sparse", "plain"),
  )
  return run_dir, dataset, pruned, results


def _meta(run_dir, variant):
  with open(export_state.export_paths(run_dir, variant, 0)[1]) as f:
    return json.load(f)


def test_plan_puts_plain_before_sparse():
  jobs = export_state.plan(
    [("dense", 0), ("prune_0.9", 1)], ["float32"], ["full_int8"], encodings=("sparse", "plain")
  )
  assert [(v.name, k) for v, k in jobs] == [
    ("dense", 0),
    ("float32+sparse", 0),
    ("prune_0.9+full_int8", 1),
    ("prune_0.9+full_int8+sparse", 1),
  ]
  assert [v.name for v, _ in export_state.plan([("dense", 0)], ["float32"])] == ["dense"]
  # The audit's plan: sparse twins of the pruned members only.
  jobs = export_state.plan(
    [("dense", 0), ("prune_0.9", 0)],
    ["float32", "full_int8"],
    ["float32"],
    encodings=("plain", "sparse"),
    dense_encodings=("plain",),
  )
  assert [v.name for v, _ in jobs] == ["dense", "full_int8", "prune_0.9", "prune_0.9+sparse"]


def test_layout_names_and_metadata(run):
  run_dir, _, _, results = run
  assert [r["variant"] for r in results] == [
    "dense",
    "float32+sparse",
    "prune_0.9",
    "prune_0.9+sparse",
    "prune_0.9+float16",
    "prune_0.9+float16+sparse",
    "prune_0.9+dynamic_int8",
    "prune_0.9+dynamic_int8+sparse",
    "prune_0.9+full_int8",
    "prune_0.9+full_int8+sparse",
  ]
  variant = names.Variant("prune_0.9", "full_int8", "sparse")
  path, meta_path = export_state.export_paths(run_dir, variant, 0)
  assert path == os.path.join(run_dir, "tflite", "prune_0.9", "0", "full_int8+sparse.tflite")
  meta = _meta(run_dir, variant)
  plain = _meta(run_dir, names.plain_twin(variant))
  with open(path, "rb") as f:
    data = f.read()
  assert meta["variant"] == "prune_0.9+full_int8+sparse"
  assert meta["encoding"] == "sparse" and plain["encoding"] == "plain"
  assert meta["sha256"] == export_state.sha256(data) != plain["sha256"]
  assert meta["size_bytes"] == flatbuffer.sizes(data)
  assert meta["sparse_tensors"] and not plain["sparse_tensors"]
  assert meta["plain_twin"]["sha256"] == plain["sha256"]
  assert meta["plain_twin"]["size_ratio"] == pytest.approx(len(data) / plain["size_bytes"]["raw"])
  assert meta["io"] == plain["io"] and meta["representative"] == plain["representative"]
  # Sparsity counted from the sparse file (missing elements = zeros) equals the plain file's.
  assert meta["sparsity"]["kernels"] == plain["sparsity"]["kernels"]
  assert meta["sparsity"]["kernels"]["fraction"] >= TARGET - 0.01


def test_sparsity_matches_keras_kernels(run):
  run_dir, _, pruned, _ = run
  zeros, count = fake_run.kernel_zeros(pruned)  # counted on the Keras model, independently
  meta = _meta(run_dir, names.Variant("prune_0.9", "float32", "sparse"))
  assert (meta["sparsity"]["kernels"]["zeros"], meta["sparsity"]["kernels"]["count"]) == (
    zeros,
    count,
  )


def _rows(model):
  """Rows of every kernel in TFLite layout: elements / input channels (innermost dim)."""
  keras = keras2.keras()
  return [
    int(layer.kernel.shape.num_elements() // layer.kernel.shape[-2])
    for layer in model.layers
    if isinstance(layer, (keras.layers.Conv2D, keras.layers.Dense))
  ]


@pytest.mark.parametrize("fmt", list(names.FORMAT_NAMES))
def test_sparse_file_smaller_by_what_sparsity_allows(run, fmt):
  run_dir, _, pruned, _ = run
  plain = _meta(run_dir, names.Variant("prune_0.9", fmt))
  sparse = _meta(run_dir, names.Variant("prune_0.9", fmt, "sparse"))
  rows = _rows(pruned)
  removable = sum(k["zeros"] * _BYTES[k["dtype"]] for k in plain["sparsity"]["per_kernel"].values())
  nonzeros = plain["sparsity"]["kernels"]["count"] - plain["sparsity"]["kernels"]["zeros"]
  bound = (
    plain["size_bytes"]["raw"]
    - removable
    + 4 * nonzeros
    + 4 * sum(r + 1 for r in rows)
    + 1024 * len(rows)
  )
  assert sparse["size_bytes"]["raw"] <= bound, (fmt, sparse["size_bytes"]["raw"], bound)
  assert bound < plain["size_bytes"]["raw"]  # the bound itself demands a saving


def test_rerun_skips_sparse_twins(run):
  run_dir, dataset, _, _ = run
  again = export.export_population(
    run_dir,
    ["float32"],
    ["float32"],
    representative_size=30,
    dataset=dataset,
    encodings=("plain", "sparse"),
  )
  assert all(r["skipped"] for r in again)
  assert [r["variant"] for r in again] == [
    "dense",
    "float32+sparse",
    "prune_0.9",
    "prune_0.9+sparse",
  ]


def test_failed_sparse_conversion_is_recorded_and_plain_stays(tmp_path, monkeypatch):
  run_dir = str(tmp_path)
  dataset = fake_run.SyntheticDataset()
  fake_run.write_member(run_dir, "dense", 0, fake_run.tiny_cnn(0))
  real = converter.convert

  def failing(model, fmt, rep=None, encoding="plain"):
    if encoding == "sparse":
      raise converter.ConversionError(
        "TFLite conversion to float32 (sparse encoding) failed: densify pass\nbroke"
      )
    return real(model, fmt, rep, encoding)

  monkeypatch.setattr(converter, "convert", failing)
  lines = []
  results = export.export_population(
    run_dir, ["float32"], [], dataset=dataset, encodings=("plain", "sparse"), log=lines.append
  )
  assert [r["variant"] for r in results] == ["dense", "float32+sparse"]
  assert "failed" not in results[0]
  reason = results[1]["failed"]
  assert "densify pass broke" in reason and "\n" not in reason
  sparse = names.Variant("dense", "float32", "sparse")
  path, meta_path = export_state.export_paths(run_dir, sparse, 0)
  assert not os.path.exists(path) and not os.path.exists(meta_path)
  with open(tflite_failure.path(run_dir, sparse, 0)) as f:
    record = json.load(f)
  assert record["schema"] == tflite_failure.SCHEMA and record["reason"] == reason
  assert record["plain_twin"] == "float32.tflite"
  assert export_state.is_complete(run_dir, names.Variant("dense"), 0)
  assert any(l.startswith("FAILED float32+sparse/0") for l in lines)
  # A later successful conversion removes the stale failure record.
  monkeypatch.setattr(converter, "convert", real)
  export.export_population(run_dir, ["float32"], [], dataset=dataset, encodings=("plain", "sparse"))
  assert os.path.exists(path) and not os.path.exists(tflite_failure.path(run_dir, sparse, 0))


def test_plain_conversion_failure_still_raises(tmp_path, monkeypatch):
  fake_run.write_member(str(tmp_path), "dense", 0, fake_run.tiny_cnn(0))

  def failing(*args, **kwargs):
    raise converter.ConversionError("boom")

  monkeypatch.setattr(converter, "convert", failing)
  with pytest.raises(converter.ConversionError, match="boom"):
    export.export_population(str(tmp_path), ["float32"], [], encodings=("plain", "sparse"))
