"""Per-layer error of the full int8 files on the examples they forgot, and the repaired files
`full_int8~float<N>` (tf_forget/evaluate/layer_analysis.py), through the audit command.

A tiny digits audit (2 members, full int8, `--repair=float2 --repair_always`: its int8 files forget
too little to be repaired by default). The checks recompute what the artifacts claim from the
artifacts themselves: the forgotten examples are exactly those whose top-1 differs between the
member's float32 and full int8 predictions files; the repaired file keeps the two top-ranked layers
in float and its stored predictions are the interpreter's on the test split; a re-run reuses
everything, and a changed analysis redoes the repair.
"""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from tests.e2e import audit_binary
from tests.e2e import tiny_run
from tests.export import model_explorer_schema
from tf_forget.artifacts import layout
from tf_forget.artifacts import predictions
from tf_forget.data import registry
from tf_forget.stats import paired

ARGS = [  # the tiny population's dense members only (the later --variants wins)
  *tiny_run.FLAGS,
  "--variants=dense",
  "--quantizations=full_int8",
  "--pruned_quantizations=none",
  "--corruptions=none",
  "--noise_levels=none",
  "--deploy_encoding=plain",
  "--executor=inline",
]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
  out = tmp_path_factory.mktemp("repair") / "run"
  tiny_run.copy_members(str(out), variants=("dense",))  # tests/e2e/tiny_run.py
  # --repair_always: this tiny audit's int8 files forget too little to call for a repair;
  # the repair's mechanics are what this file tests.
  result = audit_binary.in_process([f"--out={out}", "--repair=float2", "--repair_always", *ARGS])
  assert result.returncode == 0, result.stderr[-3000:]
  tiny_run.assert_reused(out, variants=("dense",))
  return out, result


def _json(path):
  with open(path) as f:
    return json.load(f)


def _top1(out, variant, k):
  data = predictions.read(str(out / "predictions" / variant / str(k) / "test.npz"))
  return data["ids"], data["topk"][:, 0]


@pytest.mark.parametrize("k", [0, 1])
def test_the_forgotten_examples_are_the_files_flips(run, k):
  out, _ = run
  doc = _json(out / "layers" / "dense" / str(k) / "full_int8.json")
  ids, ref = _top1(out, "dense", k)
  _, cand = _top1(out, "full_int8", k)
  flipped = ids[ref != cand]
  assert doc["subsets"]["forgotten"]["count"] == len(flipped) == sum(doc["flips"].values())
  assert doc["subsets"]["forgotten"]["ids"] == [int(i) for i in flipped]
  assert doc["subsets"]["stable"]["count"] == min(1000, int((ref == cand).sum()))
  assert doc["basis"] == ("forgotten" if len(flipped) else "all")
  key = "nmse_forgotten" if len(flipped) else "nmse_stable"
  # A file that forgot is ranked by ablation first (the ablated ops, then the rest);
  # the error ranking is kept as nmse_rank.
  by_error = sorted(doc["ranking"], key=lambda r: r.get("nmse_rank", r["rank"]))
  errs = [r[key] for r in by_error if r[key] is not None]
  assert errs == sorted(errs, reverse=True)
  evidence = [r.get("evidence", "error statistic") for r in doc["ranking"]]
  assert evidence == sorted(evidence)  # "ablation" rows first
  significant = paired.forgot_significantly(doc["flips"]["broken"], doc["flips"]["fixed"])[0]
  assert ("ablation" in evidence) == significant
  assert [r["rank"] for r in doc["ranking"]] == list(range(1, len(doc["ranking"]) + 1))


def test_model_explorer_node_data_names_ops_of_the_int8_file(run):
  out, _ = run
  data = _json(out / "layers" / "dense" / "0" / "full_int8.model_explorer.json")
  interpreter = tf.lite.Interpreter(
    model_path=str(out / "tflite" / "dense" / "0" / "full_int8.tflite")
  )
  tensors = {t["name"] for t in interpreter.get_tensor_details()}
  assert data["results"] and set(data["results"]) <= tensors
  model_explorer_schema.load_graph_node_data(data)  # the package's GraphNodeData, strict
  assert all(set(v) == {"value"} for v in data["results"].values())
  assert [g["stop"] for g in data["gradient"]] == sorted(g["stop"] for g in data["gradient"])


