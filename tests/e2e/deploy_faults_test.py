"""Gates that cannot be evaluated fail, and the deployment bundle is swapped whole.

* `Gates` refuses bounds that are not finite numbers >= 0 (one-line `GateError`).
* A gate whose measure is missing or undefined (no protected attributes for the subgroup gate,
  a NaN top-1 change) fails the variant with a reason saying so, never passes.
* `manifest.json` is strict JSON (RFC 8259): NaN and infinities are written as null.
* `write_bundle` swaps the new bundle in by renames: a failed rename leaves the previous bundle
  byte for byte, an old bundle that cannot be removed is one warning line (the new one stands),
  and what a killed swap left is restored at the next run.
"""

import errno
import json
import os
import shutil

import pytest

from tests import files
from tests.export import fake_run
from tf_forget.artifacts import errors
from tf_forget.evaluate import deploy
from tf_forget.export import export_state
from tf_forget.policy import gates as gates_lib

NAN, INF = float("nan"), float("inf")
FIELDS = (
  "max_accuracy_drop",
  "max_subgroup_fnr_increase",
  "max_significant_classes",
  "max_flip_rate",
  "max_kl",
)


@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize("value", [NAN, INF, -INF, -0.01, -1, "0.1", True])
def test_gates_refuse_bounds_that_are_not_finite_and_non_negative(field, value):
  with pytest.raises(gates_lib.GateError, match=f"gate {field} must be a finite number >= 0"):
    gates_lib.Gates(**{field: value})
  with pytest.raises(errors.Error) as e:
    gates_lib.Gates.from_json({field: value})
  assert "\n" not in str(e.value)
  assert gates_lib.Gates(**{field: 0}).any()  # zero is a bound


def _summary(**overrides):
  """A report.json variant summary of a data set without protected attributes (digits)."""
  return dict(
    {"top1": 0.9, "top1_change": -0.001, "significant_classes": 0, "worst_subgroup": None},
    **overrides,
  )


@pytest.mark.parametrize(
  "gates, summary, reason",
  [
    (
      {"max_subgroup_fnr_increase": 0.05},
      _summary(),
      "gate max_subgroup_fnr_increase could not be evaluated: no subgroup FNR change "
      "(no protected attributes, or undefined)",
    ),
    (
      {"max_subgroup_fnr_increase": 0.05},
      _summary(worst_subgroup={"fnr": {"subgroup": "MY", "increase": NAN}}),
      "gate max_subgroup_fnr_increase could not be evaluated",
    ),
    (
      {"max_accuracy_drop": 0.01},
      _summary(top1_change=NAN),
      "gate max_accuracy_drop could not be evaluated: top-1 change undefined",
    ),
    (
      {"max_accuracy_drop": 0.01},
      _summary(top1_change=None),  # null in report.json
      "gate max_accuracy_drop could not be evaluated",
    ),
    ({"max_accuracy_drop": 0.01}, {"top1": 0.9}, "gate max_accuracy_drop could not be evaluated"),
    (
      {"max_significant_classes": 2},
      _summary(significant_classes=NAN),
      "gate max_significant_classes could not be evaluated: significant classes undefined",
    ),
    (
      {"max_flip_rate": 0.01},
      _summary(),  # no `divergence` row: no saved logits
      "gate max_flip_rate could not be evaluated: no output divergence",
    ),
    ({"max_kl": 0.01}, _summary(kl_mean=NAN), "gate max_kl could not be evaluated"),
  ],
)
def test_a_gate_that_cannot_be_evaluated_fails(gates, summary, reason):
  passed, reasons = gates_lib.verdict("prune_0.9", summary, gates_lib.Gates(**gates))
  assert not passed and len(reasons) == 1 and reasons[0].startswith(reason), reasons
  # Without that gate the same summary passes, and the baseline is never gated.
  assert gates_lib.verdict("prune_0.9", summary, gates_lib.Gates()) == (True, [])
  assert gates_lib.verdict("dense", summary, gates_lib.Gates(**gates)) == (True, [])


@pytest.fixture(scope="module")
def run(tmp_path_factory):
  return fake_run.pruned_twins_run(str(tmp_path_factory.mktemp("run")))


def _report(top1_change=-0.001, variants=("dense", "prune_0.9")):
  summary = _summary(pie_count=0)
  return {
    "dataset": {"name": "synthetic", "eval_split": "test"},
    "variants": {
      v: summary if v == "dense" else dict(summary, top1_change=top1_change) for v in variants
    },
    "inputs": {v: {"test": {"members": [0]}} for v in variants},
  }


SPARSE = {
  "prune_0.9": {"encoding": "sparse", "reason": "r", "runtime": "builtin", "latency_ratio": 1.0}
}


def _refuse(constant):
  raise ValueError(f"manifest.json is not strict JSON: {constant}")


