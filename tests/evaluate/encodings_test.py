"""The audit's per-variant encoding choice with real files: `tf_forget.evaluate.encodings`."""

import contextlib
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from tests.export import fake_run
from tf_forget.artifacts import encodings as encodings_file
from tf_forget.evaluate import deploy
from tf_forget.evaluate import encodings
from tf_forget.evaluate import latency
from tf_forget.evaluate import population_eval
from tf_forget.export import export
from tf_forget.policy import gates as gates_lib
from tf_forget.report import deployment


@pytest.fixture(scope="module")
def run(tmp_path_factory):
  run_dir = str(tmp_path_factory.mktemp("run"))
  model, dataset, _ = fake_run.trained_exports()
  fake_run.write_member(run_dir, "dense", 0, model)
  fake_run.write_member(run_dir, "prune_0.9", 0, fake_run.prune(model, dataset, 0.9))
  export.export_population(
    run_dir,
    ["float32", "full_int8"],
    ["float32", "full_int8"],
    dataset=dataset,
    encodings=("plain", "sparse"),
  )
  population_eval.evaluate_population(run_dir, dataset=dataset, check_keras=False)
  return run_dir


VARIANTS = ["dense", "full_int8", "prune_0.9", "prune_0.9+full_int8"]


def _choose(run_dir, **kwargs):
  return encodings.choose(run_dir, VARIANTS, "test", repeats=5, **kwargs)


def test_each_file_is_timed_against_the_float_reference_and_says_what_ran(run):
  """The shipped file's latency over the dense float32 file's, timed in the same rounds (the
  per-round ratios' median and interquartile range), its ops delegated to XNNPACK, and the
  targets that run it (tf_forget/evaluate/targets.py)."""
  doc = _choose(run, mode="plain")
  assert doc["variants"]["dense"]["latency_vs_reference"] == {}
  for name in ("full_int8", "prune_0.9"):
    e = doc["variants"][name]
    assert set(e["latency_vs_reference"]) == {"batch_1", "batch_64"}
    for ratio in e["latency_vs_reference"].values():
      assert 0 < ratio["low"] <= ratio["median"] <= ratio["high"] and ratio["rounds"] == 1
    d = e["delegation"]
    assert 0 < d["delegated_ops"] <= d["ops"] and sum(d["builtin_ops"].values()) == (
      d["ops"] - d["delegated_ops"]
    )
    assert e["targets"]["cpu"] == {"runs": True, "reason": ""}
  # The float32 pruned file: no integer-only accelerator runs it, and the reason says why.
  e = doc["variants"]["prune_0.9"]
  assert e["kind"] == "float32" and not e["targets"]["integer_only"]["runs"]
  assert "float" in e["targets"]["integer_only"]["reason"]


def test_auto_ships_the_sparse_float32_twin_and_records_why(run):
  doc = _choose(run, max_sparse_latency_ratio=20.0)
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
  # The ratio shipped is the median paired ratio at the batch size where the sparse file
  # fares worst (the highest low end of its interval), recorded with its interval.
  check = e["latency_check"]
  assert e["latency_ratio"] == check["median"]
  assert e["sparse_latency_ratio"][f"batch_{check['batch_size']}"] == check["median"]
  assert check["low"] == max(i["low"] for i in e["sparse_latency_interval"].values())
  assert check["low"] <= check["median"] <= check["high"]
  assert e["inputs"]["settings"]["max_sparse_latency_ratio"] == 20.0
  # A dense model's "sparse" twin saves nothing: plain is shipped, with the reason.
  d = doc["variants"]["dense"]
  assert d["encoding"] == "plain" and "sparse file" in d["reason"]
  assert d["latency_ratio"] == 1.0 and d["size_ratio_to_dense_float32"] == 1.0
  with open(encodings_file.path(run)) as f:
    assert json.load(f) == doc