def test_the_repaired_file_keeps_the_top_layers_in_float_and_is_evaluated(run):
  out, result = run
  doc = _json(out / "layers" / "dense" / "0" / "full_int8.json")
  meta = _json(out / "tflite" / "dense" / "0" / "full_int8~float2.json")
  # The two best-ranked layers that have a name and are not lossless (NMSE > 1e-9: RESHAPE or
  # pooling in int8 only round floats; keeping them in float would repair nothing).
  lossy = [
    r["tensor_name"]
    for r in doc["ranking"]
    if r["tensor_name"] and max(r["nmse_forgotten"] or 0, r["nmse_stable"] or 0) > 1e-9
  ]
  assert meta["repair"]["float_nodes"] == lossy[:2]
  sizes = {
    f: os.path.getsize(out / "tflite" / "dense" / "0" / f"{f}.tflite")
    for f in ("float32", "full_int8", "full_int8~float2")
  }
  assert sizes["full_int8"] < sizes["full_int8~float2"] < sizes["float32"]
  # The stored predictions are the interpreter's, here, on the test split.
  test = registry.get("digits").load("test")
  interpreter = tf.lite.Interpreter(
    model_path=str(out / "tflite" / "dense" / "0" / "full_int8~float2.tflite")
  )
  inp, outp = interpreter.get_input_details()[0], interpreter.get_output_details()[0]
  scale, zero = inp["quantization"]
  images = np.clip(np.round(test.images / scale + zero), -128, 127).astype(np.int8)
  interpreter.resize_tensor_input(inp["index"], images.shape)
  interpreter.allocate_tensors()
  interpreter.set_tensor(inp["index"], images)
  interpreter.invoke()
  ids, stored = _top1(out, "full_int8~float2", 0)
  np.testing.assert_array_equal(ids, test.ids)
  np.testing.assert_array_equal(stored, np.argmax(interpreter.get_tensor(outp["index"]), 1))
  report = _json(out / "report.json")
  assert "full_int8~float2" in report["variants"]
  assert "== 4/7 why and repair" in result.stdout


def test_the_report_shows_what_the_repair_bought_and_cost(run):
  """report.json's `repair` row, recomputed from the predictions and export files: means over
  the two members, each file against its member's float32 file."""
  out, _ = run
  report = _json(out / "report.json")
  (row,) = report["tables"]["repair"]
  want = {
    "flip_rate_int8": [],
    "flip_rate_repaired": [],
    "broken_int8": [],
    "broken_repaired": [],
    "size_vs_int8": [],
  }
  for k in (0, 1):
    labels = predictions.read(str(out / "predictions" / "dense" / str(k) / "test.npz"))["labels"]
    _, ref = _top1(out, "dense", k)
    _, int8 = _top1(out, "full_int8", k)
    _, fixed = _top1(out, "full_int8~float2", k)
    want["flip_rate_int8"].append(np.mean(int8 != ref))
    want["flip_rate_repaired"].append(np.mean(fixed != ref))
    want["broken_int8"].append(np.sum((ref == labels) & (int8 != labels)))
    want["broken_repaired"].append(np.sum((ref == labels) & (fixed != labels)))
    sizes = [
      _json(out / "tflite" / "dense" / str(k) / f"{f}.json")["size_bytes"]["raw"]
      for f in ("full_int8~float2", "full_int8")
    ]
    want["size_vs_int8"].append(sizes[0] / sizes[1])
  for key, values in want.items():
    assert row[key] == pytest.approx(float(np.mean(values)), abs=1e-12), key
  assert row["variant"] == "full_int8~float2" and row["layers"] == 2 and row["members"] == 2
  kept = {r["tensor_name"] for r in report["tables"]["layers"] if r["kept"]}
  assert kept == set(
    _json(out / "tflite" / "dense" / "0" / "full_int8~float2.json")["repair"]["float_nodes"]
  ) | set(_json(out / "tflite" / "dense" / "1" / "full_int8~float2.json")["repair"]["float_nodes"])
  html = (out / "report.html").read_text()
  assert "1d. Why a full int8 file forgot" in html


