"""The audit binary: flag validation, bad input, a tiny end-to-end run, bundle and gates."""

import json

import pytest

from tests import audit_main
from tests import binary_main
from tests.e2e import tiny_run
from tf_forget.policy import gates as gates_lib


def _run_main(**flag_values):
  return binary_main.run_main(audit_main.main, "audit", **flag_values)


@pytest.mark.parametrize(
  "flag, value, message",
  [
    ("sparsities", ["1.5"], "--sparsities must be numbers in (0, 1), got 1.5"),
    ("sparsities", ["0"], "--sparsities must be numbers in (0, 1), got 0"),
    ("members", 1, "--members must be an integer >= 2, got 1"),
    ("severities", ["6"], "--severities must be integers 1-5, got [6]"),
    ("noise_levels", ["0.2", "0.1"], "--noise_levels must be ascending numbers >= 0"),
    ("noise_levels", ["-0.1"], "--noise_levels must be ascending numbers >= 0, got [-0.1]"),
    ("noise_levels", ["x"], "--noise_levels must be 'none' or ascending numbers >= 0, got x"),
    ("noise_draws", 0, "--noise_draws must be an integer >= 1, got 0"),
  ],
)
def test_flag_validation_rejects_bad_values(tmp_path, flag, value, message):
  """One line naming the flag, before anything is written (`tf_forget.config.checks`)."""
  out = tmp_path / "out"
  code = _run_main(out=str(out), **{flag: value})
  assert isinstance(code, str) and code.startswith(f"audit: error: {message}"), code
  assert not out.exists()


@pytest.mark.parametrize(
  "overrides, message",
  [
    ({"dataset": "nope"}, "unknown data set 'nope'"),
    ({"quantizations": ["int4"]}, "int4"),
    ({"corruptions": ["rain"]}, "rain"),
    ({"dataset": "cifar10", "data_dir": "/nonexistent"}, "not prepared"),
  ],
)
def test_bad_input_is_one_line_non_zero_and_writes_nothing(tmp_path, overrides, message):
  out = tmp_path / "out"
  code = _run_main(out=str(out), **overrides)
  assert isinstance(code, str) and code.startswith("audit: error:") and message in code
  assert "\n" not in code
  assert not out.exists()


def test_unwritable_out_is_one_line_error(tmp_path):
  blocker = tmp_path / "file"
  blocker.write_text("not a directory")
  code = _run_main(out=str(blocker / "run"), preset="tiny", members=2)
  assert isinstance(code, str) and code.startswith("audit: error:")
  assert "\n" not in code and blocker.read_text() == "not a directory"


def test_gate_verdicts():
  gates = gates_lib.Gates(
    max_accuracy_drop=0.01, max_subgroup_fnr_increase=0.05, max_significant_classes=2
  )
  ok, reasons = gates_lib.verdict(
    "prune_0.9",
    {
      "top1_change": -0.005,
      "significant_classes": 2,
      "worst_subgroup": {"fnr": {"increase": 0.05}},
    },
    gates,
  )
  assert ok and not reasons
  ok, reasons = gates_lib.verdict(
    "prune_0.9",
    {
      "top1_change": -0.02,
      "significant_classes": 3,
      "worst_subgroup": {"fnr": {"subgroup": "MY", "increase": 0.2}},
    },
    gates,
  )
  assert not ok and len(reasons) == 3
  assert any("MY" in r for r in reasons)
  # The baseline is never gated; a gate whose measure is undefined (NaN) or missing cannot be
  # evaluated and fails (tests/e2e/deploy_faults_test.py).
  assert gates_lib.verdict("dense", {"top1_change": -1.0}, gates)[0]
  ok, reasons = gates_lib.verdict(
    "float16", {"top1_change": float("nan"), "significant_classes": float("nan")}, gates
  )
  assert not ok and len(reasons) == 3 and all("could not be evaluated" in r for r in reasons)


