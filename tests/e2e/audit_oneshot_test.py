"""The audit with one-shot pruning after training: flags, a tiny run per algorithm.

The committed tiny dense population (`tiny_run`, 2 members) is pruned by MP, GP, UP and RP to
ratio 4 and fine-tuned; the one-shot members are exported, evaluated and reported like any member, and the
report pairs each with its parent.
"""

import glob
import hashlib
import json
import os

import pytest

from tests import audit_main
from tests import binary_main
from tests.e2e import tiny_run
from tf_forget.data.protocols import protocol_registry as protocols
from tf_forget.prune import gradient as prune_gradient
from tf_forget.prune import oneshot_schedule
from tf_forget.train import member_config
from tf_forget.train import presets

ALGORITHMS = ("mp", "gp", "up", "rp")


def _run_main(**flag_values):
  return binary_main.run_main(audit_main.main, "audit", **flag_values)


@pytest.mark.parametrize(
  "flag, value, message",
  [
    ("ratios", ["1"], "--ratios must be numbers > 1, got 1"),
    ("ratios", ["x"], "--ratios must be numbers > 1, got x"),
    ("algorithms", ["xx"], "--algorithms must be among mp, gp, up, rp, got 'xx'"),
  ],
)
def test_flag_validation_rejects_bad_values(tmp_path, flag, value, message):
  out = tmp_path / "out"
  code = _run_main(out=str(out), pruning=["oneshot"], **{flag: value})
  assert code == f"audit: error: {message}"
  assert not out.exists()


@pytest.mark.parametrize(
  "overrides, message",
  [
    ({"finetune": "1@0.1"}, "no one-shot variant asked for"),
    ({"pruning": ["oneshot"], "finetune": "1@x"}, "bad fine-tuning phase"),
    (
      {"pruning": ["oneshot"], "ratio_over": "all", "preset": "celeb_a_paper", "dataset": "nope"},
      "unknown data set",
    ),
  ],
)
def test_bad_oneshot_input_is_one_line_and_writes_nothing(tmp_path, overrides, message):
  overrides = dict({"preset": "tiny"}, **overrides)
  out = tmp_path / "out"
  code = _run_main(out=str(out), members=2, **overrides)
  assert isinstance(code, str) and code.startswith("audit: error:") and message in code
  assert "\n" not in code
  assert not out.exists()


def test_protocol_round_trips_to_a_worker():
  for name in protocols.TRAININGS:  # every training protocol has a one-shot schedule
    p = oneshot_schedule.get(name, exclude_classifier=True, phases="2@0.1,1@0.01")
    assert oneshot_schedule.OneshotSchedule.from_json(json.loads(json.dumps(p.to_json()))) == p
  with pytest.raises(oneshot_schedule.OneshotScheduleError, match="versions differ"):
    oneshot_schedule.OneshotSchedule.from_json(
      dict(oneshot_schedule.get("tiny").to_json(), extra=1)
    )


def test_plan_counts_the_fine_tunings(capsys):
  assert _run_main(plan=True, pruning=["oneshot"], ratios=["2", "10"]) == 0
  text = capsys.readouterr().out
  # 4 algorithms x 2 ratios x 5 members (digits' K) fine-tunings after 5 dense members.
  assert "5 members x" in text and "40 one-shot fine-tunings" in text