def test_manifest_is_strict_json_and_fails_what_it_cannot_gate(run, tmp_path):
  choice = {
    "prune_0.9": {
      "encoding": "plain",
      "reason": "latency not measured",
      "runtime": "builtin",
      "latency_ratio": INF,
    }
  }
  deploy.write_bundle(
    run,
    str(tmp_path),
    _report(top1_change=NAN),
    gates_lib.Gates(max_accuracy_drop=0.01),
    encodings=choice,
  )
  with open(tmp_path / "deploy" / "manifest.json") as f:
    manifest = json.loads(f.read(), parse_constant=_refuse)
  entry = next(e for e in manifest["files"] if e["variant"] == "prune_0.9")
  assert entry["top1_change_vs_dense"] is None and entry["latency_ratio_to_plain"] is None
  assert entry["encoding_choice"]["latency_ratio"] is None
  assert not entry["gate"]["passed"] and "could not be evaluated" in entry["gate"]["reasons"][0]
  assert manifest["failed_variants"] == ["prune_0.9"]


# The bundle and the record of what it put in place (a user's file in deploy/ is refused, never
# deleted); no staging or aside directory is left.
BUNDLE_ENTRIES = [".tf_forget.deploy.files.json", "deploy"]


def test_a_failed_swap_keeps_the_previous_bundle(run, tmp_path, monkeypatch):
  out = str(tmp_path)
  deploy.write_bundle(run, out, _report(), gates_lib.Gates())
  before = files.snapshot(out)
  # The new bundle moving in fails once.
  failed = files.fail_once_renaming_to(monkeypatch, os.path.join(out, "deploy"))
  with pytest.raises(errors.WriteError, match="Input/output error") as e:
    deploy.write_bundle(run, out, _report(), gates_lib.Gates(), encodings=SPARSE)
  assert failed and "\n" not in str(e.value)
  assert files.snapshot(out) == before and sorted(os.listdir(out)) == BUNDLE_ENTRIES


def test_an_old_bundle_that_cannot_be_removed_is_one_warning(run, tmp_path, monkeypatch):
  out = str(tmp_path)
  deploy.write_bundle(run, out, _report(), gates_lib.Gates())
  real = shutil.rmtree

  def immutable(path, *args, **kwargs):  # as `chattr +i` on a file of the old bundle
    name = os.path.basename(os.fspath(path))
    if name == "deploy" or name.startswith("deploy.old-"):
      raise PermissionError(errno.EPERM, "Operation not permitted", os.fspath(path))
    return real(path, *args, **kwargs)

  monkeypatch.setattr(shutil, "rmtree", immutable)
  lines = []
  manifest = deploy.write_bundle(
    run, out, _report(), gates_lib.Gates(), encodings=SPARSE, log=lines.append
  )
  assert len(lines) == 1 and lines[0].startswith("warning: could not remove ")
  assert "deploy.old-" in lines[0] and "Operation not permitted" in lines[0]
  _check_bundle(out, manifest)  # the new bundle stands
  monkeypatch.setattr(shutil, "rmtree", real)
  lines.clear()
  deploy.write_bundle(run, out, _report(), gates_lib.Gates(), encodings=SPARSE, log=lines.append)
  assert lines == [] and sorted(os.listdir(out)) == BUNDLE_ENTRIES  # the leftover is gone


def _check_bundle(out, manifest):
  """The bundle on disk is exactly the files its manifest names, with their sha256."""
  with open(os.path.join(out, "deploy", "manifest.json")) as f:
    assert json.load(f) == manifest
  shipped = files.snapshot(os.path.join(out, "deploy"))
  assert sorted(shipped) == sorted(["manifest.json"] + [e["file"] for e in manifest["files"]])
  for e in manifest["files"]:
    assert export_state.sha256(shipped[e["file"]]) == e["sha256"]


def test_a_swap_killed_between_its_renames_is_restored(run, tmp_path):
  out = str(tmp_path)
  deploy.write_bundle(run, out, _report(), gates_lib.Gates())
  before = files.snapshot(out)
  # What a kill between the two renames leaves: deploy/ aside, the new bundle still staged.
  os.makedirs(os.path.join(out, "deploy.old-1-dead"))
  os.rename(os.path.join(out, "deploy"), os.path.join(out, "deploy.old-1-dead", "deploy"))
  os.makedirs(os.path.join(out, "deploy.tmp-1-dead", "deploy", "dense"))
  with open(os.path.join(out, "deploy.tmp-1-dead", "deploy", "manifest.json"), "w") as f:
    f.write("{}")
  # The next run is restored before it builds; its build fails (a variant never exported).
  with pytest.raises(errors.ReadError):
    deploy.write_bundle(run, out, _report(variants=("dense", "prune_0.5")), gates_lib.Gates())
  assert files.snapshot(out) == before and sorted(os.listdir(out)) == BUNDLE_ENTRIES
  manifest = deploy.write_bundle(run, out, _report(), gates_lib.Gates(), encodings=SPARSE)
  _check_bundle(out, manifest)
  assert sorted(os.listdir(out)) == BUNDLE_ENTRIES
