"""Repair only where it helps (tf_forget/report/repair_report.py): a full int8 file
that forgot nothing significant gets no repair (one line says so), a repair that breaks no
fewer examples and loses no less on the worst class is "no gain" in the repair table and the
verdict and never recommended, and ops are named so that two of one type differ.

Planted on `fake_run.make_user_run` (K = 1; `full_int8` breaks 2 clean examples): a layer
analysis of full_int8 with two CONV_2D ops, and two repaired files — `full_int8~float1`
predicting exactly what full_int8 predicts (no gain) and `full_int8~float2` predicting what
dense predicts (2 broken → 0). McNemar p-values by hand: 2 · 0.5^m for m broken, none fixed.
"""

import json
import os

import numpy as np
import pytest

from tests.report import fake_run
from tf_forget.artifacts import layers_json
from tf_forget.artifacts import layout
from tf_forget.artifacts import names
from tf_forget.artifacts import predictions
from tf_forget.artifacts import tflite_json
from tf_forget.report import collect
from tf_forget.report import repair_report
from tf_forget.report import write
from tf_forget.stats import paired

CONV_1 = "sequential/conv2d/Relu;sequential/conv2d/BiasAdd;sequential/conv2d/Conv2D"
CONV_2 = "sequential/conv2d_1/Relu;sequential/conv2d_1/BiasAdd"
DENSE = "StatefulPartitionedCall:0"


def _write_json(path, doc):
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, "w") as f:
    json.dump(doc, f)


def _row(op, index, tensor, rank, nmse):
  return {
    "op_name": op,
    "op_index": index,
    "tensor_name": tensor,
    "rank": rank,
    "nmse_forgotten": nmse,
    "nmse_stable": nmse / 10,
    "excess": nmse * 0.9,
    "snr_db_forgotten": 20.0,
    "snr_db_stable": 30.0,
  }


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
  run_dir = str(tmp_path_factory.mktemp("repairs"))
  ids, labels, broken, _ = fake_run.make_user_run(run_dir, save_logits=True)
  dense = fake_run.noisy(labels, 0, 10)
  int8 = dense.copy()
  int8[broken] = (labels[broken] + 2) % 10
  for variant, pred in (("full_int8~float1", int8), ("full_int8~float2", dense)):
    predictions.write(
      predictions.path(run_dir, variant, 0, "test"),
      ids,
      labels,
      fake_run.scores_for(pred, 10),
      {"variant": variant, "member_variant": "dense", "k": 0, "dataset": "digits", "split": "test"},
    )
  ranking = [
    _row("CONV_2D", 1, CONV_2, 1, 0.03),
    _row("FULLY_CONNECTED", 2, DENSE, 2, 0.02),
    _row("CONV_2D", 0, CONV_1, 3, 0.01),
  ]
  worst = int(labels[broken[0]])
  _write_json(
    layout.layers(run_dir, "dense", 0),
    {
      "schema": layers_json.SCHEMA,
      "member_variant": "dense",
      "k": 0,
      "format": "full_int8",
      "basis": "forgotten",
      "worst_class": worst,
      "flips": {"broken": 2, "fixed": 0, "changed": 0},
      "rows": sorted(ranking, key=lambda r: r["op_index"]),
      "ranking": ranking,
    },
  )
  sizes = {
    "float32": 100000,
    "full_int8": 26000,
    "full_int8~float1": 60000,
    "full_int8~float2": 90000,
  }
  nodes = {"full_int8~float1": [CONV_2], "full_int8~float2": [CONV_2, DENSE]}
  for variant, size in sizes.items():
    doc = {"schema": tflite_json.SCHEMA, "size_bytes": {"raw": size}}
    if variant in nodes:
      doc["repair"] = {"float_nodes": nodes[variant], "ops": ["CONV_2D"]}
    _write_json(
      layout.tflite_paths(
        run_dir, names.parse_variant("dense" if variant == "float32" else variant), 0
      )[1],
      doc,
    )
  return run_dir, broken


def test_the_mcnemar_rule_of_a_file_worth_repairing():
  assert paired.forgot_significantly(2, 0) == (False, pytest.approx(0.5))
  assert paired.forgot_significantly(7, 5)[0] is False  # p = 0.77: nothing significant
  assert paired.forgot_significantly(10, 0) == (True, pytest.approx(2 * 0.5**10))
  assert paired.forgot_significantly(3, 0)[0] is False  # 3 broken: at most the small count


def test_ops_named_apart_and_gain_per_repair(planted):
  run_dir, _ = planted
  run = collect.load_run(run_dir, dataset_name="digits")
  tables, notes = repair_report.compute(run, repair_asked=True)
  ops = list(tables["layers"].op)
  assert ops == [
    "CONV_2D #2 (sequential/conv2d_1)",
    "FULLY_CONNECTED",
    "CONV_2D #1 (sequential/conv2d)",
  ]
  repair = tables["repair"].set_index("variant")
  assert repair.loc["full_int8~float1", "kept_ops"] == "CONV_2D #2 (sequential/conv2d_1)"
  assert not repair.loc["full_int8~float1", "gain"]
  assert repair.loc["full_int8~float1", "broken_repaired"] == 2
  assert (
    repair.loc["full_int8~float2", "gain"]
    and repair.loc["full_int8~float2", "broken_repaired"] == 0
  )
  assert list(repair_report.no_gain(tables)) == ["full_int8~float1"]
  # Repaired all the same (as --repair_always does): no line says it was not.
  assert repair_report.NOT_REPAIRED_KEY not in notes
  # Without the repaired files: full_int8 broke 2 examples and fixed none, p = 0.5, so no
  # repair was called for, and one line says so.
  bare = collect.load_run(run_dir, dataset_name="digits", variants=["dense", "full_int8"])
  _, notes = repair_report.compute(bare, repair_asked=True)
  (line,) = notes[repair_report.NOT_REPAIRED_KEY]
  assert line == (
    "No repair of full_int8: it forgot nothing significant against its float32 "
    "file (2 broken, 0 fixed of 500 test examples; exact McNemar p = 0.5), so "
    "no layer is kept in float."
  )
  one, two, skipped = repair_report.sentences(tables, [line])
  assert "no gain" in one and "not recommended" in one and "changes top-1" in one
  assert "no gain" not in two and "buys top-1" in two and skipped == line
  assert "flips vs float32 0.4% → 0.4%" in one  # 2 of 500, two significant digits


def test_the_verdict_never_recommends_a_repair_without_gain(planted):
  run_dir, _ = planted
  report = write.build_report(
    run_dir,
    {"repairs": ["float1", "float2"]},
    dataset_name="digits",
    variants=["dense", "full_int8", "full_int8~float1"],
  )
  frame = report.measures.tables["verdict"].set_index("variant")
  assert frame.loc["full_int8~float1", "verdict"] == "no gain"
  assert frame.loc["full_int8~float1", "reason"].startswith("no gain: broken examples 2 → 2")
  rec = report.json["recommendation"]
  assert rec["variant"] != "full_int8~float1"
  assert rec["repairs"][0].startswith("Repair full_int8~float1") and "no gain" in rec["repairs"][0]
  why = report.html[report.html.index('<section id="why">') :]
  assert "CONV_2D #2 (sequential/conv2d_1)" in why and "no gain" in why
  assert np.isnan(frame.loc["dense", "top1_low"])
