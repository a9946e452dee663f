"""The audit's per-variant encoding choice with real files (issue #10): `eval.encodings`."""

import json
import os

import numpy as np
import pytest

from eval import deploy
from eval import encodings
from eval import population
from tests.tflite_export import fake_run
from tf_forget.report import deployment
from tflite_export import export


@pytest.fixture(scope="module")
def run(tmp_path_factory):
  run_dir = str(tmp_path_factory.mktemp("run"))
  model, dataset, _ = fake_run.trained_exports()
  fake_run.write_member(run_dir, "dense", 0, model)
  fake_run.write_member(run_dir, "prune_0.9", 0, fake_run.prune(model, dataset, 0.9))
  export.export_population(run_dir, ["float32", "full_int8"], ["float32", "full_int8"],
                           dataset=dataset, encodings=("plain", "sparse"))
  population.evaluate_population(run_dir, dataset=dataset, check_keras=False)
  return run_dir


VARIANTS = ["dense", "full_int8", "prune_0.9", "prune_0.9+full_int8"]


def _choose(run_dir, **kwargs):
  return encodings.choose(run_dir, VARIANTS, "test", repeats=5, **kwargs)


def test_auto_ships_the_sparse_float32_twin_and_records_why(run):
  doc = _choose(run, max_latency_ratio=20.0)
  e = doc["variants"]["prune_0.9"]
  assert e["encoding"] == "sparse" and e["twin_equal"] and e["runtime"] == "xnnpack"
  sizes = e["size_bytes"]
  # 90% of the kernel weights are zeros: the sparse file is well under half the plain one,
  # and the shipped size is recorded relative to the dense float32 file of member 0.
  assert sizes["sparse"]["raw"] < 0.5 * sizes["plain"]["raw"]
  dense = doc["variants"]["dense"]["size_bytes"]["plain"]["raw"]
  assert e["size_ratio_to_dense_float32"] == pytest.approx(sizes["sparse"]["raw"] / dense)
  assert set(e["latency_s"]) == {"plain", "sparse"}
  assert set(e["latency_s"]["sparse"]) == {"batch_1", "batch_64"}
  assert e["latency_ratio"] == pytest.approx(max(e["sparse_latency_ratio"].values()))
  # A dense model's "sparse" twin saves nothing: plain is shipped, with the reason.
  d = doc["variants"]["dense"]
  assert d["encoding"] == "plain" and "sparse file" in d["reason"]
  assert d["latency_ratio"] == 1.0 and d["size_ratio_to_dense_float32"] == 1.0
  with open(encodings.path(run)) as f:
    assert json.load(f) == doc


def test_int8_sparse_runs_on_builtin_kernels_and_is_never_shipped_silently(run):
  doc = _choose(run, max_latency_ratio=20.0)
  e = doc["variants"]["prune_0.9+full_int8"]
  # XNNPACK refuses sparse int8 (issue #10): the sparse file was timed on the built-in kernels.
  assert e["sparse_runtime"] == "builtin"
  # Whatever the choice, it is backed by the twin check and the bound, with a one-line reason
  # (the built-in kernels ran this tiny model 3x-100x slower than XNNPACK, depending on load).
  assert e["reason"] and "\n" not in e["reason"]
  if e["encoding"] == "sparse":
    assert e["twin_equal"] and e["latency_ratio"] <= 20.0
  else:
    assert e["reason"].startswith(("sparse file disagrees", "sparse file is not smaller",
                                   "sparse file saves under", "sparse file is "))
    assert e["latency_ratio"] == 1.0


def test_plain_when_sparse_is_slower_than_the_bound(run):
  doc = _choose(run, max_latency_ratio=0.01)
  e = doc["variants"]["prune_0.9"]
  assert e["encoding"] == "plain" and "slower than plain (max 0.01x)" in e["reason"]
  assert e["latency_ratio"] == 1.0 and e["runtime"] == "xnnpack"


def test_plain_mode_times_only_plain_files(run):
  doc = _choose(run, mode="plain")
  assert {e["encoding"] for e in doc["variants"].values()} == {"plain"}
  assert all(set(e["latency_s"]) == {"plain"} for e in doc["variants"].values())


def test_bad_options_and_missing_inputs(run, tmp_path):
  with pytest.raises(deploy.DeployError, match="unknown deploy encoding"):
    _choose(run, mode="smallest")
  with pytest.raises(ValueError, match="agreement"):
    encodings.choose(run, VARIANTS, "train")
  with pytest.raises(ValueError, match="no export of variant prune_0.5"):
    encodings.choose(run, ["prune_0.5"], "test")


def test_bundle_and_report_carry_the_choice(run, tmp_path):
  doc = _choose(run, max_latency_ratio=20.0)
  summary = {"top1": 0.9, "top1_change": 0.0}
  report = {"dataset": {"name": "synthetic", "eval_split": "test"},
            "variants": {v: dict(summary) for v in VARIANTS},
            "inputs": {v: {"test": {"members": [0]}} for v in VARIANTS}}
  manifest = deploy.write_bundle(run, str(tmp_path), report, deploy.Gates(),
                                 encodings=doc["variants"])
  entry = next(e for e in manifest["files"] if e["variant"] == "prune_0.9")
  assert entry["encoding"] == "sparse" and entry["runtime"] == "xnnpack"
  assert entry["size_ratio_to_dense_float32"] == pytest.approx(
      doc["variants"]["prune_0.9"]["size_ratio_to_dense_float32"])
  assert entry["latency_ratio_to_plain"] == doc["variants"]["prune_0.9"]["latency_ratio"]
  assert os.path.getsize(os.path.join(tmp_path, "deploy", entry["file"])) == (
      entry["size_bytes"]["raw"])
  table = deployment.table(deployment.load(run), report["variants"])
  assert list(table.variant) == VARIANTS
  row = table[table.variant == "prune_0.9"].iloc[0]
  assert row.encoding == "sparse" and row.sparse_bytes < row.plain_bytes
  assert np.isfinite(row.sparse_ms_b64) and row.sparse_ms_b64 > 0
