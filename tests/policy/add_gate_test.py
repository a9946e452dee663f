"""The recipe of docs/architecture.md ("A gate") followed in a test: one more bound on `Gates`
and one `Gate` record in `GATES` — a bound on #PIE — and the audit has its flag, the report's
verdict fails the variant that exceeds it with the record's reason (report.json's `verdict`
table and the page), and a variant within it passes; `gates.check` refuses a record without its
bound in one line."""

import dataclasses
from typing import Optional

from absl import flags
import pytest

from tests.report import fake_run
from tf_forget.commands import audit_flags
from tf_forget.policy import gates
from tf_forget.report import write

PIE = gates.Gate(
  "max_pie_count",
  "integer",
  "Gate: max PIE examples (000 §2.3).",
  lambda measures: measures.get("pie_count"),
  "#PIE undefined",
  lambda count, bound, measures: f"{int(count)} PIE examples (max {bound})",
)
# `Gates` with the new bound (None: the gate is off).
PieGates = dataclasses.make_dataclass(
  "Gates", [("max_pie_count", Optional[int], None)], bases=(gates.Gates,), frozen=True
)


@pytest.fixture(name="with_pie")
def _with_pie(monkeypatch):
  monkeypatch.setattr(gates, "Gates", PieGates)
  monkeypatch.setattr(gates, "GATES", gates.GATES + (PIE,))


@pytest.fixture(name="run_dir", scope="module")
def _run_dir(tmp_path_factory):
  run_dir = str(tmp_path_factory.mktemp("pie_gate") / "run")
  fake_run.make_digits_run(run_dir, members=3, corrupted=False)
  return run_dir


def test_the_gate_table_matches_the_bounds():
  gates.check()
  with pytest.raises(gates.GateError, match=r"^gates \[.*'max_pie_count'\] do not match"):
    gates.check(gates.GATES + (PIE,))
  with pytest.raises(gates.GateError, match="kind 'text'"):
    gates.check(gates.GATES[:-1] + (dataclasses.replace(gates.GATES[-1], kind="text"),))


def test_the_gate_has_its_flag(with_pie):
  values = flags.FlagValues()
  assert "max_pie_count" in audit_flags.define(values)
  assert values["max_pie_count"].help == PIE.help and values["max_pie_count"].default is None


def test_the_verdict_gates_on_it(with_pie, run_dir):
  gates.check()
  report = write.build_report(run_dir, {"gates": {"max_pie_count": 3}}, dataset_name="digits")
  rows = {r["variant"]: r for r in report.json["tables"]["verdict"]}
  pie = report.json["variants"]["prune_0.9"]["pie_count"]
  assert pie > 3 and report.json["variants"]["full_int8"]["pie_count"] == 0
  assert rows["prune_0.9"]["gate"] == "fail"
  assert rows["prune_0.9"]["reasons"] == f"{pie} PIE examples (max 3)"
  assert rows["full_int8"]["gate"] == "pass"
  assert f"{pie} PIE examples (max 3)" in report.html
  # Off (no bound given), the gate is not checked.
  plain = write.build_report(run_dir, {"gates": {}}, dataset_name="digits")
  assert {r["variant"]: r["gate"] for r in plain.json["tables"]["verdict"]}["prune_0.9"] == "pass"


def test_a_measure_it_cannot_read_fails_the_variant(with_pie):
  passed, reasons = gates.verdict("prune_0.9", {"top1_change": 0.0}, PieGates(max_pie_count=1))
  assert not passed and reasons == ["gate max_pie_count could not be evaluated: #PIE undefined"]