def _check_one_g_per_parent(out, k, dense_meta):
  """GP and UP members of parent k read its one g (docs/spec.md §6.2); MP and RP none; the g a
  worker wrote is byte-identical to the one computed here, in the test's process."""
  (g_file,) = glob.glob(str(out / "members" / "dense" / str(k) / "gradient" / "*.npz"))
  with open(g_file, "rb") as f:
    g_bytes = f.read()
  for a in ALGORITHMS:
    meta = json.loads((out / "members" / f"oneshot_{a}_r4" / str(k) / "metadata.json").read_text())
    if a in ("gp", "up"):
      assert meta["inputs"]["gradient"] == hashlib.sha256(g_bytes).hexdigest()
    else:
      assert meta["pruning"]["gradient"] is None and "gradient" not in meta["inputs"]
  run = json.loads((out / "run.json").read_text())
  parent = member_config.MemberConfig(
    dataset=run["dataset"],
    model=run["model"],
    variant="dense",
    k=k,
    preset=presets.Preset.from_json(dense_meta["preset"]),
    dataset_options=run["dataset_options"],
    model_options=run["model_options"],
    population_seed=run["population_seed"],
  )
  os.remove(g_file)
  assert prune_gradient.ensure(str(out), parent, oneshot_schedule.get("tiny")).path == g_file
  with open(g_file, "rb") as f:
    assert f.read() == g_bytes


def test_tiny_oneshot_audit_end_to_end(tmp_path, capsys):
  out = tmp_path / "run"
  tiny_run.copy_members(str(out), variants=("dense",))  # the parents: trained and converted
  args = dict(
    out=str(out),
    **dict(tiny_run.CONFIG, variants=["dense"]),
    pruning=["oneshot"],
    ratios=["4"],
    quantizations=[],
    corruptions=["none"],
    noise_levels=["none"],
    deploy_encoding="plain",
    executor="local",
    workers=2,
  )
  assert _run_main(**args) == 0
  tiny_run.assert_reused(str(out), variants=("dense",))
  report = json.loads((out / "report.json").read_text())
  variants = {"dense"} | {f"oneshot_{a}_r4" for a in ALGORITHMS}
  assert set(report["variants"]) == variants
  dense_meta = [
    json.loads((out / "members" / "dense" / str(k) / "metadata.json").read_text()) for k in range(2)
  ]
  for a in ALGORITHMS:
    for k in range(2):
      meta = json.loads(
        (out / "members" / f"oneshot_{a}_r4" / str(k) / "metadata.json").read_text()
      )
      assert meta["parent"]["k"] == k
      assert meta["parent"]["model_sha256"] == dense_meta[k]["model_sha256"]
      assert meta["pruning"]["compression"]["ratio"] == 4.0
      # The deployed file holds the pruned zeros (read from the flatbuffer at export).
      tfl = json.loads((out / "tflite" / f"oneshot_{a}_r4" / str(k) / "float32.json").read_text())
      assert tfl["sparsity"]["kernels"]["fraction"] >= 0.75 - 1e-4
  run_json = json.loads((out / "run.json").read_text())
  assert set(run_json["variants"]) == variants
  # Every one-shot variant's α pairs member k with its parent (same network before and after).
  rows = {r["variant"]: r for r in report["tables"]["recall_distortion"]}
  for a in ALGORITHMS:
    assert rows[f"oneshot_{a}_r4"]["members"] == 2
    assert rows[f"oneshot_{a}_r4"]["pairing"] == "parent"
  # 002's study table: one row per (algorithm, ratio), paired by parent.
  study = report["tables"]["oneshot_alpha"]
  assert sorted((r["algorithm"], r["ratio"]) for r in study) == sorted((a, 4.0) for a in ALGORITHMS)
  assert all(r["pairing"] == "parent" and r["members"] == 2 for r in study)
  assert "oneshot_algorithm_tests" in report["tables"]
  first_log = capsys.readouterr().out
  # The one-shot members were made by executor tasks (`eval.parallel.prune`), after one g task
  # per parent.
  assert "[prune] 8 tasks on local process pool" in first_log
  assert "[gradient] 2 tasks on local process pool" in first_log
  for k in range(2):
    _check_one_g_per_parent(out, k, dense_meta[k])
  # Re-running reuses every member (nothing pruned again).
  _run_main(**args)
  log = capsys.readouterr().out
  assert "8 (8 already finished)" in log
  assert "redo" not in log
  again = json.loads((out / "report.json").read_text())
  assert again["variants"] == report["variants"]
  assert os.path.exists(out / "report.html")