def test_int8_sparse_runs_on_builtin_kernels_and_is_never_shipped_silently(run):
  doc = _choose(run, max_sparse_latency_ratio=20.0)
  e = doc["variants"]["prune_0.9+full_int8"]
  # XNNPACK refuses sparse int8: the sparse file was timed on the built-in kernels.
  assert e["sparse_runtime"] == "builtin"
  # Whatever the choice, it is backed by the twin check and the bound, with a one-line reason
  # (the built-in kernels ran this tiny model 3x-100x slower than XNNPACK, depending on load).
  assert e["reason"] and "\n" not in e["reason"]
  if e["encoding"] == "sparse":
    assert e["twin_equal"] and e["latency_ratio"] <= 20.0
  else:
    assert e["reason"].startswith(
      (
        "sparse file disagrees",
        "sparse file is not smaller",
        "sparse file saves under",
        "sparse file is ",
      )
    )
    assert e["latency_ratio"] == 1.0


def test_plain_when_sparse_is_slower_than_the_bound(run):
  doc = _choose(run, max_sparse_latency_ratio=0.01)
  e = doc["variants"]["prune_0.9"]
  assert e["encoding"] == "plain" and "slower than plain (" in e["reason"]
  assert e["reason"].endswith("max 0.01x)")
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
  doc = _choose(run, max_sparse_latency_ratio=20.0)
  summary = {"top1": 0.9, "top1_change": 0.0}
  report = {
    "dataset": {"name": "synthetic", "eval_split": "test"},
    "variants": {v: dict(summary) for v in VARIANTS},
    "inputs": {v: {"test": {"members": [0]}} for v in VARIANTS},
  }
  manifest = deploy.write_bundle(
    run, str(tmp_path), report, gates_lib.Gates(), encodings=doc["variants"]
  )
  entry = next(e for e in manifest["files"] if e["variant"] == "prune_0.9")
  assert entry["encoding"] == "sparse" and entry["runtime"] == "xnnpack"
  assert entry["size_ratio_to_dense_float32"] == pytest.approx(
    doc["variants"]["prune_0.9"]["size_ratio_to_dense_float32"]
  )
  assert entry["latency_ratio_to_plain"] == doc["variants"]["prune_0.9"]["latency_ratio"]
  assert (
    os.path.getsize(os.path.join(tmp_path, "deploy", entry["file"])) == (entry["size_bytes"]["raw"])
  )
  table = deployment.table(deployment.load(run), report["variants"])
  assert list(table.variant) == VARIANTS
  row = table[table.variant == "prune_0.9"].iloc[0]
  assert row.encoding == "sparse" and row.sparse_bytes < row.plain_bytes
  assert np.isfinite(row.sparse_ms_b64) and row.sparse_ms_b64 > 0


@contextlib.contextmanager
def _cpu_load(processes=2, seconds=120):
  """Bursty busy loops on the cores, as other engineers' jobs on a shared machine.

  Each process spins 1-50 ms, then sleeps 0-20 ms: the load under which one interpreter per
  file made the digits CNN's sparse twin 1.9x "slower" in 3 of 8 runs.
  """
  code = (
    "import random, time\nend = time.time() + %d\nwhile time.time() < end:\n"
    "  t = time.time() + random.uniform(0.001, 0.05)\n  while time.time() < t: pass\n"
    "  time.sleep(random.uniform(0, 0.02))\n" % seconds
  )
  procs = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(processes)]
  try:
    yield
  finally:
    for p in procs:
      p.kill()
      p.wait()


def _decision(run_dir, variant, **kwargs):
  """(encoding, latency_check, reason) of `variant` timed afresh."""
  e = encodings.choose(run_dir, [variant], "test", remeasure=True, **kwargs)["variants"][variant]
  return e["encoding"], e["latency_check"], e["reason"]


def test_five_fresh_measurements_give_the_same_decision(run):
  """The same twins re-timed five times (under bursty load) ship the same file.

  The float32 twin runs on XNNPACK as its plain file does (ratio ~1) and is judged at the
  default bound, 1.5x: the digits CNN's sparse twin, timed with one interpreter per file under
  such load, measured 1.9x "slower" in 3 of 8 runs.

  The int8 twin runs on the built-in kernels, and how much slower that is is not one number
  on these machines: under the load of a second test job its ratio interval at batch 64
  jumped between ~1x and ~40x from one re-timing to the next (e.g. 0.92 [0.74, 36.32],
  then 26.96 [9.78, 32.01]), and sat at 1.4x-2x at batch 1. A bound at half the low end of a
  first timing fails when that first timing is a slow one (bound 3.3x, later timings
  1.4x-1.9x): no bound inside that spread decides stably. What holds in every timing seen
  (lowest low end 0.71x): the sparse int8 twin is never measured twice as fast as its plain
  file, so at a bound of 0.5x it is shipped plain, with the reason's wording.
  """
  decisions = []
  with _cpu_load():
    for _ in range(5):
      float32 = _decision(run, "prune_0.9")
      int8 = _decision(run, "prune_0.9+full_int8", max_sparse_latency_ratio=0.5)
      decisions.append((float32[0], int8[0]))
      print(
        {
          v: f"{c['median']:.2f} [{c['low']:.2f}, {c['high']:.2f}] b{c['batch_size']}"
          for v, c in (("prune_0.9", float32[1]), ("prune_0.9+full_int8", int8[1]))
        }
      )
  assert decisions == [("sparse", "plain")] * 5, decisions
  assert "slower than plain (ratio interval" in int8[2]