def test_tiny_audit_end_to_end(tmp_path):
  out = tmp_path / "run"
  tiny_run.copy_members(str(out))  # the committed tiny population (tests/e2e/tiny_run.py)
  code = _run_main(
    out=str(out),
    **tiny_run.CONFIG,
    quantizations=["full_int8"],
    pruned_quantizations=["full_int8"],
    corruptions=["gaussian_noise"],
    severities=["3"],
    max_accuracy_drop=0.0,
    noise_levels=["0", "0.5"],
    noise_draws=2,
    noise_examples=50,
  )
  report = json.loads((out / "report.json").read_text())
  manifest = json.loads((out / "deploy" / "manifest.json").read_text())
  # Pruned members are exported in the formats asked for (combinations are opt-in,
  # docs/spec.md §1.1); their sparse-encoded twins are checked and timed, not report variants.
  variants = {"dense", "prune_0.5", "full_int8", "prune_0.5+full_int8"}
  assert set(report["variants"]) == variants
  assert (out / "report.html").exists() and (out / "tables").is_dir()
  assert (out / "tflite" / "prune_0.5" / "1" / "full_int8+sparse.tflite").exists()
  assert {e["variant"] for e in manifest["files"]} == variants
  for entry in manifest["files"]:
    assert (out / "deploy" / entry["file"]).stat().st_size == entry["size_bytes"]["raw"]
    assert entry["runtime"] in ("xnnpack", "builtin")
    assert entry["encoding_choice"]["reason"] and entry["latency_ratio_to_plain"] > 0
    assert entry["encoding"] == entry["encoding_choice"]["encoding"]
  pruned = next(e for e in manifest["files"] if e["variant"] == "prune_0.5")
  assert abs(pruned["sparsity"] - 0.5) < 1e-3
  dense = next(e for e in manifest["files"] if e["variant"] == "dense")
  assert dense["size_ratio_to_dense_float32"] == 1.0 and dense["encoding"] == "plain"
  assert pruned["size_ratio_to_dense_float32"] == pytest.approx(
    pruned["size_bytes"]["raw"] / dense["size_bytes"]["raw"]
  )
  assert {r["variant"] for r in report["tables"]["deployment"]} == variants
  assert report["settings"]["deployment"]["mode"] == "auto"
  # The gate (no accuracy drop allowed) fails exactly the variants whose mean top-1 dropped,
  # and the exit status says so.
  dropped = {v for v, s in report["variants"].items() if v != "dense" and s["top1_change"] < 0}
  assert set(manifest["failed_variants"]) == dropped
  assert code == (audit_main.GATE_FAILED if dropped else 0)
  # Robustness on the corrupted split came from the TFLite files.
  assert (out / "predictions" / "prune_0.5" / "0" / "gaussian_noise@3.npz").exists()
  assert "robustness" in report["tables"]
  # l-inf noise (003 §4.1) was run on every file with the flags' protocol.
  assert report["settings"]["noise"] == {"eps": [0.0, 0.5], "draws": 2, "examples": 50, "seed": 0}
  acc = report["tables"]["noise_accuracy"]
  assert {(r["variant"], r["eps"]) for r in acc} == {(v, e) for v in variants for e in (0.0, 0.5)}
  assert {r["variant"] for r in report["tables"]["noise_similarity"]} == (variants - {"dense"}) | {
    "dense (independent)"
  }
  assert (out / "noise" / "full_int8" / "1" / "linf.npz").exists()
  # Re-running reuses everything and gives the same report numbers.
  tiny_run.assert_reused(out)
  _run_main(
    out=str(out),
    **tiny_run.CONFIG,
    quantizations=["full_int8"],
    corruptions=["gaussian_noise"],
    severities=["3"],
    max_accuracy_drop=0.0,
    noise_levels=["0", "0.5"],
    noise_draws=2,
    noise_examples=50,
  )
  again = json.loads((out / "report.json").read_text())
  assert again["variants"] == report["variants"]