def test_a_rerun_reuses_and_a_changed_analysis_redoes_the_repair(run):
  out, _ = run
  os.remove(layout.finished_file(str(out)))  # the stages' own reuse: no finished-run record
  again = audit_binary.in_process([f"--out={out}", "--repair=float2", "--repair_always", *ARGS])
  assert again.returncode == 0, again.stderr[-3000:]
  assert "2 of 2 layer analyses already current" in again.stdout
  assert "2 of 2 repaired files already made" in again.stdout
  os.remove(out / "layers" / "dense" / "1" / "full_int8.json")
  third = audit_binary.in_process([f"--out={out}", "--repair=float2", "--repair_always", *ARGS])
  assert third.returncode == 0, third.stderr[-3000:]
  assert "1 of 2 layer analyses already current" in third.stdout
  # The same analysis is made again (same inputs, deterministic): the repair stays current.
  assert "2 of 2 repaired files already made" in third.stdout


def test_several_repairs_are_made_and_the_verdict_ships_the_smallest_that_passes(run):
  # --repair=float2,float1 on the same run: full_int8~float2 is reused, full_int8~float1 made; both
  # are reported side by side, float1 keeps the first of float2's layers.
  out, _ = run
  result = audit_binary.in_process(
    [f"--out={out}", "--repair=float2,float1", "--repair_always", *ARGS]
  )
  assert result.returncode == 0, result.stderr[-3000:]
  assert "2 of 4 repaired files already made" in result.stdout
  report = _json(out / "report.json")
  assert [r["variant"] for r in report["tables"]["repair"]] == [
    "full_int8~float1",
    "full_int8~float2",
  ]
  assert report["config"]["repair"]["repairs"] == ["float1", "float2"]
  for k in (0, 1):
    one, two = (
      _json(out / "tflite" / "dense" / str(k) / f"full_int8~float{n}.json")["repair"]["float_nodes"]
      for n in (1, 2)
    )
    assert one == two[:1]
  verdict = {r["variant"]: r for r in report["tables"]["verdict"]}
  assert {"full_int8~float1", "full_int8~float2"} <= set(verdict)
  passing = [r for v, r in verdict.items() if v != "dense" and r["gate"] == "pass"]
  if passing:  # the smallest passing file (sizes within 1% go to the higher top-1)
    smallest = min(r["size_vs_dense"] for r in passing)
    assert verdict[report["recommendation"]["variant"]]["size_vs_dense"] <= 1.01 * smallest


def test_repair_without_a_full_int8_file_is_one_line(tmp_path):
  args = [a for a in ARGS if not a.startswith("--quantizations")]
  result = audit_binary.in_process(
    [f"--out={tmp_path / 'run'}", "--repair=float2", "--quantizations=dynamic_int8", *args]
  )
  lines = result.stderr.strip().splitlines()
  assert result.returncode == 1 and len(lines) == 1, result.stderr[-2000:]
  assert "--repair repairs full int8 files" in lines[0]
  assert not (tmp_path / "run").exists()
  for bad in ("x", "float1,-2", "float100", "2"):
    result = audit_binary.in_process([f"--out={tmp_path / 'run'}", f"--repair={bad}", *ARGS])
    lines = result.stderr.strip().splitlines()
    assert result.returncode != 0 and len(lines) == 1, result.stderr[-2000:]
    assert "--repair must be repairs (float<N>" in lines[0]
    assert not (tmp_path / "run").exists()