@pytest.fixture()
def copied_run(run, tmp_path):
  out = str(tmp_path / "run")
  shutil.copytree(run, out)
  return out


def _no_timing(*args, **kwargs):
  raise AssertionError("latency.measure called for a recorded decision")


def test_recorded_decision_is_reused_without_timing(copied_run, monkeypatch):
  first = _choose(copied_run, max_sparse_latency_ratio=20.0)
  for e in first["variants"].values():
    assert len(e["inputs"]["plain_sha256"]) == 64 and len(e["inputs"]["sparse_sha256"]) == 64
  monkeypatch.setattr(latency, "measure", _no_timing)
  lines = []
  again = _choose(copied_run, max_sparse_latency_ratio=20.0, log=lines.append)
  assert again == first
  assert lines == [
    f"{v}: {first['variants'][v]['encoding']} ({first['variants'][v]['reason']}) [recorded]"
    for v in VARIANTS
  ]
  with open(encodings_file.path(copied_run)) as f:
    assert json.load(f) == first
  with pytest.raises(AssertionError, match="latency.measure called"):
    _choose(copied_run, max_sparse_latency_ratio=20.0, remeasure=True)


def test_changed_twin_or_settings_are_measured_again(copied_run, monkeypatch):
  _choose(copied_run, max_sparse_latency_ratio=20.0)
  timed = []
  real = latency.measure

  def counted(models, *args, **kwargs):
    timed.append(sorted(models))
    return real(models, *args, **kwargs)

  monkeypatch.setattr(latency, "measure", counted)
  # Another valid sparse file in place of prune_0.9's twin (as a re-export would write).
  twin = os.path.join(copied_run, "tflite", "prune_0.9", "0", "float32+sparse.tflite")
  shutil.copy(os.path.join(copied_run, "tflite", "dense", "0", "float32+sparse.tflite"), twin)
  lines = []
  doc = _choose(copied_run, max_sparse_latency_ratio=20.0, log=lines.append)
  # Only prune_0.9, its two files with the float reference in one interleaved measurement.
  assert timed == [["prune_0.9\tplain", "prune_0.9\tsparse", "reference"]]
  assert "redo prune_0.9 encoding: its sparse twin changed since it was timed" in lines
  assert doc["variants"]["prune_0.9"]["inputs"]["sparse_sha256"] == (
    encodings.hashing.file_sha256(twin, memo=False)
  )
  assert sum(line.endswith("[recorded]") for line in lines) == len(VARIANTS) - 1
  timed.clear()
  lines.clear()
  _choose(copied_run, max_sparse_latency_ratio=2.0, log=lines.append)
  # Every variant again, each file once (the dense file is the reference), in one measurement.
  assert len(timed) == 1 and "dense\tplain" not in timed[0] and "reference" in timed[0]
  assert {m.split("\t")[0] for m in timed[0]} == set(VARIANTS) - {"dense"} | {"reference", "dense"}
  assert ("redo dense encoding: settings changed (max_sparse_latency_ratio 20.0 -> 2.0)") in lines


def test_record_without_inputs_is_measured_again(copied_run, monkeypatch):
  """An encodings.json without `inputs` (as older versions wrote it) has its decisions redone."""
  doc = _choose(copied_run)
  for e in doc["variants"].values():
    del e["inputs"]
  with open(encodings_file.path(copied_run), "w") as f:
    json.dump(doc, f)
  lines = []
  _choose(copied_run, log=lines.append)
  assert "redo prune_0.9 encoding: no recorded inputs (written by an older version)" in lines
